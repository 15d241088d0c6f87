"""DriftCheck's default thresholds, where the schema sets none (no TensorFlow imported here).

Measured on common bins (``common_bins``), two samples of one distribution:
Jensen-Shannon 0.0013 at 100,000 rows and 0.014 at 400; L-infinity 0.003
and 0.068. A mean moved by 0.3 standard deviations measured 0.017, a
category's share moved by 0.1 an L-infinity of 0.10.
"""

DEFAULT_MAX_JS = 0.01
DEFAULT_MAX_LINF = 0.05
