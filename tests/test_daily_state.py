"""The daily state Kubeflow runs keep in the object store, and the rules that pick from it and
from ML Metadata alike (``daily.choices``)."""

from __future__ import annotations

import json
import os
import threading

import pytest
from tfx.types import standard_artifacts

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.daily import choices, daily_state


def _examples(uri: str, span: int):
    artifact = standard_artifacts.Examples()
    artifact.uri = uri
    artifact.span = span
    return artifact


def _statistics(uri: str):
    artifact = standard_artifacts.ExampleStatistics()
    artifact.uri = uri
    return artifact


def _model(uri: str):
    artifact = standard_artifacts.Model()
    artifact.uri = uri
    return artifact


def _convert(state: str, run: str, span: int, version: int = -1) -> None:
    daily_state.record_conversion(
        state,
        span,
        version,
        _examples(f"/root/{run}/examples", span),
        _statistics(f"/root/{run}/statistics"),
    )


def test_the_window_holds_each_span_once_at_its_highest_version_newest_first(tmp_path):
    state = str(tmp_path / "state")
    _convert(state, "day-1", 1)
    _convert(state, "day-2", 2)
    _convert(state, "day-2-again", 2)  # a re-run of day 2
    _convert(state, "day-3-v1", 3, version=1)
    _convert(state, "day-3-v0", 3, version=0)  # an older version converted later
    window = choices.window_conversions(daily_state.conversions(state), end=3, num_spans=2)
    assert [c.span for c in window] == [2, 3]
    assert [c.item["examples"]["artifact"]["uri"] for c in window] == [
        "/root/day-2-again/examples",
        "/root/day-3-v1/examples",
    ]
    previous = choices.previous_conversion(daily_state.conversions(state), end=3)
    assert previous.item["statistics"]["artifact"]["uri"] == "/root/day-2-again/statistics"
    assert choices.previous_conversion(daily_state.conversions(state), end=1) is None


