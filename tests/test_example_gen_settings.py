"""ExampleGen's settings: one frozen object, checked when made, that the component and convert
turn into the same parameters."""

import pytest

from conftest import REPO_ROOT
from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.settings import (
    CsvOptions,
    ExampleGenSettings,
    SparkOptions,
)
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.components.keys import EVAL_ROWS_KEY, SPARK_CONF_KEY

PENGUINS = str(REPO_ROOT / "data" / "penguins")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ExampleGenSettings(source_format="xml"), "source_format must be one of csv"),
        (lambda: ExampleGenSettings(engine="flink"), "engine must be one of beam, spark"),
        (lambda: ExampleGenSettings(compression="lz4"), "lz4"),
        (lambda: ExampleGenSettings(eval_rows=0), "eval_rows must be at least 1, got 0"),
        (lambda: ExampleGenSettings(max_bad_fraction=2), r"within \[0, 1\], got 2"),
        (lambda: CsvOptions(block_bytes=0), "block_bytes must be at least 1, got 0"),
        (lambda: CsvOptions(delimiter="ab"), "must be one character"),
        (lambda: SparkOptions(master="cluster-7"), "is not one Spark knows"),
        (lambda: SparkOptions(conf={"executor.memory": "4g"}), "a Spark setting"),
    ],
)
def test_a_bad_setting_is_refused_when_it_is_made(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_component_runs_with_the_settings_parameters():
    settings = ExampleGenSettings(
        label_key="species",
        categorical_label=True,
        sharding=ShardingOptions(num_readers=4),
        csv=CsvOptions(delimiter=";"),
        engine="spark",
        spark=SparkOptions(master="local[2]", conf={"spark.executor.memory": "1g"}),
    )
    component = ShardedExampleGen(PENGUINS, settings)
    parameters = settings.parameters(default_format="csv")
    assert parameters[SPARK_CONF_KEY] == '{"spark.executor.memory": "1g"}'
    assert {k: component.exec_properties[k] for k in parameters} == parameters


def test_an_output_config_leaves_no_eval_cap():
    from tfx.components.example_gen import utils

    from tfrecord_pipelines.components.example_gen.component import default_input_config

    config = utils.make_default_output_config(default_input_config(PENGUINS, "csv"))
    component = ShardedExampleGen(PENGUINS, ExampleGenSettings(), output_config=config)
    assert component.exec_properties[EVAL_ROWS_KEY] is None


def test_a_setting_by_its_old_name_names_the_settings():
    with pytest.raises(
        TypeError, match=r"label_key, sharding in its settings: .*ExampleGenSettings"
    ):
        ShardedExampleGen(PENGUINS, label_key="species", sharding=ShardingOptions())
