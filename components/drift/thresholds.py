"""DriftCheck's default thresholds, where the schema sets none (no TensorFlow imported here).

Measured by benchmarks/drift_bins.py on common bins (``common_bins``), two
samples of one distribution at 10,000 rows: Jensen-Shannon at most 0.0015,
L-infinity 0.011; a mean moved by 0.3 standard deviations 0.015, a count's
mean moved by a tenth 0.005, a category's share moved by 0.1 an L-infinity
of 0.12. At 400 rows the noise alone reaches 0.022 and 0.015.
"""

DEFAULT_MAX_JS = 0.01
DEFAULT_MAX_LINF = 0.05
