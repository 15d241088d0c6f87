"""TFRecord files read back: records, counts and the feature spec they hold."""
