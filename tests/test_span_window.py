"""Daily runs over a rolling window of spans: each span converted once, and analyzed from
its statistics (or, for a user's preprocessing_fn, once by tf.Transform, its cache serving
later windows)."""

import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft

from conftest import run_cli, run_summary
from daily_spans import ROWS, page_window_and_drift, write_day
from tfrecord_pipelines.components.task import vocabulary_name
from tfrecord_pipelines.local.run_record import open_store, read_run

pytestmark = pytest.mark.e2e


def _run(data: Path, output: Path, *extra: str):
    result = run_cli(
        "run", "--data", f"{data}/day-{{SPAN}}/", "--label", "label", "--window", "2",
        "--train-steps", "20", "--min-accuracy", "0", "--output", str(output), *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _example_gen_spans(output: Path) -> list[tuple[int, str]]:
    """(span, input pattern) of every conversion the pipeline's ExampleGen recorded."""
    store = open_store(str(output / "metadata" / "events" / "metadata.db"))
    context = store.get_context_by_type_and_name("node", "events.ShardedExampleGen")
    found = []
    for artifact in store.get_artifacts_by_context(context.id):
        if "shard_plan" in artifact.custom_properties:
            plan = artifact.custom_properties["shard_plan"].string_value
            pattern = re.search(r'"input_pattern": "([^"]+)"', plan).group(1)
            found.append((artifact.custom_properties["span"].int_value, pattern))
    return sorted(found)


# A user's preprocessing_fn: the built-in one, which TFX calls without ExampleGen's
# statistics when a module file defines it, so that tf.Transform analyzes every feature.
USER_PREPROCESSING = """
from tfrecord_pipelines.components.transform import preprocessing_fn as built_in


def preprocessing_fn(inputs, custom_config):
    return built_in(inputs, custom_config)
"""


@pytest.fixture(scope="module")
def daily(tmp_path_factory):
    """Day 2's run (a first run: it converts day 1 too), then day 3's; and the same two days
    with a user's preprocessing_fn (tf.Transform's analyzers and cache) in another output
    folder: (data, output, the user's output, day 2, the spans converted by day 2, day 3,
    the user's day 2, the user's day 3)."""
    root = tmp_path_factory.mktemp("daily")
    data = root / "events"
    for day in (1, 2, 3):
        write_day(data / f"day-{day}", seed=day)
    output = root / "out"
    day_2 = _run(data, output, "--span", "2")
    spans_after_day_2 = _example_gen_spans(output)
    day_3 = _run(data, output)
    module = root / "user_preprocessing.py"
    module.write_text(USER_PREPROCESSING)
    user = root / "user"
    user_day_2 = _run(data, user, "--span", "2", "--module-file", str(module))
    user_day_3 = _run(data, user, "--span", "3", "--module-file", str(module))
    return data, output, user, day_2, spans_after_day_2, day_3, user_day_2, user_day_3


def test_day_3_starts_from_day_2s_model_and_a_rerun_reuses_its_training(daily):
    data, output, _, day_2, _, day_3, user_day_2, _ = daily
    assert "warm start:    no, no earlier blessed model" in day_2
    assert "warm start:    no, no earlier blessed model" in user_day_2
    day_2_model = run_summary(output, "events", day_2).model
    summary = run_summary(output, "events", day_3)
    # Same columns and the same colours and classes (their shares moved): day 2's weights fit.
    assert summary.warm_start["warm_started"], summary.warm_start
    assert summary.warm_start["base_model"] == f"{day_2_model}/Format-Serving"
    assert summary.warm_start["new_share"] == pytest.approx(0.5, abs=0.05)
    # --train-steps is trained as asked, warm or not.
    assert summary.warm_start["steps"] == summary.training.steps == 20
    # The base model is the latest blessed one of earlier spans, not day 3's own: a re-run
    # has the Trainer's inputs of the first and reuses it.
    again = _run(data, output)
    assert "Trainer" in run_summary(output, "events", again).reused


def test_the_first_run_converts_the_window_then_each_run_only_its_new_span(daily):
    data, output, _, day_2, spans_after_day_2, day_3, _, _ = daily
    assert (
        "Window: spans 1-2: 0 converted by earlier runs, 1 to convert first (1), then span 2 "
        "in the run; not on disk: none"
    ) in day_2
    assert spans_after_day_2 == [(1, "day-1/*.csv"), (2, "day-2/*.csv")]
    assert (
        "Window: spans 2-3: 1 converted by earlier runs, 0 to convert first (none), then span 3 "
        "in the run; not on disk: none"
    ) in day_3
    # Day 3's ExampleGen read day 3's files and nothing else.
    assert _example_gen_spans(output) == [*spans_after_day_2, (3, "day-3/*.csv")]
    summary = run_summary(output, "events", day_3)
    assert summary.span == (3, None, "day-3/*.csv")
    assert f"span:          3 ({data}/day-3/*.csv)" in day_3
    assert [s.span for s in summary.window.spans] == [2, 3]
    assert summary.window.rows("train") + summary.window.rows("eval") == 2 * ROWS


def test_transform_takes_the_windows_analysis_from_its_spans_statistics(daily):
    _, output, _, day_2, _, day_3, _, _ = daily
    for printed in (day_2, day_3):
        assert "train rows; Transform's analysis from their statistics, no record read" in printed
    summary = run_summary(output, "events", day_3)
    assert summary.window.from_statistics == (2, 3)
    assert (summary.window.analyzed, summary.window.from_cache) == ((), ())
    # Nothing read: the Transform's records are none.
    [transform] = [c for c in summary.costs if c.node_id == "Transform"]
    assert not transform.records


def test_a_users_preprocessing_fn_is_analyzed_once_per_span_its_cache_serving_the_rest(daily):
    _, _, user, _, _, _, user_day_2, user_day_3 = daily
    assert "Transform analyzed 1-2, its analyzer cache served none" in user_day_2
    assert "Transform analyzed 3, its analyzer cache served 2" in user_day_3
    summary = run_summary(user, "events", user_day_3)
    assert (summary.window.analyzed, summary.window.from_cache) == ((3,), (2,))


def _transform_output(output: Path, printed: str) -> tft.TFTransformOutput:
    store = open_store(str(output / "metadata" / "events" / "metadata.db"))
    run = read_run(store, "events", re.search(r"run id: +(\S+)", printed).group(1))
    return tft.TFTransformOutput(run["Transform"].output("transform_graph").uri)


def test_the_windows_statistics_give_tf_transforms_analysis_of_the_window(daily):
    """Day 3's graph, from spans 2 and 3's statistics, against tf.Transform's analysis of
    the same window (the user's day 3: span 3 analyzed, span 2 from its cache)."""
    data, output, user, _, _, day_3, _, user_day_3 = daily
    cached = _transform_output(output, day_3)
    full = _transform_output(user, user_day_3)
    for name in ("colour", "label"):
        assert cached.vocabulary_by_name(vocabulary_name(name)) == full.vocabulary_by_name(
            vocabulary_name(name)
        )
    # Means and variances: the same rows give the same z-scores through both graphs.
    rows = [line.split(",") for day in (2, 3) for line in
            (data / f"day-{day}" / "rows.csv").read_text().splitlines()[1:]]  # fmt: skip
    feature = tf.train.Feature
    serialized = [
        tf.train.Example(
            features=tf.train.Features(
                feature={
                    "x": feature(float_list=tf.train.FloatList(value=[float(x)])),
                    "colour": feature(bytes_list=tf.train.BytesList(value=[colour.encode()])),
                    "z": feature(float_list=tf.train.FloatList(value=[float(z)])),
                    "label": feature(int64_list=tf.train.Int64List(value=[int(label)])),
                }
            )
        ).SerializeToString()
        for x, colour, z, label in rows
    ]
    batch = tf.io.parse_example(serialized, full.raw_feature_spec())
    got = cached.transform_features_layer()(batch)
    want = full.transform_features_layer()(batch)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-6, atol=1e-6)


