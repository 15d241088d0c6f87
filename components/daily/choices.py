"""What a run of a window builds on, chosen by one set of rules wherever the candidates come
from: ML Metadata's artifacts (a local run's Resolvers) or the records of the daily state in
the object store (a Kubeflow run's SpanWindow, ``daily_state``).

Each candidate carries its ``order``: later is newer (an artifact's id in ML
Metadata, a record's time in the object store).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable
from typing import Any

from tfrecord_pipelines.components.daily.window import window_spans


@dataclasses.dataclass(frozen=True)
class Converted:
    """One conversion of a span: ``item`` is what it stands for (an artifact, a record).

    Attributes:
      span: the span converted.
      version: its ``{VERSION}``; -1 when the pattern has none.
      order: later is newer.
      item: the artifact or record.
    """

    span: int
    version: int
    order: Hashable
    item: Any = dataclasses.field(compare=False)


@dataclasses.dataclass(frozen=True)
class Trained:
    """What a run trained or analyzed: a model (``blessed`` by its Evaluator, or not) or an
    analyzer cache, with the spans its producer read.

    Attributes:
      spans: the spans the producer read.
      blessed: for a model, whether its Evaluator blessed it.
      order: later is newer.
      item: the artifact or record.
    """

    spans: frozenset[int]
    blessed: bool
    order: Hashable
    item: Any = dataclasses.field(compare=False)


def window_conversions(found: Iterable[Converted], end: int, num_spans: int) -> list[Converted]:
    """The window of ``num_spans`` ending at ``end``: per span the highest version's newest
    conversion, in span order. A span converted twice (a re-run, two runs at once, a new
    ``{VERSION}``) is read once."""
    spans = window_spans(end, num_spans)
    newest: dict[int, Converted] = {}
    for candidate in found:
        if candidate.span not in spans:
            continue
        known = newest.get(candidate.span)
        if known is None or (candidate.version, candidate.order) > (known.version, known.order):
            newest[candidate.span] = candidate
    return [newest[span] for span in sorted(newest)]


def previous_conversion(found: Iterable[Converted], end: int) -> Converted | None:
    """The newest conversion of the highest span before ``end`` (its highest version), or
    None: what this span's drift is measured against."""
    earlier = [c for c in found if c.span < end]
    return max(earlier, key=lambda c: (c.span, c.version, c.order), default=None)


def _before(trained: Trained, end: int) -> bool:
    return max(trained.spans, default=-1) < end


def base_model(found: Iterable[Trained], end: int) -> Trained | None:
    """The warm start's base: the newest blessed model whose training read only spans before
    ``end``. Not the newest blessed model whatever it read: a re-run of a day would start
    from that day's own model, so the Trainer's inputs would change on every re-run."""
    earlier = [t for t in found if t.blessed and _before(t, end)]
    return max(earlier, key=lambda t: t.order, default=None)


def baseline_model(found: Iterable[Trained]) -> Trained | None:
    """The Evaluator's baseline: the newest blessed model, whatever it read (a new model must
    do at least as well)."""
    return max((t for t in found if t.blessed), key=lambda t: t.order, default=None)


def analyzer_cache(found: Iterable[Trained], end: int) -> Trained | None:
    """The newest analyzer cache written by a Transform that read only spans before
    ``end`` (so a re-run of a day gets the cache its first run got)."""
    return max((t for t in found if _before(t, end)), key=lambda t: t.order, default=None)
