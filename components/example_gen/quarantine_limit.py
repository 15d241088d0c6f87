"""The share of input records a conversion may quarantine before it fails.

Light to import: the command line shows the default before TFX is imported.
"""

DEFAULT_MAX_BAD_FRACTION = 0.01
