"""The KFP SDK's private names: its client's loader of a compiled pipeline file, which the
tests use to parse a spec as ``kfp.Client.upload_pipeline`` and ``create_run`` do."""

from __future__ import annotations

LIBRARY = "kfp"
VERSION = "2.13.0"
CHECKED = {"kfp.client.client._extract_pipeline_yaml": "f5cab703313bd380"}


def load_pipeline_file(path: str):
    """The pipeline spec (and platform spec) ``kfp.Client`` reads from a compiled file."""
    from kfp.client import client

    return client._extract_pipeline_yaml(path)