def test_two_runs_at_once_neither_lose_nor_double_a_span(tmp_path):
    state = str(tmp_path / "state")
    _convert(state, "day-1", 1)
    # Catch-up runs after an outage: days 2 and 3, and day 3 twice, all at once.
    runs = [("day-2", 2), ("day-3", 3), ("day-3-twice", 3)]
    threads = [threading.Thread(target=_convert, args=(state, run, span)) for run, span in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = daily_state.conversions(state)
    assert sorted(c.span for c in found) == [1, 2, 3, 3]
    assert [c.span for c in choices.window_conversions(found, end=3, num_spans=3)] == [1, 2, 3]


def test_a_re_run_records_the_same_conversion_once(tmp_path):
    state = str(tmp_path / "state")
    first = daily_state.record_conversion(
        state, 4, -1, _examples("/root/a/examples", 4), _statistics("/root/a/statistics")
    )
    again = daily_state.record_conversion(
        state, 4, -1, _examples("/root/a/examples", 4), _statistics("/root/a/statistics")
    )
    assert first == again
    assert len(daily_state.conversions(state)) == 1


def test_the_base_model_is_the_newest_blessed_one_of_earlier_spans(tmp_path):
    state = str(tmp_path / "state")
    daily_state.record_run(state, [1], _model("/root/day-1/model"), blessed=True)
    daily_state.record_run(state, [1, 2], _model("/root/day-2/model"), blessed=False)
    daily_state.record_run(state, [2, 3], _model("/root/day-3/model"), blessed=True)
    models = daily_state.trained_models(daily_state.runs(state))

    def base(end: int) -> str | None:
        found = choices.base_model(models, end)
        return found.item["model"]["artifact"]["uri"] if found else None

    # Day 2's model was not blessed; day 3's read day 3: a re-run of day 3 starts from day 1's.
    assert base(3) == "/root/day-1/model"
    assert base(4) == "/root/day-3/model"
    assert base(1) is None
    # The Evaluator's baseline is the newest blessed model, whatever it read.
    assert choices.baseline_model(models).item["model"]["artifact"]["uri"] == "/root/day-3/model"
    assert choices.baseline_model(models[1:2]) is None


def test_the_analyzer_cache_is_the_newest_of_a_transform_over_earlier_spans(tmp_path):
    state = str(tmp_path / "state")
    cache = standard_artifacts.TransformCache()
    cache.uri = "/root/day-1/cache"
    daily_state.record_run(state, [1], _model("/root/day-1/model"), True, cache)
    daily_state.record_run(state, [1, 2], _model("/root/day-2/model"), True)  # no cache
    found = daily_state.analyzer_caches(daily_state.runs(state))
    assert [sorted(c.spans) for c in found] == [[1]]
    assert choices.analyzer_cache(found, 2).item["analyzer_cache"]["artifact"]["uri"] == (
        "/root/day-1/cache"
    )
    assert choices.analyzer_cache(found, 1) is None


def test_the_default_state_sits_beside_the_serving_folder():
    assert daily_state.default_state_dir("gs://b/models/serving/", "events") == (
        "gs://b/models/daily-state/events"
    )


@pytest.mark.parametrize("num_spans", [0, -1])
def test_a_window_holds_at_least_one_span(num_spans):
    with pytest.raises(ValueError, match="at least 1 span"):
        choices.window_conversions([], end=3, num_spans=num_spans)


def test_a_record_names_the_uri_not_the_launchers_local_copy(tmp_path):
    model = standard_artifacts.Model()
    # What a task of a pipeline rooted in MinIO reads: KFP's launcher's copy in the pod.
    model.uri = "/minio/mlpipeline/v2/artifacts/events/run-1/Trainer/uuid/model"
    daily_state.record_run(str(tmp_path), [1], model, blessed=True)
    [run] = daily_state.runs(str(tmp_path))
    uri = run[keys.MODEL_KEY]["artifact"]["uri"]
    assert uri == "minio://mlpipeline/v2/artifacts/events/run-1/Trainer/uuid/model"


def test_earlier_runs_choose_from_names_and_read_the_chosen_records_alone(tmp_path):
    state = str(tmp_path / "state")
    cache = standard_artifacts.TransformCache()
    cache.uri = "/root/day-1/cache"
    daily_state.record_run(state, [1], _model("/root/day-1/model"), True, cache)
    daily_state.record_run(state, [1, 2], _model("/root/day-2/model"), blessed=False)
    third = daily_state.record_run(state, [2, 3], _model("/root/day-3/model"), blessed=True)
    # A record named as before 2026-11-28 (its digest alone) is still chosen from.
    legacy = tmp_path / "state" / "runs" / "0123456789abcdef.json"
    legacy.write_text(
        json.dumps(
            {
                "format": 1,
                "spans": [0],
                "blessed": True,
                "recorded_ns": 1,
                "model": {"artifact": {"uri": "/root/day-0/model"}},
                "analyzer_cache": None,
            }
        )
    )
    # A re-run records the same model once.
    again = daily_state.record_run(state, [2, 3], _model("/root/day-3/model"), blessed=True)
    assert again == third
    assert len(os.listdir(tmp_path / "state" / "runs")) == 4
    earlier = daily_state.earlier_runs(state, 3)
    assert earlier.base_model.item["model"]["artifact"]["uri"] == "/root/day-1/model"
    assert earlier.base_model.spans == frozenset({1})
    assert earlier.baseline_model.item["model"]["artifact"]["uri"] == "/root/day-3/model"
    assert earlier.baseline_model.spans == frozenset({2, 3})
    assert earlier.analyzer_cache.item["analyzer_cache"]["artifact"]["uri"] == "/root/day-1/cache"
    assert daily_state.earlier_runs(state, 1).base_model.item["model"]["artifact"]["uri"] == (
        "/root/day-0/model"
    )


def test_a_record_on_disk_appears_whole_and_leaves_no_partial_file(tmp_path):
    state = tmp_path / "state"
    path = daily_state.record_run(str(state), [1], _model("/root/day-1/model"), blessed=True)
    assert os.listdir(state / "runs") == [os.path.basename(path)]
    with open(path) as f:
        assert json.load(f)["spans"] == [1]
