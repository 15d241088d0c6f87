"""Input that could not become an example: where it came from and why."""

from __future__ import annotations

import collections
import dataclasses
import json
import os

from tfrecord_pipelines.components.storage import filesystem

# Beam output tag for quarantined input, beside the main output of examples.
QUARANTINE_TAG = "quarantine"
QUARANTINE_FILE_PREFIX = "quarantine"
QUARANTINE_FILE_SUFFIX = ".jsonl"
# Raw content kept per quarantined row: enough to find and fix it.
_MAX_CONTENT_CHARS = 500


@dataclasses.dataclass(frozen=True)
class QuarantineRecord:
    """One piece of bad input.

    Attributes:
      source: the file it came from.
      content: the raw row (CSV), the row number (Parquet) or the file name (images).
      reason: why it could not be converted, naming the column or check.
      line: CSV: the file's line number where the row starts (the header is line 1).
    """

    source: str
    content: str
    reason: str
    line: int | None = None

    def to_json(self) -> str:
        record = dataclasses.asdict(self)
        record["content"] = record["content"][:_MAX_CONTENT_CHARS]
        return json.dumps(record, ensure_ascii=False)


@dataclasses.dataclass(frozen=True)
class QuarantineSummary:
    """What a quarantine folder holds.

    Attributes:
      count: quarantined records.
      by_reason: counts per reason kind (the reason up to its first ':').
      examples: the first few records, for error messages.
    """

    count: int
    by_reason: dict[str, int]
    examples: tuple[QuarantineRecord, ...]

    def describe(self) -> str:
        """Returns a one-line description of the commonest reasons and first examples."""
        reasons = ", ".join(
            f"{n} {kind}" for kind, n in sorted(self.by_reason.items(), key=lambda kv: -kv[1])[:3]
        )
        firsts = "; ".join(
            f"{os.path.basename(r.source)}: {r.content[:80]!r} ({r.reason})" for r in self.examples
        )
        return f"{reasons}. First: {firsts}"


def reason_kind(reason: str) -> str:
    """Returns the part of a reason before its details, for counting by kind."""
    return reason.split(":", 1)[0]


def summarize_quarantine(folder: str, num_examples: int = 3) -> QuarantineSummary:
    """Counts the quarantine files in ``folder`` and keeps the first records."""
    count, by_reason, examples = 0, collections.Counter(), []
    pattern = os.path.join(folder, f"{QUARANTINE_FILE_PREFIX}*{QUARANTINE_FILE_SUFFIX}")
    for path in sorted(filesystem.glob(pattern)):
        with filesystem.open_file(path) as f:
            for line in f:
                if not line.strip():
                    continue
                record = QuarantineRecord(**json.loads(line))
                count += 1
                by_reason[reason_kind(record.reason)] += 1
                if len(examples) < num_examples:
                    examples.append(record)
    return QuarantineSummary(count=count, by_reason=dict(by_reason), examples=tuple(examples))
