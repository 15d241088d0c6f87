"""The drift check's common bins, and a Pusher that holds back a drifted span's model."""

import json

import numpy as np
import pandas as pd
import pytest
import tensorflow_data_validation as tfdv
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx.types import standard_artifacts

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.drift.common_bins import on_common_bins
from tfrecord_pipelines.components.drift.executor import drift_report, with_comparators
from tfrecord_pipelines.components.example_gen.statistics import QUANTILE_BUCKETS
from tfrecord_pipelines.components.pusher import executor as pusher_executor

ROWS = 20_000


def _statistics(counts_mean: float, seed: int):
    """A Poisson count (integer-valued, where own-bin histograms mislead) and a category."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "count": rng.poisson(counts_mean, ROWS).astype(float),
            "colour": rng.choice(["red", "green", "blue"], ROWS),
        }
    )
    options = tfdv.StatsOptions(num_quantiles_histogram_buckets=QUANTILE_BUCKETS)
    return tfdv.generate_statistics_from_dataframe(frame, options)


def _js(current, previous, common: bool) -> float:
    schema = with_comparators(tfdv.infer_schema(previous), max_js=1.0, max_linf=1.0)
    if common:
        current, previous = on_common_bins(current, previous)
    anomalies = tfdv.validate_statistics(current, schema, previous_statistics=previous)
    return drift_report(anomalies)["count"]["value"]


def test_common_bins_tell_a_shifted_count_from_a_second_sample_where_own_bins_cannot():
    before, again, shifted = _statistics(3, 1), _statistics(3, 2), _statistics(3.3, 3)
    # TFDV's own equal-width bins: a second sample of the same counts looks as far away as
    # (or farther than) a mean moved by a tenth.
    assert _js(again, before, common=False) > _js(shifted, before, common=False) / 2
    # On common bins the second sample is ten times closer than the shifted one.
    same, moved = _js(again, before, common=True), _js(shifted, before, common=True)
    assert same < 0.001 < 0.003 < moved
    assert 10 * same < moved


def test_every_feature_gets_the_comparator_of_its_kind_unless_the_schema_has_one():
    schema = tfdv.infer_schema(_statistics(3, 1))
    colour = next(f for f in schema.feature if f.name == "colour")
    colour.drift_comparator.infinity_norm.threshold = 0.3
    compared = with_comparators(schema, max_js=0.02, max_linf=0.07)
    thresholds = {
        f.name: (
            f.drift_comparator.jensen_shannon_divergence.threshold,
            f.drift_comparator.infinity_norm.threshold,
        )
        for f in compared.feature
    }
    assert thresholds == {"count": (0.02, 0.0), "colour": (0.0, 0.3)}
    image = schema.feature.add(name="image", type=schema_pb2.BYTES)
    image.image_domain.SetInParent()
    (compared_image,) = [
        f for f in with_comparators(schema, 0.02, 0.07).feature if f.name == "image"
    ]
    assert not compared_image.HasField("drift_comparator")


def _push(tmp_path, on_drift: str, drifted: str):
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / "model")
    (tmp_path / "model" / "Format-Serving").mkdir(parents=True)
    (tmp_path / "model" / "Format-Serving" / "saved_model.pb").write_bytes(b"model")
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property("blessed", 1)
    drift = standard_artifacts.ExampleAnomalies()
    drift.set_string_custom_property("drifted", drifted)
    pushed = standard_artifacts.PushedModel()
    pushed.uri = str(tmp_path / "pushed")
    serving = tmp_path / "serving"
    pusher_executor.Executor().Do(
        {"model": [model], "model_blessing": [blessing], "drift": [drift]},
        {"pushed_model": [pushed]},
        {
            "push_destination": json.dumps({"filesystem": {"base_directory": str(serving)}}),
            "custom_config": json.dumps({keys.ON_DRIFT_KEY: on_drift}),
        },
    )
    return pushed, sorted(p.name for p in serving.iterdir()) if serving.exists() else []


@pytest.mark.parametrize(
    "on_drift, drifted, pushed",
    [("block", "colour,x", False), ("warn", "colour,x", True), ("block", "", True)],
)
def test_a_drifted_spans_model_is_held_back_unless_drift_only_warns(
    tmp_path, on_drift, drifted, pushed
):
    artifact, served = _push(tmp_path, on_drift, drifted)
    assert artifact.get_int_custom_property("pushed") == int(pushed)
    assert len(served) == int(pushed)
    held = artifact.get_string_custom_property(keys.BLOCKED_PROPERTY)
    assert held == ("" if pushed else drifted)
