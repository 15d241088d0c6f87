"""Conversions on Beam and on Spark side by side: what each wrote, for comparison."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import tensorflow as tf

from example_data import convert_as_written
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.local.beam_args import local_beam_args

# Small shards and blocks: several of each, so tasks and shards are many.
SHARDING = ShardingOptions(target_shard_bytes=24 * 1024)
SPARK_MASTER = "local[2]"


def convert_with(engine: str, source: Path, dest: Path, source_format: str, **overrides) -> dict:
    """Converts with the given engine (Spark: on SPARK_MASTER unless overridden)."""
    settings = dict(
        source_format=source_format,
        sharding=SHARDING,
        compression="gzip",
        max_bad_fraction=0.5,
        beam_pipeline_args=local_beam_args(),
        engine=engine,
        spark_master=SPARK_MASTER,
    )
    settings.update(overrides)
    return convert_as_written(source, dest, **settings)


def records_by_split(out: Path) -> dict[str, collections.Counter]:
    """Every record of every split, as a multiset."""
    found = {}
    for split in sorted(out.glob("Split-*")):
        counter = collections.Counter()
        for shard in split.iterdir():
            kind = "GZIP" if shard.suffix == ".gz" else ""
            counter.update(r.numpy() for r in tf.data.TFRecordDataset(str(shard), kind))
        found[split.name] = counter
    return found


def quarantined(out: Path) -> list[dict]:
    """Every quarantined record, sorted."""
    records = [
        json.loads(line)
        for path in (out / "quarantine").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    return sorted(records, key=lambda r: (r["source"], r["line"] or 0, r["content"]))


def layout(out: Path) -> dict:
    """File names and record counts per shard: what a reader of the folder sees."""
    plan = json.loads((out / "shard_plan.json").read_text())
    return {
        "files": sorted(
            str(p.relative_to(out)) for p in out.rglob("*") if "quarantine" not in str(p)
        ),
        "shards": {
            name: [(s["file"], s["records"]) for s in split["shards"]]
            for name, split in plan["splits"].items()
        },
        "planned": {name: split["planned_shards"] for name, split in plan["splits"].items()},
        "counts": {k: plan[k] for k in ("records_read", "records_written", "quarantined")},
        "reasons": plan["quarantined_by_reason"],
    }


def assert_same_conversion(beam_out: Path, spark_out: Path) -> None:
    """Same records per split, same quarantine, same shard layout and counts."""
    beam_records, spark_records = records_by_split(beam_out), records_by_split(spark_out)
    assert {k: sum(v.values()) for k, v in spark_records.items()} == {
        k: sum(v.values()) for k, v in beam_records.items()
    }
    assert spark_records == beam_records
    assert quarantined(spark_out) == quarantined(beam_out)
    assert layout(spark_out) == layout(beam_out)
