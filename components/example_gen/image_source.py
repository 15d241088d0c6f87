"""Image folders → serialized tf.Examples holding the original encoded bytes.

Two layouts:
- one sub-folder per class: ``SOURCE/<class name>/<image files>``; labels are
  the class names' indices in sorted order;
- a labels file ``SOURCE/labels.csv`` with columns ``filename,label,class_name``
  (file names relative to SOURCE).

Each example holds the file's bytes unchanged (``image``), ``label``,
``class_name``, ``height``, ``width``, ``channels`` and ``filename``, so one
sequential read gives a training step everything. Files that do not decode as
images are quarantined.
"""

from __future__ import annotations

import csv
import dataclasses
import os

import apache_beam as beam
import tensorflow as tf

from components.example_gen.features import ColumnType, feature, serialize
from components.example_gen.quarantine import QUARANTINE_TAG, QuarantineRecord

LABELS_FILE = "labels.csv"
IMAGE_KEY = "image"
CLASS_NAME_KEY = "class_name"
_LABELS_COLUMNS = ["filename", "label", "class_name"]


@dataclasses.dataclass(frozen=True)
class LabelledFile:
    """An image file and what it shows."""

    path: str
    label: int
    class_name: str


def list_images(source: str) -> list[LabelledFile]:
    """Lists the labelled image files of an image folder (either layout).

    Raises:
      ValueError: if the folder is missing, empty, or its labels file is malformed.
    """
    if not tf.io.gfile.isdir(source):
        raise ValueError(f"Image folder {source} does not exist or is not a folder.")
    labels_path = os.path.join(source, LABELS_FILE)
    if tf.io.gfile.exists(labels_path):
        with tf.io.gfile.GFile(labels_path) as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != _LABELS_COLUMNS:
                raise ValueError(
                    f"Labels file {labels_path} must have the header "
                    f"{','.join(_LABELS_COLUMNS)}, got {reader.fieldnames}."
                )
            try:
                files = [
                    LabelledFile(
                        os.path.join(source, r["filename"]), int(r["label"]), r["class_name"]
                    )
                    for r in reader
                ]
            except ValueError as e:
                raise ValueError(
                    f"Labels file {labels_path}: a label is not an integer ({e})."
                ) from e
    else:
        classes = sorted(
            d.rstrip("/") for d in tf.io.gfile.listdir(source)
            if tf.io.gfile.isdir(os.path.join(source, d))
        )  # fmt: skip
        files = [
            LabelledFile(os.path.join(source, name, file), label, name)
            for label, name in enumerate(classes)
            for file in sorted(tf.io.gfile.listdir(os.path.join(source, name)))
            if not tf.io.gfile.isdir(os.path.join(source, name, file))
        ]
    if not files:
        raise ValueError(
            f"Image folder {source} holds no images: expected one sub-folder per class "
            f"or a {LABELS_FILE} file."
        )
    return files


class _ImageToExample(beam.DoFn):
    def __init__(self, label_key: str):
        self._label_key = label_key

    def process(self, item: LabelledFile):
        try:
            with tf.io.gfile.GFile(item.path, "rb") as f:
                encoded = f.read()
        except (tf.errors.NotFoundError, OSError) as e:
            yield self._bad(item, f"unreadable file: {e}")
            return
        try:
            shape = tf.io.decode_image(encoded, expand_animations=False).shape
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            yield self._bad(item, f"not an image: {str(e).splitlines()[0][:200]}")
            return
        height, width, channels = (int(d) for d in shape)
        yield serialize(
            {
                IMAGE_KEY: feature(ColumnType.BYTES, [encoded]),
                self._label_key: feature(ColumnType.INT, [item.label]),
                CLASS_NAME_KEY: feature(ColumnType.BYTES, [item.class_name]),
                "height": feature(ColumnType.INT, [height]),
                "width": feature(ColumnType.INT, [width]),
                "channels": feature(ColumnType.INT, [channels]),
                "filename": feature(ColumnType.BYTES, [os.path.basename(item.path)]),
            }
        )

    @staticmethod
    def _bad(item: LabelledFile, reason: str):
        return beam.pvalue.TaggedOutput(
            QUARANTINE_TAG, QuarantineRecord(item.path, os.path.basename(item.path), reason)
        )


@beam.ptransform_fn
def ImagesToExamples(pipeline: beam.Pipeline, files: list[LabelledFile], label_key: str):  # noqa: N802
    """Reads image files; returns a DoOutputsTuple (main: serialized examples, quarantine)."""
    return (
        pipeline
        | "ListFiles" >> beam.Create(files)
        | "Distribute" >> beam.Reshuffle()
        | "ReadImages"
        >> beam.ParDo(_ImageToExample(label_key)).with_outputs(QUARANTINE_TAG, main="examples")
    )