def test_a_span_like_the_one_before_is_pushed_and_a_drifted_one_is_held_back(daily):
    _, output, _, day_2, _, day_3, _, _ = daily
    day_2_summary = run_summary(output, "events", day_2)
    previous, report = day_2_summary.drift
    assert previous == 1 and set(report) == {"x", "colour", "z", "label"}
    assert not any(r["drifted"] for r in report.values()), report
    assert "drift:         none against span 1 (4 features compared)" in day_2
    assert day_2_summary.pushed_model

    day_3_summary = run_summary(output, "events", day_3)
    previous, report = day_3_summary.drift
    assert previous == 2
    assert {name for name, r in report.items() if r["drifted"]} == {"colour", "x"}, report
    assert report["x"]["measure"] == "Jensen-Shannon"
    assert report["colour"]["measure"] == "L-infinity"
    assert day_3_summary.pushed_model is None
    assert day_3_summary.blocked_by_drift == "colour,x"
    # Held back whether or not the Evaluator blessed it (its baseline is day 2's model).
    assert "this span drifted from the previous one: colour,x; --on-drift warn" in day_3


def test_the_report_shows_the_window_what_was_reused_and_the_drift(daily):
    _, _, _, _, _, day_3, _, user_day_3 = daily
    report = Path(re.search(r"report: +(\S+)", day_3).group(1)).read_text()
    rows, drifted = page_window_and_drift(report)
    assert [span for span, _ in rows] == ["2", "3"]
    assert "an earlier run" in rows[0][1] and "statistics" in rows[0][1]
    assert "this run" in rows[1][1] and "statistics" in rows[1][1]
    user_report = Path(re.search(r"report: +(\S+)", user_day_3).group(1)).read_text()
    rows, _ = page_window_and_drift(user_report)
    assert "analyzer cache" in rows[0][1] and "analyzed" in rows[1][1]
    assert sorted(drifted) == ["colour", "x"]
    assert "held back, the span drifted (colour,x)" in report
    # The push line gives the summary's reasons: the drift, and the blessing only if missing.
    push = re.search(r'<p id="push">(.*?)</p>', report, re.S).group(1)
    printed = re.search(r"pushed model:  none \((.*)\)", day_3).group(1)
    assert push == f"Not pushed: {printed}."
