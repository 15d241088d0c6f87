"""The compression of TFRecord shards: ``gzip``, ``gzip:LEVEL`` or ``none``.

Pure Python, so the command line checks the option before importing TensorFlow.
A GZIP shard is a series of RFC 1952 members (one per piece a worker wrote),
which TensorFlow's, Beam's and Python's readers read one after the other.
``gzip`` deflates with ISA-L (the ``isal`` package): on tf.Examples of a
table, about 14x less CPU than zlib's level 6 for about 25% more bytes, and
the ratio of zlib's level 1 at a quarter of its CPU
(docs/benchmarks/example-gen.md). ``gzip:LEVEL`` is zlib at that level, for
the smallest shards.
"""

from __future__ import annotations

GZIP = "gzip"
NONE = "none"
# ISA-L's level for ``gzip``: its level 3 took twice the CPU for 0.3% fewer bytes.
ISAL_LEVEL = 2
# zlib's window bits for a GZIP header and trailer around the deflate stream.
_GZIP_WBITS = 31


def default_compression(is_images: bool) -> str:
    """The shards' compression when none is asked for: GZIP for tabular data (text
    compresses several-fold), none for images (encoded images shrink by a few
    percent under GZIP, which doubles the CPU of reading them)."""
    return NONE if is_images else GZIP


def parse_compression(compression: str) -> tuple[str, int | None]:
    """Splits ``gzip``, ``gzip:LEVEL`` (1-9) or ``none`` into the kind and zlib's level
    (None: ISA-L's deflate for ``gzip``).

    Raises:
      ValueError: if it is none of these.
    """
    kind, _, level = compression.partition(":")
    if kind == NONE and not level:
        return NONE, None
    if kind == GZIP and (not level or (level.isdigit() and 1 <= int(level) <= 9)):
        return GZIP, int(level) if level else None
    raise ValueError(
        f"compression must be gzip, gzip:LEVEL (LEVEL 1-9) or none, got {compression!r}."
    )


def gzip_compressor(level: int | None):
    """A compressor (``compress``, ``flush``) writing one GZIP member: zlib at ``level``,
    or ISA-L's when None."""
    if level is None:
        from isal import isal_zlib

        return isal_zlib.compressobj(ISAL_LEVEL, isal_zlib.DEFLATED, _GZIP_WBITS)
    import zlib

    return zlib.compressobj(level, zlib.DEFLATED, _GZIP_WBITS)


def gzip_size(data: bytes, level: int | None) -> int:
    """The size of ``data`` compressed as a shard's GZIP would be."""
    compressor = gzip_compressor(level)
    return len(compressor.compress(data)) + len(compressor.flush())
