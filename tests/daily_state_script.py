"""The daily state's records written and chosen from in a process of their own, as SpanWindow and
RecordRun do in their pods, against whatever store the path names (a GCS emulator through
STORAGE_EMULATOR_HOST). Used by tests/test_daily_state_gcs.py and benchmarks/daily_state_reads.py.

    python tests/daily_state_script.py populate STATE DAYS
        records DAYS days: each a conversion of its span and a run over its window
        of 3 spans (blessed, with an analyzer cache); prints nothing.
    python tests/daily_state_script.py choose STATE END WINDOW
        prints, as JSON, what a run of span END with a window of WINDOW spans
        chooses, the records it opened, and its wall and CPU seconds.
    python tests/daily_state_script.py records STATE SPAN
        prints, as JSON, the conversions recorded of SPAN and every run's model.
    python tests/daily_state_script.py race STATE NAME
        prints "ready" once imported, then, on a line from standard input (given to both
        racers at once): records the conversion both racers record (span 5),
        one of its own (span 6 or 7) and a run of its own, then chooses 20 times;
        prints what the last choice saw.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from tfrecord_pipelines.components.storage import object_stores  # noqa: E402

object_stores.configure(sys.argv[2:3])

from tfx.types import standard_artifacts  # noqa: E402

from tfrecord_pipelines.components.daily import daily_state  # noqa: E402
from tfrecord_pipelines.components.storage import filesystem  # noqa: E402

WINDOW = 3


def _artifact(kind, uri: str, span: int | None = None):
    artifact = kind()
    artifact.uri = uri
    if span is not None:
        artifact.span = span
    return artifact


def _convert(state: str, run: str, span: int) -> str:
    return daily_state.record_conversion(
        state,
        span,
        -1,
        _artifact(standard_artifacts.Examples, f"gs://root/{run}/examples", span),
        _artifact(standard_artifacts.ExampleStatistics, f"gs://root/{run}/statistics"),
    )


def _train(state: str, run: str, span: int, model: str | None = None) -> str:
    return daily_state.record_run(
        state,
        range(max(1, span - WINDOW + 1), span + 1),
        _artifact(standard_artifacts.Model, model or f"gs://root/{run}/model"),
        blessed=True,
        analyzer_cache=_artifact(standard_artifacts.TransformCache, f"gs://root/{run}/cache"),
    )


def _choose(state: str, end: int, window: int) -> dict:
    window_found, previous = daily_state.window_conversions(state, end, window)
    earlier = daily_state.earlier_runs(state, end)

    def spans(trained):
        return sorted(trained.spans) if trained else None

    return {
        "window": [c.span for c in window_found],
        "window_uris": [c.item["examples"]["artifact"]["uri"] for c in window_found],
        "previous": previous.span if previous else None,
        "base": spans(earlier.base_model),
        "baseline": spans(earlier.baseline_model),
        "cache": spans(earlier.analyzer_cache),
        "baseline_uri": earlier.baseline_model.item["model"]["artifact"]["uri"]
        if earlier.baseline_model
        else None,
    }


def _counting_opens() -> list[str]:
    """Records every path the daily state opens from here on."""
    opened: list[str] = []
    open_file = filesystem.open_file

    def counted(path, mode="r"):
        opened.append(path)
        return open_file(path, mode)

    filesystem.open_file = counted
    return opened


def main(argv: list[str]) -> None:
    command, state = argv[0], argv[1]
    if command == "populate":
        for day in range(1, int(argv[2]) + 1):
            _convert(state, f"day-{day}", day)
            _train(state, f"day-{day}", day)
    elif command == "choose":
        opened = _counting_opens()
        wall, cpu = time.monotonic(), time.process_time()
        chosen = _choose(state, int(argv[2]), int(argv[3]))
        chosen.update(
            opened=len(opened),
            wall=time.monotonic() - wall,
            cpu=time.process_time() - cpu,
        )
        print(json.dumps(chosen))
    elif command == "records":
        found = daily_state.conversions(state, [int(argv[2])])
        models = sorted(r["model"]["artifact"]["uri"] for r in daily_state.runs(state))
        print(json.dumps({"conversions": len(found), "models": models}))
    elif command == "race":
        name = argv[2]
        print("ready", flush=True)
        sys.stdin.readline()
        _convert(state, "shared", 5)
        _convert(state, name, 6 if name == "a" else 7)
        _train(state, name, 7)
        _train(state, "shared", 7, model="gs://root/shared/model")
        for _ in range(20):
            chosen = _choose(state, 7, WINDOW)
        print(json.dumps(chosen))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
