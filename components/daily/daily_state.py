"""The daily state of a pipeline on Kubeflow: the spans its runs converted and the models and
analyzer caches they left, as records in a folder of the object store (``--state-dir``).

Kubeflow Pipelines' open-source backend runs no TFX Resolver, so a run there
cannot ask ML Metadata for earlier runs' artifacts. Each run records what it
made here instead, and the next run reads the records back:

- ``conversions/span-<span>/<version>-<digest>.json``: one conversion of a
  span (SpanWindow records its run's: ExampleGen's examples, statistics and
  quarantine, the examples with their files' fingerprint and ExampleGen's
  settings, so that a re-run of the day reuses them);
- ``runs/<digest>.json``: what a run trained (RecordRun: the model,
  whether it was blessed, the spans it read, Transform's analyzer cache).

Every record is an object of its own, named by what it records, and is never
rewritten: two runs at once each add theirs, none is lost, and a span recorded
twice is read once (``choices.window_conversions``). Records hold TFX's JSON
of the artifacts (``Artifact.to_json_dict``), so a later run hands them to its
components as the artifacts they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import choices
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
        with filesystem.open_file(path, "w") as f:
            f.write(json.dumps({"format": _FORMAT, **record}, sort_keys=True))
    return path


def _read_all(folder: str) -> list[tuple[str, dict]]:
    """(path, record) of every record below ``folder``, oldest name first."""

    if not filesystem.isdir(folder):
        return []
    found = []
    for path in sorted(filesystem.walk_files(folder)):
        if not path.endswith(".json"):
            continue
        with filesystem.open_file(path) as f:
            found.append((path, json.loads(f.read())))
    return found


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


def conversions(state_dir: str) -> list[choices.Converted]:
    """Every conversion recorded, each with its record as ``item``."""
    return [
        choices.Converted(r["span"], r["version"], (r["recorded_ns"], path), r)
        for path, r in _read_all(os.path.join(state_dir, CONVERSIONS))
    ]


def record_run(
    state_dir: str, spans: Iterable[int], model, blessed: bool, analyzer_cache=None
) -> str:
    """Records what a run trained on ``spans``: its model, whether its Evaluator blessed it,
    and Transform's updated analyzer cache (or None).

    Returns:
      The record's path.
    """
    path = os.path.join(state_dir, RUNS, f"{_digest(launcher_copies.remote_uri(model.uri))}.json")
    return _write_once(
        path,
        {
            "spans": sorted(set(spans)),
            "blessed": bool(blessed),
            "recorded_ns": time.time_ns(),
            keys.MODEL_KEY: _as_recorded(model),
            keys.ANALYZER_CACHE_KEY: _as_recorded(analyzer_cache),
        },
    )


def runs(state_dir: str) -> list[dict]:
    """Every run recorded, oldest first."""
    found = [record for _, record in _read_all(os.path.join(state_dir, RUNS))]
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
