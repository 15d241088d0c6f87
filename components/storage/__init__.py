"""File access for local paths and buckets (gs://, s3://), and the object stores' set-up."""
