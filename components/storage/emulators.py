"""Where the environment names an object store's emulator, by the ecosystem's own variables.

Read by the listing (google-cloud-storage's client) and by the configuration of
TensorFlow's file systems (``object_stores``), which both follow the same names.
"""

from __future__ import annotations

import os

# The ecosystem's names for a GCS emulator: Python's client library's and google-cloud-cpp's.
GCS_EMULATOR_HOST = "STORAGE_EMULATOR_HOST"
GCS_EMULATOR_ENDPOINT = "CLOUD_STORAGE_EMULATOR_ENDPOINT"


def gcs_emulator() -> str | None:
    """The GCS emulator's URL the environment names, or None."""
    endpoint = os.environ.get(GCS_EMULATOR_ENDPOINT) or os.environ.get(GCS_EMULATOR_HOST)
    if not endpoint:
        return None
    return endpoint if "://" in endpoint else f"http://{endpoint}"
