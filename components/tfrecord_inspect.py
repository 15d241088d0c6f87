"""What a set of TFRecord files holds, read from the records themselves.

A reader cannot parse tf.Examples without a feature spec; this infers one
(name, type, fixed or variable length) from the records, ready to pass to
``tf.io.parse_example``.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

# Records parsed to infer the feature spec; all records are counted.
SPEC_SAMPLE_RECORDS = 100_000
_KINDS = {"int64_list": tf.int64, "float_list": tf.float32, "bytes_list": tf.string}


@dataclasses.dataclass
class _FeatureStats:
    kind: str
    present: int = 0
    min_count: int = 1 << 62
    max_count: int = 0


@dataclasses.dataclass(frozen=True)
class Inspection:
    """Counts, sizes and the inferred spec of a set of TFRecord files.

    Attributes:
      files: the files read, with (records, bytes) each.
      feature_spec: ``tf.io.parse_example`` spec inferred from the sampled records.
      sampled: how many records the spec was inferred from.
    """

    files: dict[str, tuple[int, int]]
    feature_spec: dict[str, tf.io.FixedLenFeature | tf.io.VarLenFeature]
    sampled: int

    @property
    def records(self) -> int:
        return sum(n for n, _ in self.files.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.files.values())


def list_record_files(path: str) -> list[str]:
    """Expands a file, a folder (recursively) or a glob into TFRecord files.

    Raises:
      ValueError: if nothing matches.
    """
    if tf.io.gfile.isdir(path):
        files = [
            os.path.join(root, name)
            for root, _, names in tf.io.gfile.walk(path)
            for name in names
            if not name.startswith(".") and not name.endswith((".json", ".jsonl", ".pbtxt"))
        ]
    else:
        files = [f for f in tf.io.gfile.glob(path) if not tf.io.gfile.isdir(f)]
    if not files:
        raise ValueError(f"No TFRecord files at {path}.")
    return sorted(files)


def _compression(path: str) -> str:
    return "GZIP" if path.endswith(".gz") else ""


def inspect_records(path: str, sample: int = SPEC_SAMPLE_RECORDS) -> Inspection:
    """Counts records per file and infers the feature spec.

    Raises:
      ValueError: if nothing matches, a file is not a valid TFRecord file, or
        its records are not tf.Examples.
    """
    files, stats, sampled = {}, {}, 0
    for file in list_record_files(path):
        count = 0
        try:
            for record in tf.data.TFRecordDataset(file, compression_type=_compression(file)):
                count += 1
                if sampled < sample:
                    sampled += 1
                    _observe(tf.train.Example.FromString(record.numpy()), stats, file)
        except tf.errors.DataLossError as e:
            raise ValueError(f"{file} is not a valid TFRecord file: {e.message}") from e
        files[file] = (count, tf.io.gfile.stat(file).length)
    return Inspection(files=files, feature_spec=_spec(stats, sampled), sampled=sampled)


def _observe(example: tf.train.Example, stats: dict[str, _FeatureStats], file: str) -> None:
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind is None:
            continue
        entry = stats.setdefault(name, _FeatureStats(kind))
        if entry.kind != kind:
            raise ValueError(f"Feature {name!r} is {entry.kind} in some records, {kind} in {file}.")
        count = len(getattr(feature, kind).value)
        entry.present += 1
        entry.min_count = min(entry.min_count, count)
        entry.max_count = max(entry.max_count, count)


def _spec(stats: dict[str, _FeatureStats], sampled: int) -> dict:
    spec = {}
    for name, s in sorted(stats.items()):
        dtype = _KINDS[s.kind]
        fixed = s.present == sampled and s.min_count == s.max_count
        spec[name] = (
            tf.io.FixedLenFeature([s.min_count], dtype) if fixed else tf.io.VarLenFeature(dtype)
        )
    return spec


def format_spec(spec: dict) -> str:
    """Returns the spec as Python source for ``tf.io.parse_example``."""
    lines = ["{"]
    for name, f in spec.items():
        dtype = f"tf.{f.dtype.name}"
        if isinstance(f, tf.io.FixedLenFeature):
            lines.append(f"    {name!r}: tf.io.FixedLenFeature({list(f.shape)}, {dtype}),")
        else:
            lines.append(f"    {name!r}: tf.io.VarLenFeature({dtype}),")
    lines.append("}")
    return "\n".join(lines)
