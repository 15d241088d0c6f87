"""The compression of TFRecord shards: ``gzip``, ``gzip:LEVEL`` or ``none``.

Pure Python, so the command line checks the option before importing TensorFlow.
"""

from __future__ import annotations

GZIP = "gzip"
NONE = "none"
# zlib's default level; level 1 costs about half the CPU for a few more bytes.
DEFAULT_GZIP_LEVEL = 6


def default_compression(is_images: bool) -> str:
    """The shards' compression when none is asked for: GZIP for tabular data (text
    compresses several-fold), none for images (encoded images shrink by a few
    percent under GZIP, which doubles the CPU of reading them)."""
    return NONE if is_images else GZIP


def parse_compression(compression: str) -> tuple[str, int | None]:
    """Splits ``gzip``, ``gzip:LEVEL`` (1-9) or ``none`` into the kind and the GZIP level.

    Raises:
      ValueError: if it is none of these.
    """
    kind, _, level = compression.partition(":")
    if kind == NONE and not level:
        return NONE, None
    if kind == GZIP and (not level or (level.isdigit() and 1 <= int(level) <= 9)):
        return GZIP, int(level) if level else DEFAULT_GZIP_LEVEL
    raise ValueError(
        f"compression must be gzip, gzip:LEVEL (LEVEL 1-9) or none, got {compression!r}."
    )
