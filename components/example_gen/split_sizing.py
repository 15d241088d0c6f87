"""The eval split's size: TFX's 2:1 for small data, a cap set by metric precision for large.

A metric's precision depends on how many rows it is computed on, not on
what fraction of the data they are. An accuracy p measured on n rows is
known to within about 1.96 * sqrt(p * (1 - p) / n) (95%): 100,000 rows give
+-0.25 percentage points near 0.8 and +-0.31 at the worst case, 0.5. A
third of 10 million rows (TFX's default) buys +-0.04 points that no
blessing needs, at 33 times the Evaluator's cost, and takes those rows away
from training. So the default split is TFX's 2:1 until the eval third would
pass ``DEFAULT_EVAL_ROWS``; above that the eval split gets about that many
rows and train gets the rest.

The split is chosen before any row is assigned, from the row count of the
input (Parquet footers and image files: exact; CSV: the files' bytes over
the bytes per row of a sample at the start of the first file), and becomes
hash buckets: each row's split stays a function of its own hash, the same
under Beam and Spark.
"""

from __future__ import annotations

import dataclasses
import math

from tfrecord_pipelines.components.data_source import IMAGES, PARQUET
from tfrecord_pipelines.components.data_source.csv_dialect import read_sample, strip_bom
from tfrecord_pipelines.components.data_source.csv_records import split_records
from tfrecord_pipelines.components.data_source.files import compression_of
from tfrecord_pipelines.components.storage import filesystem

# About +-0.25 percentage points (95%) for an accuracy near 0.8; see the module docstring.
DEFAULT_EVAL_ROWS = 100_000
TRAIN, EVAL = "train", "eval"
# TFX's default: 2 train buckets for each eval bucket.
DEFAULT_BUCKETS = {TRAIN: 2, EVAL: 1}
# Buckets of a capped split: a row's share is set to 1 in a million.
CAPPED_TOTAL_BUCKETS = 1_000_000
# Bytes of the first CSV file read to measure bytes per row.
_CSV_SAMPLE_BYTES = 4 * 2**20


@dataclasses.dataclass(frozen=True)
class SplitSizing:
    """How the train/eval split was chosen, as recorded in shard_plan.json.

    Attributes:
      estimated_rows: rows in the input, counted or estimated before the split.
      exact: True when counted (Parquet, images), False when estimated (CSV).
      eval_rows: the cap on the eval split's rows.
      hash_buckets: the buckets each split got.
      capped: True when the cap applied; False keeps TFX's 2:1.
    """

    estimated_rows: int
    exact: bool
    eval_rows: int
    hash_buckets: dict[str, int]
    capped: bool

    def to_json(self) -> dict:
        """The sizing as JSON (shard_plan.json's ``split_sizing``)."""
        return dataclasses.asdict(self)


def describe_sizing(sizing: dict) -> str:
    """One line for people from a sizing's JSON: the split and why."""
    rows = f"{'' if sizing['exact'] else '~'}{sizing['estimated_rows']:,} rows"
    if not sizing["capped"]:
        return f"{rows}, train 2 : eval 1 (a third is at most {sizing['eval_rows']:,} rows)"
    buckets = sizing["hash_buckets"]
    share = buckets[EVAL] / sum(buckets.values())
    return (
        f"{rows}, eval capped at about {sizing['eval_rows']:,} rows ({share:.2%} of them), "
        "train the rest"
    )


def is_default_split(output_config) -> bool:
    """True for TFX's default train/eval 2:1 hash split (an ``example_gen_pb2.Output``),
    which sizing may replace."""
    config = output_config.split_config
    return (
        not config.partition_feature_name
        and {s.name: s.hash_buckets for s in config.splits} == DEFAULT_BUCKETS
    )


def size_eval_split(estimated_rows: int, eval_rows: int, *, exact: bool) -> SplitSizing:
    """Returns the train/eval buckets for an input of ``estimated_rows`` rows.

    Raises:
      ValueError: if eval_rows is not positive.
    """
    if eval_rows < 1:
        raise ValueError(f"eval_rows must be at least 1, got {eval_rows}.")
    if estimated_rows <= sum(DEFAULT_BUCKETS.values()) * eval_rows:
        return SplitSizing(estimated_rows, exact, eval_rows, dict(DEFAULT_BUCKETS), capped=False)
    eval_buckets = max(1, round(CAPPED_TOTAL_BUCKETS * eval_rows / estimated_rows))
    buckets = {TRAIN: CAPPED_TOTAL_BUCKETS - eval_buckets, EVAL: eval_buckets}
    return SplitSizing(estimated_rows, exact, eval_rows, buckets, capped=True)


def count_rows(source_format: str, files: list) -> tuple[int, bool]:
    """Returns the input's rows and whether that is a count (True) or an estimate (False).

    Images: one row per file. Parquet: the footers' row counts (of the files
    that can be read). CSV: every file's bytes at the bytes per row of the
    first file's first rows; a compressed file's bytes at the expansion of the
    first file compressed alike.
    """
    if source_format == IMAGES:
        return len(files), True
    if source_format == PARQUET:
        import pyarrow as pa
        import pyarrow.parquet as pq

        total = 0
        for path in files:
            try:
                with filesystem.open_binary(path) as f:
                    total += pq.ParquetFile(f).metadata.num_rows
            except (pa.ArrowException, OSError):
                continue  # the converter quarantines a file it cannot read, with its reason
        return total, True
    data, first_expansion = read_sample(files[0], _CSV_SAMPLE_BYTES)
    ratios = {compression_of(files[0]): first_expansion}
    for path in files:
        codec = compression_of(path)
        if codec not in ratios:
            ratios[codec] = read_sample(path, _CSV_SAMPLE_BYTES)[1]
    total_bytes = sum(filesystem.size(path) * ratios[compression_of(path)] for path in files)
    data = strip_bom(data)
    records = [r for r in split_records(data, 1) if r.complete][1:]  # after the header
    if len(data) == _CSV_SAMPLE_BYTES and records:
        records.pop()  # the sample's end may cut the last row
    if not records:
        return 0, False
    header_bytes = len(data) - len(data.split(b"\n", 1)[-1])
    per_row = sum(len(r.data) + 1 for r in records) / len(records)
    data_bytes = total_bytes - header_bytes * len(files)
    return max(len(records), math.ceil(data_bytes / per_row)), False
