"""The daily state of a pipeline on Kubeflow: the spans its runs converted and the models and
analyzer caches they left, as records in a folder of the object store (``--state-dir``).

Kubeflow Pipelines' open-source backend runs no TFX Resolver, so a run there
cannot ask ML Metadata for earlier runs' artifacts. Each run records what it
made here instead, and the next run reads the records back:

- ``conversions/span-<span>/<version>-<digest>.json``: one conversion of a
  span (SpanWindow records its run's: ExampleGen's examples, statistics and
  quarantine, the examples with their files' fingerprint and ExampleGen's
  settings, so that a re-run of the day reuses them);
- ``runs/<time>-<last span>-<blessed><cache>-<digest>.json``: what a run
  trained (RecordRun: the model, whether it was blessed, the spans it read,
  Transform's analyzer cache). The name holds what the choices need (when,
  the last span read, blessed or not, with an analyzer cache or not).

Every record is an object of its own, named by what it records, written
whole (an object store's object appears whole; on a disk, a file is renamed
into place), and never rewritten: two runs at once each add theirs, none is
lost, and a span or model recorded twice is read once. Records hold TFX's
JSON of the artifacts (``Artifact.to_json_dict``), so a later run hands them
to its components as the artifacts they were.

A run reads what its window needs, not every record ever written: one
listing of ``conversions/`` (the span folders' names) and of ``runs/`` (the
records' names), then the records of the window's spans and the span before,
and the at most three run records chosen from their names
(``docs/benchmarks/daily-window.md``: 30 and 1,000 recorded days).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterable

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import choices
from tfrecord_pipelines.components.daily.window import window_spans
from tfrecord_pipelines.components.storage import filesystem, launcher_copies

CONVERSIONS = "conversions"
RUNS = "runs"
_FORMAT = 1


def default_state_dir(serving_dir: str, pipeline_name: str) -> str:
    """The daily state's folder when none is given: ``daily-state/<name>`` beside the serving
    folder, which the pods reach already."""
    parent = os.path.dirname(serving_dir.rstrip("/"))
    return os.path.join(parent, "daily-state", pipeline_name)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_once(path: str, record: dict) -> str:
    """Writes ``record`` at ``path`` unless it is there already (a re-run's same record)."""

    if not filesystem.exists(path):
        filesystem.make_folder(os.path.dirname(path))
        text = json.dumps({"format": _FORMAT, **record}, sort_keys=True)
        if filesystem.is_object_store(path):
            # An object is seen whole or not at all.
            with filesystem.open_file(path, "w") as f:
                f.write(text)
        else:
            partial = f"{path}.{uuid.uuid4().hex}.partial"
            with filesystem.open_file(partial, "w") as f:
                f.write(text)
            filesystem.replace(partial, path)
    return path


def _read(path: str) -> dict:
    with filesystem.open_file(path) as f:
        return json.loads(f.read())


def _names(folder: str) -> list[str]:
    """The names in ``folder`` (one listing), [] when it does not exist yet."""
    return filesystem.listdir(folder) if filesystem.isdir(folder) else []


def _records(folder: str) -> list[tuple[str, dict]]:
    """(path, record) of every record in ``folder``, oldest name first."""
    return [
        (os.path.join(folder, name), _read(os.path.join(folder, name)))
        for name in _names(folder)
        if name.endswith(".json")
    ]


def _as_recorded(artifact) -> dict | None:
    """An artifact's JSON with the URI it is a copy of, when a task read KFP's launcher's
    local copy: a record outlives the pod."""
    if artifact is None:
        return None
    recorded = artifact.to_json_dict()
    recorded["artifact"]["uri"] = launcher_copies.remote_uri(artifact.uri)
    return recorded


def record_conversion(
    state_dir: str, span: int, version: int, examples, statistics, quarantine=None
) -> str:
    """Records ExampleGen's conversion of ``span``: its examples, statistics and quarantine
    (or None) artifacts.

    Returns:
      The record's path.
    """
    name = f"{version}-{_digest(launcher_copies.remote_uri(examples.uri))}.json"
    path = os.path.join(state_dir, CONVERSIONS, f"span-{span:08d}", name)
    return _write_once(
        path,
        {
            "span": span,
            "version": version,
            "recorded_ns": time.time_ns(),
            keys.EXAMPLES_KEY: _as_recorded(examples),
            keys.STATISTICS_KEY: _as_recorded(statistics),
            keys.QUARANTINE_KEY: _as_recorded(quarantine),
        },
    )


def _span_folders(state_dir: str) -> dict[int, str]:
    """span -> its folder of conversions, from one listing."""
    folder = os.path.join(state_dir, CONVERSIONS)
    return {
        int(name[len("span-") :]): os.path.join(folder, name)
        for name in _names(folder)
        if name.startswith("span-") and name[len("span-") :].isdigit()
    }


def conversions(state_dir: str, spans: Iterable[int] | None = None) -> list[choices.Converted]:
    """The conversions recorded of ``spans`` (None: of every span), each with its record as
    ``item``. Reads only those spans' records."""
    folders = _span_folders(state_dir)
    return _conversions_of(folders, sorted(folders) if spans is None else spans)


def _conversions_of(folders: dict[int, str], spans: Iterable[int]) -> list[choices.Converted]:
    """The conversions recorded in the folders (``_span_folders``) of ``spans``."""
    return [
        choices.Converted(r["span"], r["version"], (r["recorded_ns"], path), r)
        for span in sorted(set(spans) & set(folders))
        for path, r in _records(folders[span])
    ]


def window_conversions(
    state_dir: str, end: int, num_spans: int
) -> tuple[list[choices.Converted], choices.Converted | None]:
    """The window of ``num_spans`` ending at ``end`` (``choices.window_conversions``) and the
    previous span's conversion (``choices.previous_conversion``), reading the records of
    the window's spans and of the span before it only."""
    folders = _span_folders(state_dir)
    before = max((span for span in folders if span < end), default=None)
    found = _conversions_of(
        folders, [*window_spans(end, num_spans), *([] if before is None else [before])]
    )
    return (
        choices.window_conversions(found, end, num_spans),
        choices.previous_conversion(found, end),
    )


@dataclasses.dataclass(frozen=True)
class _RunName:
    """What a run record's name says: enough to choose from, without reading it."""

    recorded_ns: int
    last_span: int  # -1: no span
    blessed: bool
    has_cache: bool
    digest: str

    def name(self) -> str:
        flags = ("b" if self.blessed else "n") + ("c" if self.has_cache else "x")
        return f"{self.recorded_ns:019d}-{self.last_span + 1:08d}-{flags}-{self.digest}.json"

    @classmethod
    def parse(cls, name: str) -> _RunName | None:
        parts = name.removesuffix(".json").split("-")
        if len(parts) != 4 or not parts[0].isdigit() or not parts[1].isdigit():
            return None
        return cls(
            int(parts[0]), int(parts[1]) - 1, parts[2][0] == "b", parts[2][1] == "c", parts[3]
        )


def record_run(
    state_dir: str, spans: Iterable[int], model, blessed: bool, analyzer_cache=None
) -> str:
    """Records what a run trained on ``spans``: its model, whether its Evaluator blessed it,
    and Transform's updated analyzer cache (or None).

    Returns:
      The record's path (an earlier record of the same model's, on a re-run).
    """
    folder = os.path.join(state_dir, RUNS)
    digest = _digest(launcher_copies.remote_uri(model.uri))
    for name in _names(folder):
        if name.endswith(f"-{digest}.json") or name == f"{digest}.json":
            return os.path.join(folder, name)
    spans = sorted(set(spans))
    recorded_ns = time.time_ns()
    named = _RunName(
        recorded_ns, max(spans, default=-1), bool(blessed), bool(analyzer_cache), digest
    )
    return _write_once(
        os.path.join(folder, named.name()),
        {
            "spans": spans,
            "blessed": bool(blessed),
            "recorded_ns": recorded_ns,
            keys.MODEL_KEY: _as_recorded(model),
            keys.ANALYZER_CACHE_KEY: _as_recorded(analyzer_cache),
        },
    )


def _trained(name: _RunName | None, path: str, record: dict | None) -> choices.Trained:
    """A candidate from its name (``item``: its path) or its record (``item``: the record)."""
    if record is not None:
        return choices.Trained(
            frozenset(record["spans"]), record["blessed"], record["recorded_ns"], record
        )
    spans = frozenset() if name.last_span < 0 else frozenset({name.last_span})
    return choices.Trained(spans, name.blessed, name.recorded_ns, path)


@dataclasses.dataclass(frozen=True)
class EarlierRuns:
    """What a run of span ``end`` builds on from the recorded runs (``choices``' rules).

    Attributes:
      base_model: the warm start's model's record, or None.
      baseline_model: the Evaluator's baseline's record, or None.
      analyzer_cache: the record of the analyzer cache to start from, or None.
    """

    base_model: choices.Trained | None
    baseline_model: choices.Trained | None
    analyzer_cache: choices.Trained | None


def earlier_runs(state_dir: str, end: int) -> EarlierRuns:
    """The base model, the baseline and the analyzer cache for a run of span ``end``, chosen
    from the run records' names (one listing) and read alone: at most three records.
    Records named before 2026-11-28 (``<digest>.json``) are read to be chosen from."""
    folder = os.path.join(state_dir, RUNS)
    candidates, cached, seen = [], [], set()
    for name in _names(folder):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        parsed = _RunName.parse(name)
        digest = parsed.digest if parsed else name.removesuffix(".json")
        if digest in seen:
            continue  # the same model recorded twice (two runs at once): read once
        seen.add(digest)
        record = None if parsed else _read(path)
        trained = _trained(parsed, path, record)
        candidates.append(trained)
        if parsed.has_cache if parsed else record.get(keys.ANALYZER_CACHE_KEY):
            cached.append(trained)
    chosen = (
        choices.base_model(candidates, end),
        choices.baseline_model(candidates),
        choices.analyzer_cache(cached, end),
    )
    read = {}
    for trained in chosen:
        if trained is not None and isinstance(trained.item, str) and trained.item not in read:
            read[trained.item] = _trained(None, trained.item, _read(trained.item))
    return EarlierRuns(
        *(read.get(t.item, t) if t is not None and isinstance(t.item, str) else t for t in chosen)
    )


def runs(state_dir: str) -> list[dict]:
    """Every run recorded, oldest first (reads every record: for tests and tools, not runs)."""
    found = [record for _, record in _records(os.path.join(state_dir, RUNS))]
    return sorted(found, key=lambda r: r["recorded_ns"])


def trained_models(records: list[dict]) -> list[choices.Trained]:
    """Each model of ``records`` (``runs``), with its record as ``item``."""
    return [
        choices.Trained(frozenset(r["spans"]), r["blessed"], r["recorded_ns"], r) for r in records
    ]


def analyzer_caches(records: list[dict]) -> list[choices.Trained]:
    """Each analyzer cache of ``records`` (``runs``), with its record as ``item``."""
    return [
        choices.Trained(frozenset(r["spans"]), False, r["recorded_ns"], r)
        for r in records
        if r.get(keys.ANALYZER_CACHE_KEY)
    ]
