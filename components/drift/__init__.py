"""DriftCheck: a span's statistics against the previous span's, on common bins, with TFDV."""
