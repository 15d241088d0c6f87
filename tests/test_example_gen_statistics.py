"""ExampleGen's statistics (TFDV on the columns it encodes) against StatisticsGen's on its records.

Both pipelines run for real through LocalDagRunner: ShardedExampleGen, then
TFX's StatisticsGen reading back the records it wrote, with TFDV's own
generators (ExampleGen counts the top values in Arrow). Counts, histograms,
top values and every other figure must be the same; quantiles come from a
sketch fed in a different order, so they may differ within its error.
"""

import random

import pytest
import tensorflow_data_validation as tfdv
from google.protobuf import json_format
from tensorflow_metadata.proto.v0 import statistics_pb2
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from tfrecord_pipelines.components.data_source.image_folder import IMAGE_KEY
from tfrecord_pipelines.components.example_gen.component import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.example_gen.statistics import ValueCounts, stats_options
from tfrecord_pipelines.local.beam_args import local_beam_args

ROWS = 5_000
QUANTILES = statistics_pb2.Histogram.QUANTILES


def _write_csv(folder) -> str:
    """Floats, ints and categories, some cells empty (missing values)."""
    rng = random.Random(11)
    folder.mkdir(parents=True)
    lines = ["amount,count,colour,label"]
    for _ in range(ROWS):
        amount = "" if rng.random() < 0.1 else f"{rng.gauss(50, 20):.3f}"
        colour = "" if rng.random() < 0.05 else rng.choice(["red", "green", "blue", "cyan"])
        lines.append(f"{amount},{rng.randint(0, 9)},{colour},{rng.choice('ab')}")
    (folder / "data.csv").write_text("\n".join(lines) + "\n")
    return str(folder)


def _run(root, source: str, source_format: str, stats_options=None):
    example_gen = ShardedExampleGen(
        source,
        ExampleGenSettings(
            source_format=source_format, sharding=ShardingOptions(num_readers=3), label_key="label"
        ),
    )
    statistics_gen = tfx.components.StatisticsGen(
        examples=example_gen.outputs["examples"], stats_options=stats_options
    )
    LocalDagRunner().run(
        tfx.dsl.Pipeline(
            pipeline_name="statistics",
            pipeline_root=str(root / "root"),
            components=[example_gen, statistics_gen],
            metadata_connection_config=metadata.sqlite_metadata_connection_config(
                str(root / "metadata.db")
            ),
            beam_pipeline_args=local_beam_args(),
        )
    )

    def load(component: str, split: str) -> statistics_pb2.DatasetFeatureStatisticsList:
        (artifact,) = (root / "root" / component / "statistics").iterdir()
        return tfdv.load_stats_binary(str(artifact / f"Split-{split}" / "FeatureStats.pb"))

    return {
        split: (load("ShardedExampleGen", split), load("StatisticsGen", split))
        for split in ("train", "eval")
    }


def _quantile_histograms(stats):
    """Takes the quantile histograms out of ``stats``; returns them by feature and place."""
    taken = {}
    for feature in stats.datasets[0].features:
        name = feature.path.step[0]
        kind = feature.WhichOneof("stats")
        if kind is None:
            continue
        holder = getattr(feature, kind)
        common = holder if kind == "struct_stats" else holder.common_stats
        for place, histograms in (
            ("num_values", [common.num_values_histogram]),
            ("values", list(holder.histograms) if kind == "num_stats" else []),
        ):
            for histogram in histograms:
                if histogram.type == QUANTILES:
                    taken[(name, place)] = [b.high_value for b in histogram.buckets]
                    histogram.Clear()
    return taken


def _features(stats) -> dict:
    """Each feature's statistics as plain values, by name: the order of features may differ."""
    return {
        feature.path.step[0]: json_format.MessageToDict(feature)
        for feature in stats.datasets[0].features
    }


def _assert_same(ours, theirs, where=()):
    """Equal, but for the last digits of float sums taken in another order."""
    if isinstance(ours, dict):
        assert isinstance(theirs, dict) and ours.keys() == theirs.keys(), where
        for key in ours:
            _assert_same(ours[key], theirs[key], (*where, key))
    elif isinstance(ours, list):
        assert isinstance(theirs, list) and len(ours) == len(theirs), where
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _assert_same(a, b, (*where, index))
    elif isinstance(ours, float):
        assert ours == pytest.approx(theirs, rel=1e-9), where
    else:
        assert ours == theirs, where


def _assert_same_statistics(ours, theirs):
    ours_quantiles, theirs_quantiles = _quantile_histograms(ours), _quantile_histograms(theirs)
    assert ours.datasets[0].num_examples == theirs.datasets[0].num_examples > 0
    _assert_same(_features(ours), _features(theirs))
    assert ours_quantiles.keys() == theirs_quantiles.keys()
    for key, boundaries in ours_quantiles.items():
        spread = max(boundaries[-1] - boundaries[0], 1e-9)
        # TFDV's quantile sketch: a boundary's rank is off by at most ~1% of the values.
        assert boundaries == pytest.approx(theirs_quantiles[key], abs=0.02 * spread), key


def _tfdv_options(source_format: str):
    """ExampleGen's settings (the same percentiles, not TFDV's default deciles, and as many
    top values) with TFDV's own generators: its exact top values on Beam, not ExampleGen's
    Arrow counts."""
    options = stats_options(source_format)
    options.add_default_generators = True
    options.generators = [g for g in options.generators if isinstance(g, ValueCounts)] or None
    return options


@pytest.fixture(scope="module")
def tabular(tmp_path_factory):
    root = tmp_path_factory.mktemp("tabular")
    return _run(root, _write_csv(root / "csv"), "csv", stats_options=_tfdv_options("csv"))


def test_csv_statistics_equal_statistics_gen_on_the_written_records(tabular):
    for ours, theirs in tabular.values():
        _assert_same_statistics(ours, theirs)


def test_missing_cells_are_counted_as_missing(tabular):
    ours, _ = tabular["train"]
    amount = next(f for f in ours.datasets[0].features if f.path.step[0] == "amount")
    common = amount.num_stats.common_stats
    assert common.num_missing > 0 and common.num_non_missing > 0


def test_image_statistics_equal_statistics_gen_with_image_domains(tmp_path):
    stats = _run(
        tmp_path,
        "data/digits",
        "images",
        stats_options=_tfdv_options("images"),
    )
    for split, (ours, theirs) in stats.items():
        image = next(f for f in ours.datasets[0].features if f.path.step[0] == IMAGE_KEY)
        assert any(s.name == "image_format_histogram" for s in image.custom_stats), split
        _assert_same_statistics(ours, theirs)
