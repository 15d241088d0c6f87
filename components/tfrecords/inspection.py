"""What a set of TFRecord files holds, read from the records themselves.

A reader cannot parse tf.Examples without a feature spec; this infers one
(name, type, fixed or variable length) from the records, ready to pass to
``tf.io.parse_example``. Nothing here imports TensorFlow: the records are read
by ``tfrecord_reader`` and decoded in batches by tfx_bsl's Example decoder
into Arrow, so inspecting a small file takes well under a second of imports.
"""

from __future__ import annotations

import dataclasses
import os

import pyarrow as pa
import pyarrow.compute as pc
from tfx_bsl.coders.example_coder import ExamplesToRecordBatchDecoder

from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.tfrecords.reader import read_records

# Records parsed to infer the feature spec; all records are counted.
SPEC_SAMPLE_RECORDS = 100_000
_DECODE_BATCH = 1024
# Arrow value type of a decoded tf.Example feature -> the tf.DType it parses to.
_DTYPES = {pa.int64(): "int64", pa.float32(): "float32", pa.large_binary(): "string"}
_NOT_RECORDS = (".json", ".jsonl", ".pbtxt")


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """How ``tf.io.parse_example`` should read one feature.

    Attributes:
      dtype: ``int64``, ``float32`` or ``string``.
      length: values per record if every sampled record has the same number
        (a ``FixedLenFeature``); None for a ``VarLenFeature``.
    """

    dtype: str
    length: int | None

    def to_tf(self):
        """The ``tf.io.FixedLenFeature`` or ``tf.io.VarLenFeature`` (imports TensorFlow)."""
        import tensorflow as tf

        dtype = tf.as_dtype(self.dtype)
        if self.length is None:
            return tf.io.VarLenFeature(dtype)
        return tf.io.FixedLenFeature([self.length], dtype)


@dataclasses.dataclass
class _FeatureStats:
    dtype: str
    present: int = 0
    min_count: int = 1 << 62
    max_count: int = 0


@dataclasses.dataclass(frozen=True)
class Inspection:
    """Counts, sizes and the inferred spec of a set of TFRecord files.

    Attributes:
      files: the files read, with (records, bytes) each.
      feature_spec: each feature's spec, inferred from the sampled records.
      sampled: how many records the spec was inferred from.
    """

    files: dict[str, tuple[int, int]]
    feature_spec: dict[str, FeatureSpec]
    sampled: int

    @property
    def records(self) -> int:
        return sum(n for n, _ in self.files.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.files.values())

    def tf_feature_spec(self) -> dict:
        """The spec as ``tf.io.parse_example`` takes it (imports TensorFlow)."""
        return {name: spec.to_tf() for name, spec in self.feature_spec.items()}


def list_record_files(path: str) -> list[str]:
    """Expands a file, a folder (recursively) or a glob into TFRecord files.

    Raises:
      ValueError: if nothing matches.
    """
    if filesystem.isdir(path):
        files = [
            f
            for f in filesystem.walk_files(path)
            if not os.path.basename(f).startswith(".") and not f.endswith(_NOT_RECORDS)
        ]
    else:
        files = [f for f in filesystem.glob(path) if not filesystem.isdir(f)]
    if not files:
        raise ValueError(f"No TFRecord files at {path}.")
    return files


def inspect_records(path: str, sample: int = SPEC_SAMPLE_RECORDS) -> Inspection:
    """Counts records per file and infers the feature spec.

    Raises:
      ValueError: if nothing matches, or its records are not tf.Examples of
        one type per feature.
      CorruptRecordFile (a ValueError): if a file is not a valid TFRecord file.
    """
    files, stats, sampled = {}, {}, 0
    decoder = ExamplesToRecordBatchDecoder()
    for file in list_record_files(path):
        count, batch = 0, []
        for record in read_records(file):
            count += 1
            if sampled + len(batch) < sample:
                batch.append(record)
            if len(batch) == _DECODE_BATCH:
                sampled += _observe(decoder, batch, stats, file)
                batch = []
        if batch:
            sampled += _observe(decoder, batch, stats, file)
        files[file] = (count, filesystem.size(file))
    return Inspection(files=files, feature_spec=_spec(stats, sampled), sampled=sampled)


def _observe(decoder, records: list[bytes], stats: dict[str, _FeatureStats], file: str) -> int:
    try:
        batch = decoder.DecodeBatch(records)
    except RuntimeError as e:
        raise ValueError(f"{file}: records are not consistent tf.Examples ({e}).") from None
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_null(column.type):
            continue  # present in no record of this batch, or without values
        dtype = _DTYPES[column.type.value_type]
        entry = stats.setdefault(name, _FeatureStats(dtype))
        if entry.dtype != dtype:
            raise ValueError(
                f"Feature {name!r} is {entry.dtype} in some records, {dtype} in {file}."
            )
        lengths = pc.list_value_length(column).drop_null()
        if len(lengths):
            entry.present += len(lengths)
            entry.min_count = min(entry.min_count, pc.min(lengths).as_py())
            entry.max_count = max(entry.max_count, pc.max(lengths).as_py())
    return len(records)


def _spec(stats: dict[str, _FeatureStats], sampled: int) -> dict[str, FeatureSpec]:
    return {
        name: FeatureSpec(
            s.dtype, s.min_count if s.present == sampled and s.min_count == s.max_count else None
        )
        for name, s in sorted(stats.items())
    }


def format_spec(spec: dict[str, FeatureSpec]) -> str:
    """Returns the spec as Python source for ``tf.io.parse_example``."""
    lines = ["{"]
    for name, f in spec.items():
        if f.length is None:
            lines.append(f"    {name!r}: tf.io.VarLenFeature(tf.{f.dtype}),")
        else:
            lines.append(f"    {name!r}: tf.io.FixedLenFeature([{f.length}], tf.{f.dtype}),")
    lines.append("}")
    return "\n".join(lines)
