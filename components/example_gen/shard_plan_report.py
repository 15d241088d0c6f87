"""What a finished conversion wrote: ``shard_plan.json`` beside the splits, as a type.

ShardedExampleGen writes it (and the same JSON as its Examples' ``shard_plan``
property, which ML Metadata and the daily state keep); the Trainer reads its
record counts, the report, the run summary, the window's summary, the KFP page
and ``convert`` read the rest. Every reader goes through ``ShardPlanReport``:
the JSON's field names are written here once, and a report written by an
earlier version (without a span, say) still reads, with that field's default.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from tfrecord_pipelines.components.storage import filesystem

SHARD_PLAN_FILE = "shard_plan.json"


@dataclasses.dataclass(frozen=True)
class ShardFile:
    """One shard as written: its file name in the split's folder, records and bytes."""

    file: str
    records: int
    bytes: int


@dataclasses.dataclass(frozen=True)
class SplitOutcome:
    """One split's plan against what was written.

    Attributes:
      planned_shards: the shards the plan asked for.
      shards_adjusted: why the count differs from the settings ("" when it does not).
      estimated_bytes: the split's size the plan was made for.
      records_measured: the records that reached the writer.
      shards: the shard files, numbered without gaps.
      records: the records written (equal to ``records_measured``).
      bytes: the bytes written.
    """

    planned_shards: int
    shards_adjusted: str
    estimated_bytes: int
    records_measured: int
    shards: tuple[ShardFile, ...]
    records: int
    bytes: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SplitOutcome:
        """The outcome from its JSON (``finalize_split``'s dict)."""
        fields = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name != "shards"}
        return cls(**fields, shards=tuple(ShardFile(**shard) for shard in data["shards"]))


@dataclasses.dataclass(frozen=True)
class SkippedFiles:
    """An image folder's files not named like images: how many, and the first 100."""

    count: int
    first: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ShardPlanReport:
    """A conversion's shard plan and counts.

    Attributes:
      span: the span converted (0 for data without spans).
      version: the span's version, or None.
      input_pattern: the glob that was read.
      target_shard_bytes: the settings' shard size.
      num_readers: the readers each split got at least as many shards as, or None.
      num_shards: the shard count asked for, or None.
      compression: GZIP or NONE.
      records_read: input records read (written and quarantined).
      records_written: records written to the splits.
      quarantined: input records quarantined.
      quarantined_by_reason: their counts by reason.
      splits: each split's outcome, by name.
      split_sizing: how the eval split was sized (JSON of ``split_sizing.SplitSizing``), or
        None when the split ratios were given.
      skipped_files: images only: files skipped for their names.
    """

    span: int
    version: int | None
    input_pattern: str | None
    target_shard_bytes: int
    num_readers: int | None
    num_shards: int | None
    compression: str
    records_read: int
    records_written: int
    quarantined: int
    quarantined_by_reason: dict[str, int]
    splits: dict[str, SplitOutcome]
    split_sizing: dict | None = None
    skipped_files: SkippedFiles | None = None

    def to_json(self) -> dict[str, Any]:
        """The report as ``shard_plan.json`` holds it (no key for an absent option)."""
        data = dataclasses.asdict(self)
        for split in data["splits"].values():
            split["shards"] = list(split["shards"])
        for optional in ("split_sizing", "skipped_files"):
            if data[optional] is None:
                del data[optional]
        if self.skipped_files is not None:
            data["skipped_files"]["first"] = list(self.skipped_files.first)
        return data

    def dumps(self) -> str:
        """The report's JSON text (the Examples artifact's ``shard_plan`` property)."""
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShardPlanReport:
        """The report from its JSON; fields an earlier version did not write take defaults."""
        skipped = data.get("skipped_files")
        return cls(
            span=data.get("span", 0),
            version=data.get("version"),
            input_pattern=data.get("input_pattern"),
            target_shard_bytes=data["target_shard_bytes"],
            num_readers=data.get("num_readers"),
            num_shards=data.get("num_shards"),
            compression=data["compression"],
            records_read=data["records_read"],
            records_written=data["records_written"],
            quarantined=data["quarantined"],
            quarantined_by_reason=dict(data.get("quarantined_by_reason", {})),
            splits={name: SplitOutcome.from_json(s) for name, s in data["splits"].items()},
            split_sizing=data.get("split_sizing"),
            skipped_files=(
                SkippedFiles(skipped["count"], tuple(skipped["first"])) if skipped else None
            ),
        )

    @classmethod
    def loads(cls, text: str) -> ShardPlanReport | None:
        """The report from its JSON text (an artifact's property); None for ""."""
        return cls.from_json(json.loads(text)) if text else None

    @property
    def split_records(self) -> dict[str, int]:
        """Records written, by split."""
        return {name: split.records for name, split in self.splits.items()}

    @property
    def shards_adjusted(self) -> dict[str, str]:
        """Why a split's shard count differs from the settings, for the splits where it does."""
        return {name: s.shards_adjusted for name, s in self.splits.items() if s.shards_adjusted}


def plan_path(examples_uri: str) -> str:
    """Where a conversion's report lies: beside its split folders."""
    return os.path.join(examples_uri, SHARD_PLAN_FILE)


def read_shard_plan(examples_uri: str) -> ShardPlanReport | None:
    """The report beside an Examples artifact's splits (local or in a bucket), or None."""
    path = plan_path(examples_uri)
    if not filesystem.exists(path):
        return None
    with filesystem.open_text(path) as f:
        return ShardPlanReport.from_json(json.load(f))
