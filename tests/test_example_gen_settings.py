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


def _static(first: int, last: int):
    from tfx.proto import range_config_pb2

    span = range_config_pb2.StaticRange(start_span_number=first, end_span_number=last)
    return range_config_pb2.RangeConfig(static_range=span)


def _rolling(spans: int):
    from tfx.proto import range_config_pb2

    return range_config_pb2.RangeConfig(
        rolling_range=range_config_pb2.RollingRange(num_spans=spans)
    )


def test_csv_example_gens_call_with_the_class_renamed_builds_it():
    """Issue 91, finding 9: CsvExampleGen(input_base=, input_config=, output_config=,
    range_config=) with ShardedExampleGen's name: each argument means what it means there."""
    from tfx.components import CsvExampleGen
    from tfx.components.example_gen import utils
    from tfx.proto import example_gen_pb2

    input_config = utils.make_default_input_config("*.csv")
    output_config = example_gen_pb2.Output(
        split_config=example_gen_pb2.SplitConfig(
            splits=[example_gen_pb2.SplitConfig.Split(name=n, hash_buckets=b)
                    for n, b in (("train", 3), ("eval", 1))]
        )
    )  # fmt: skip
    one_span = _static(2, 2)
    arguments = dict(
        input_base=PENGUINS, input_config=input_config, output_config=output_config,
        range_config=one_span,
    )  # fmt: skip
    ours, theirs = ShardedExampleGen(**arguments), CsvExampleGen(**arguments)
    for name in ("input_base", "input_config", "output_config"):
        assert ours.exec_properties[name] == theirs.exec_properties[name], name
    assert ours.exec_properties["requested_span"] == "2"
    latest = ShardedExampleGen(PENGUINS, range_config=_rolling(1))
    assert latest.exec_properties["requested_span"] == ""


@pytest.mark.parametrize(
    "arguments, error, words",
    [
        ({"range_config": "static 1-3"}, ValueError, "static range 1-3 is 3: run it per span"),
        ({"range_config": "rolling 2"}, ValueError, "rolling range of 2 span(s)"),
        ({"range_config": "static 1-1", "span": 1}, ValueError, "span= or range_config=, not both"),
        ({"custom_config": object()}, TypeError, "ExampleGenSettings(...)"),
        ({"custom_executor_spec": object()}, TypeError, "use TFX's FileBasedExampleGen"),
        ({"output_data_format": 7}, ValueError, "writes tf.Examples"),
        ({"output_file_format": 16}, ValueError, "compression='none'"),
    ],
)
def test_what_it_cannot_honour_is_refused_naming_the_equivalent(arguments, error, words):
    given = dict(arguments)
    shapes = {"static 1-3": _static(1, 3), "static 1-1": _static(1, 1), "rolling 2": _rolling(2)}
    if "range_config" in given:
        given["range_config"] = shapes[given["range_config"]]
    with pytest.raises(error) as raised:
        ShardedExampleGen(PENGUINS, **given)
    assert words in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "categorical_label, problem",
    [(True, "classification"), (False, "regression"), (None, None)],
)
def test_the_examples_record_the_problem_only_when_told_it(categorical_label, problem):
    from tfx.types import standard_artifacts

    from tfrecord_pipelines.components import keys
    from tfrecord_pipelines.components.example_gen.executor import _record_task

    settings = ExampleGenSettings(label_key="species", categorical_label=categorical_label)
    examples = standard_artifacts.Examples()
    _record_task(examples, settings.parameters(default_format="csv"))
    assert examples.get_string_custom_property(keys.LABEL_PROPERTY) == "species"
    recorded = examples.get_string_custom_property(keys.PROBLEM_PROPERTY) or None
    assert recorded == problem
