"""A few images per class from an image pipeline's records, as small inline thumbnails.

The records are read without TensorFlow (``tfrecord_pipelines.components.tfrecords.reader``),
decoded in batches by tfx_bsl's Example decoder, and each image is scaled
down with Pillow into a JPEG data URI, so the report embeds kilobytes, not
the originals, and needs no file beside it.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import os

from PIL import Image, UnidentifiedImageError
from tfx_bsl.coders.example_coder import ExamplesToRecordBatchDecoder

from tfrecord_pipelines.components.data_source.image_folder import (
    CLASS_NAME_KEY,
    FILENAME_KEY,
    IMAGE_KEY,
)
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.tfrecords.reader import read_records

THUMBNAIL_PIXELS = 96
_DECODE_BATCH = 256
# Enough to find a few of each class without reading a large split whole.
_MAX_RECORDS_READ = 20_000


@dataclasses.dataclass(frozen=True)
class Thumbnail:
    """One image: its file name and a ``data:image/jpeg;base64,...`` URI of it, scaled down."""

    filename: str
    data_uri: str


def _thumbnail(encoded: bytes) -> str | None:
    try:
        with Image.open(io.BytesIO(encoded)) as image:
            image.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
            small = image.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    buffer = io.BytesIO()
    small.save(buffer, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _batches(split_uri: str):
    batch, read = [], 0
    for name in filesystem.listdir(split_uri):
        for record in read_records(os.path.join(split_uri, name)):
            batch.append(record)
            read += 1
            if len(batch) == _DECODE_BATCH or read == _MAX_RECORDS_READ:
                yield batch
                batch = []
            if read == _MAX_RECORDS_READ:
                return
    if batch:
        yield batch


def class_thumbnails(
    split_uri: str, per_class: int = 4, max_classes: int = 12
) -> dict[str, list[Thumbnail]]:
    """The first ``per_class`` images of up to ``max_classes`` classes in a split, by class name."""
    decoder = ExamplesToRecordBatchDecoder()
    found: dict[str, list[Thumbnail]] = {}
    for records in _batches(split_uri):
        columns = decoder.DecodeBatch(records).to_pydict()
        for image, class_name, filename in zip(
            columns[IMAGE_KEY], columns[CLASS_NAME_KEY], columns[FILENAME_KEY], strict=True
        ):
            name = class_name[0].decode("utf-8", "replace")
            if name not in found and len(found) == max_classes:
                continue
            thumbnails = found.setdefault(name, [])
            if len(thumbnails) < per_class and (uri := _thumbnail(image[0])):
                thumbnails.append(Thumbnail(filename[0].decode("utf-8", "replace"), uri))
        full = len(found) == max_classes and all(len(t) == per_class for t in found.values())
        if full:
            break
    return dict(sorted(found.items()))
