"""Full LocalDagRunner runs: the bundled data, and a generated CSV with other columns."""

import csv
import json
import logging
import math
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_model_analysis as tfma
from evaluator_paths import (
    TfmaPathExecutor,
    altered_model,
    assert_same_evaluation,
    evaluate,
    evaluate_with_ui,
    row_by_row_model,
)

from conftest import printed_run_id, run_cli, run_output, run_summary
from tfrecord_pipelines.components.evaluator import paired_change
from tfrecord_pipelines.components.evaluator.executor import Executor
from tfrecord_pipelines.components.markdown_text import markdown_text
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.components.trainer.dataset import list_files
from tfrecord_pipelines.components.trainer.signatures import SCORES_OUTPUT
from tfrecord_pipelines.definition.config import EvaluationOptions, EvaluationThresholds
from tfrecord_pipelines.definition.evaluation import make_eval_config
from tfrecord_pipelines.report.evaluation import read_label_classes

pytestmark = pytest.mark.e2e

# Penguin species are nearly separable from the measurements: a model that
# learnt anything scores far above the 0.33 of chance.
PENGUINS_MIN_ACCURACY = 0.9


def _example(features: dict) -> bytes:
    feature = {}
    for key, value in features.items():
        if isinstance(value, str):
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
        elif isinstance(value, int):
            feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        else:
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture(scope="module")
def penguins_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("penguins")
    # The README's main job with its defaults.
    result = run_cli("run", "--output", str(output), "--train-steps", "300")
    assert result.returncode == 0, result.stderr[-3000:]
    return output, result


def test_penguins_model_is_blessed_and_pushed(penguins_run):
    output, result = penguins_run
    summary = run_summary(output, "penguins", result.stdout)
    assert summary.blessed
    assert summary.pushed_model is not None
    assert Path(summary.pushed_model, "saved_model.pb").is_file()
    assert summary.pushed_model.startswith(str(output / "serving_model" / "penguins"))
    assert summary.metrics["sparse_categorical_accuracy"] >= PENGUINS_MIN_ACCURACY
    # The run tells the user where everything landed.
    assert f"pushed model:  {summary.pushed_model}" in result.stdout
    assert f"evaluation:    {summary.evaluation}" in result.stdout
    # Each headline metric with its 95% interval, and the eval rows behind them.
    accuracy = summary.metrics["sparse_categorical_accuracy"]
    (low, high), rows = summary.intervals["sparse_categorical_accuracy"]
    assert low < accuracy < high and rows == summary.metrics["example_count"]
    assert f"sparse_categorical_accuracy={accuracy:.4g} [{low:.4g}, {high:.4g}]" in result.stdout
    assert f"on {rows:,} eval rows" in result.stdout
    assert {"auc (macro)", "precision (macro)", "recall (macro)"} <= set(summary.intervals)


def _recorded_task(output: Path, name: str, printed: str) -> tuple[str, str]:
    """The label and problem ShardedExampleGen recorded on its examples."""
    examples = run_output(output, name, printed, "ShardedExampleGen", "examples")
    properties = examples.custom_properties
    return properties["label"].string_value, properties["problem"].string_value


def test_the_examples_record_the_label_and_problem(penguins_run):
    """What Transform, the Trainer and the Evaluator read when not told (KFP components)."""
    output, result = penguins_run
    assert _recorded_task(output, "penguins", result.stdout) == ("species", "classification")


def test_pushed_penguins_model_serves_raw_examples(penguins_run):
    output, result = penguins_run
    summary = run_summary(output, "penguins", result.stdout)
    serve = tf.saved_model.load(summary.pushed_model).signatures["serving_default"]
    gentoo = {
        "island": "Biscoe",
        "bill_length_mm": 47.5,
        "bill_depth_mm": 14.2,
        "flipper_length_mm": 217,
        "body_mass_g": 4875,
        "sex": "female",
        "year": 2008,
    }
    adelie_missing_measurements = {"island": "Torgersen", "year": 2007}
    outputs = serve(examples=tf.constant([_example(gentoo), _example(adelie_missing_measurements)]))
    probabilities = outputs["scores"]
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(tf.reduce_sum(probabilities, axis=1), [1.0, 1.0], rtol=1e-5)
    # The classes by name, in the scores' order (TensorFlow Serving's Classify layout).
    classes = outputs["classes"].numpy()
    assert classes.shape == (2, 3) and sorted(classes[0]) == [b"Adelie", b"Chinstrap", b"Gentoo"]
    assert classes[0].tolist() == [n.encode() for n in summary.classes.names]


def _scalar_tags(event_dir: Path) -> dict[str, list[float]]:
    values = {}
    for path in event_dir.glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "scalars":
                    continue
                values.setdefault(value.tag, []).append(float(tf.make_ndarray(value.tensor)))
    return values


def test_trainer_reports_input_stall_to_tensorboard_and_the_run(penguins_run):
    output, result = penguins_run
    summary = run_summary(output, "penguins", result.stdout)
    model_run = Path(summary.model_run)
    # 300 steps in epochs of at most 200 steps: 2 epochs, each with a figure.
    train = _scalar_tags(model_run / "train")["epoch_input_stall"]
    validation = _scalar_tags(model_run / "validation")["epoch_input_stall"]
    assert len(train) == len(validation) == 2
    assert all(0 <= share <= 1 for share in train + validation)
    report = json.loads((model_run / "input_stall.json").read_text())
    assert [e["input_stall"] for e in report["epochs"]] == pytest.approx(train)
    assert summary.input_stall == pytest.approx(train[-1])
    # Once the first epoch has filled the cache, the 229 cached rows cost the steps next
    # to nothing: not input-bound.
    assert [e["steps"] for e in report["epochs"]] == [150, 150]
    assert report["epochs"][-1]["verdict"] == "device-bound"
    assert (
        f"input stall:   {100 * train[-1]:.1f}% of step time waiting for batches in the last "
        "epoch (device-bound)"
    ) in result.stdout
    # An epoch's steps in one call by default: the host's work between calls once an epoch.
    assert report["steps_per_call"] == 200
    assert summary.host_stall == report["epochs"][-1]["host_stall"] == 0
    assert "0.0% of step time waiting for the host between calls, 200 steps a call" in (
        result.stdout
    )
    assert f"tensorboard --logdir {model_run}" in result.stdout


def _input_artifacts(output: Path, run_id: str, node_id: str) -> dict[str, str]:
    """The URIs of a node's input artifacts in run ``run_id``, by input key."""
    from ml_metadata.proto import metadata_store_pb2

    from tfrecord_pipelines.local.run_record import open_store, read_run

    store = open_store(str(output / "metadata" / "penguins" / "metadata.db"))
    execution = read_run(store, "penguins", run_id)[node_id].execution
    events = store.get_events_by_execution_ids([execution.id])
    inputs = [e for e in events if e.type == metadata_store_pb2.Event.INPUT]
    artifacts = store.get_artifacts_by_id([e.artifact_id for e in inputs])
    uris = {a.id: a.uri for a in artifacts}
    return {e.path.steps[0].key: uris[e.artifact_id] for e in inputs}


def test_tabular_trainer_reads_the_planned_shards(penguins_run):
    output, result = penguins_run
    summary = run_summary(output, "penguins", result.stdout)
    run_id = printed_run_id(result.stdout)
    examples = _input_artifacts(output, run_id, "Trainer")["examples"]
    # ExampleGen's artifact, not a copy written by Transform...
    assert examples == _input_artifacts(output, run_id, "Evaluator")["examples"]
    assert "/ShardedExampleGen/examples/" in examples
    assert not list(
        (output / "pipeline_root" / "penguins" / "Transform").glob("transformed_examples*")
    )
    # ...whose train pattern spans every planned shard, each read by its own reader.
    plan = json.loads(Path(examples, "shard_plan.json").read_text())
    planned = sorted(shard["file"] for shard in plan["splits"]["train"]["shards"])
    assert len(planned) == plan["splits"]["train"]["planned_shards"] >= 2
    files = list_files(os.path.join(examples, "Split-train", "*"))
    assert [os.path.basename(f) for f in files] == planned
    assert summary.training.train_records == plan["splits"]["train"]["records"]
    # The floor of 10 readers, then the records' cap, changed the size's one shard: said once.
    records = plan["splits"]["train"]["records_measured"]
    line = f"train capped at {len(planned)} shards, not 10 (one per reader): {records:,} records"
    assert summary.shards_adjusted[0].startswith(line)
    assert f"  shards:        {line}" in result.stdout


def test_transform_takes_its_analysis_from_the_statistics_and_reads_no_data(penguins_run):
    from tfrecord_pipelines.components.keys import ANALYSIS_KEY
    from tfrecord_pipelines.local.run_record import open_store, read_run

    output, result = penguins_run
    store = open_store(str(output / "metadata" / "penguins" / "metadata.db"))
    run = read_run(store, "penguins", printed_run_id(result.stdout))
    graph = run["Transform"].output("transform_graph")
    analysis = json.loads(graph.custom_properties[ANALYSIS_KEY].string_value)
    train = _input_artifacts(output, printed_run_id(result.stdout), "Transform")["examples"]
    assert analysis == {
        "analyzed": [], "from_cache": [], "from_statistics": [f"{train}/Split-train/*"]
    }  # fmt: skip
    # The vocabularies are assets of the graph, under the names the Trainer looks up.
    # The curated schema marks the integer year categorical: ExampleGen counted its values.
    assets = sorted(p.name for p in Path(graph.uri, "transform_fn", "assets").iterdir())
    assert assets == ["island_vocab", "sex_vocab", "species_vocab", "year_vocab"]
    years = Path(graph.uri, "transform_fn", "assets", "year_vocab").read_text().split()
    assert sorted(years) == ["2007", "2008", "2009"]


def test_summary_says_what_each_component_cost_and_what_the_model_saw(penguins_run):
    output, result = penguins_run
    summary = run_summary(output, "penguins", result.stdout)
    training = summary.training
    # --train-steps 300 at the automatic batch of 64 for 229 training rows.
    assert (training.steps, training.batch_size, training.asked) == (300, 64, "train_steps")
    assert training.examples == 19_200
    assert training.epochs == pytest.approx(19_200 / training.train_records)
    assert (
        f"trained on:    19,200 examples (300 steps of 64): {training.epochs:.2f} epochs of the "
        f"{training.train_records:,}-example train split"
    ) in result.stdout
    assert "WARNING" not in result.stdout
    costs = {cost.node_id: cost for cost in summary.costs}
    assert set(costs) == set(summary.executed)
    assert "StatisticsGen" not in costs
    for node_id in ("ShardedExampleGen", "Transform", "Trainer", "Evaluator"):
        assert costs[node_id].cpu_seconds > 0 and costs[node_id].wall_seconds > 0, node_id
    for node_id in ("ShardedExampleGen", "Trainer", "Evaluator"):
        assert costs[node_id].records_per_second > 0, node_id
        assert re.search(rf"^ +{node_id} +[0-9.]+ +[0-9.]+ +[0-9,]+  \w", result.stdout, re.M)
    assert costs["ShardedExampleGen"].records == 344
    assert costs["Trainer"].records == 19_200
    assert costs["Evaluator"].records == 344 - training.train_records
    # Transform's analysis came from the statistics: it read no record, and says no rate.
    assert costs["Transform"].records is None
    assert re.search(r"^ +Transform +[0-9.]+ +[0-9.]+$", result.stdout, re.M)


def _write_houses_csv(folder: Path, rows: int = 600) -> None:
    rng = random.Random(7)
    folder.mkdir()
    with open(folder / "houses.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["rooms", "area_m2", "district", "price_k"])
        for _ in range(rows):
            rooms = rng.randint(1, 6)
            area = round(rng.uniform(25, 200), 1)
            district = rng.choice(["north", "south", "centre"])
            bonus = {"north": 0, "south": 40, "centre": 120}[district]
            price = round(2.5 * area + 15 * rooms + bonus + rng.gauss(0, 10), 1)
            writer.writerow([rooms, area, district, price])


def test_other_csv_regression_trains_evaluates_and_pushes(tmp_path):
    data = tmp_path / "houses"
    _write_houses_csv(data)
    output = tmp_path / "out"
    result = run_cli(
        "run",
        "--data",
        str(data),
        "--label",
        "price_k",
        "--problem",
        "regression",
        "--output",
        str(output),
        # Passes over the train split instead of steps: about 400 steps.
        "--epochs",
        "128",
        "--max-mae",
        "60",
        # A file cache in a folder of its own, and a bigger batch.
        "--cache",
        str(tmp_path / "cache"),
        "--batch-size",
        "128",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "schema: inferred by SchemaGen" in result.stdout
    summary = run_summary(output, "houses", result.stdout)
    assert summary.blessed and summary.pushed_model is not None
    training = summary.training
    assert (training.asked, training.batch_size) == ("epochs", 128)
    assert training.steps == math.ceil(128 * training.train_records / 128)
    # Prices spread over roughly 100-700 (std about 130); a model that learnt the
    # linear relation errs far less.
    assert summary.metrics["mean_absolute_error"] < 60
    assert _recorded_task(output, "houses", result.stdout) == ("price_k", "regression")
    assert os.path.isdir(output / "pipeline_root" / "houses" / "SchemaGen")
    # The Trainer removes its file cache when training is done.
    assert (tmp_path / "cache").is_dir() and not any((tmp_path / "cache").iterdir())
    # The push gate on a regression: the same model with its predictions 25k too high
    # is held back against it, its mean absolute error's increase named with its interval.
    examples = run_output(output, "houses", result.stdout, "ShardedExampleGen", "examples")
    config = make_eval_config(
        Task(label="price_k", problem="regression"),
        EvaluationThresholds(max_mean_absolute_error=200),
    )
    # TFMA's mean absolute and squared errors, computed by the batched Evaluator as
    # TFMA computes them (against the same model as the baseline: diffs too).
    model = row_by_row_model(summary.model, tmp_path / "model")
    runs = [
        evaluate(path, examples.uri, model, config, tmp_path / path.__name__, baseline=model)
        for path in (TfmaPathExecutor, Executor)
    ]
    assert runs[0][1] and runs[1][1]
    assert assert_same_evaluation(runs[0][0], runs[1][0]) >= 2 * 3
    worse = altered_model(summary.model, tmp_path / "worse", None, lambda _, p: p + 25.0)
    uri, blessed, ui = evaluate_with_ui(
        Executor, examples.uri, worse, config, tmp_path / "gate", baseline=summary.model
    )
    change = paired_change.read(uri)
    assert not blessed and change.regressed and change.low > 0
    assert change.metric == "mean_absolute_error" and not change.higher_is_better
    assert markdown_text(change.sentence()) in Path(ui["evaluation_summary"].uri).read_text()


def _penguins_model_and_examples(penguins_run):
    """The bundled run's summary and its examples' folder."""
    output, result = penguins_run
    (examples,) = (
        output / "pipeline_root" / "penguins" / "ShardedExampleGen" / "examples"
    ).iterdir()
    return run_summary(output, "penguins", result.stdout), examples


@pytest.mark.parametrize("min_accuracy, blessed", [(0.5, True), (0.999, False)])
def test_batched_evaluator_computes_what_tfma_computes(
    penguins_run, tmp_path, min_accuracy, blessed
):
    summary, examples = _penguins_model_and_examples(penguins_run)
    # Slices, per-class AUCs and their macro average, the confusion matrix, and
    # a baseline (the same model) so that change thresholds and diffs count too.
    config = make_eval_config(
        Task(label="species"),
        EvaluationThresholds(min_accuracy=min_accuracy),
        EvaluationOptions(slice_by=("island",), num_classes=3),
    )
    model = row_by_row_model(summary.model, tmp_path / "model")
    runs = {
        path.__name__: evaluate(
            path,
            str(examples),
            model,
            config,
            tmp_path / path.__name__,
            baseline=model,
            label_vocabulary="species_vocab",
        )  # fmt: skip
        for path in (TfmaPathExecutor, Executor)
    }
    (tfma_dir, tfma_blessed), (batched_dir, batched_blessed) = runs.values()
    assert tfma_blessed == batched_blessed == blessed
    # Overall and 3 islands: example count, accuracy, 3 AUCs and their macro average, for
    # the candidate, the baseline, and their difference.
    assert assert_same_evaluation(tfma_dir, batched_dir) >= 4 * 6 * 3
    # The class names by id, beside either path's evaluation.
    for folder in (tfma_dir, batched_dir):
        assert read_label_classes(folder).names == tuple(
            (Path(summary.model) / "Format-Serving" / "assets" / "species_vocab")
            .read_text()
            .split()
        )


def _rotated(share: int):
    """Rotates the class scores by one class on the rows whose record hashes below
    share/256: those rows' predicted class changes."""

    def alter(examples, scores):
        rows = tf.strings.to_hash_bucket_fast(examples, 256) < share
        return tf.where(rows[:, None], tf.roll(scores, 1, axis=1), scores)

    return alter


class _AbslRecords(logging.Handler):
    """The messages absl's logger passes at INFO (``absl.logging.set_verbosity(INFO)``, as
    TFX's examples set it) while in use."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self):
        from absl import logging as absl_logging

        self._verbosity = absl_logging.get_verbosity()
        absl_logging.set_verbosity(absl_logging.INFO)
        logging.getLogger("absl").addHandler(self)
        return self

    def __exit__(self, *_) -> None:
        from absl import logging as absl_logging

        logging.getLogger("absl").removeHandler(self)
        absl_logging.set_verbosity(self._verbosity)


@pytest.mark.parametrize("share, blessed", [(3, True), (96, False)])
def test_the_push_gate_holds_back_only_a_loss_beyond_the_noise(
    penguins_run, tmp_path, share, blessed
):
    summary, examples = _penguins_model_and_examples(penguins_run)
    config = make_eval_config(Task(label="species"), EvaluationThresholds(min_accuracy=0.5))
    # The pipeline's model as the baseline; as the candidate, the same model with
    # the predicted class changed on about 1% of the rows (noise) or 37% (a loss).
    candidate = altered_model(summary.model, tmp_path / "candidate", SCORES_OUTPUT, _rotated(share))
    # Which path ran, said where a TFX user sees it: absl's logger at the verbosity TFX's
    # examples set (issue 91, finding 12: the standard root logger, at WARNING, hid it).
    said = _AbslRecords()
    with said:
        uri, was_blessed, ui = evaluate_with_ui(
            Executor, str(examples), candidate, config, tmp_path / "gate", baseline=summary.model
        )
    assert [m for m in said.messages if "by batched predictions" in m], said.messages
    change = paired_change.read(uri)
    assert was_blessed == blessed == (not change.regressed)
    assert change.rows == summary.metrics["example_count"]
    assert change.candidate <= change.baseline
    markdown = Path(ui["evaluation_summary"].uri).read_text()
    failures = [
        failure.message
        for per_slice in tfma.load_validation_result(uri).metric_validations_per_slice
        for failure in per_slice.failures
    ]
    blessing = tmp_path / "gate" / "blessing"
    if blessed:
        assert not failures and (blessing / "BLESSED").exists()
        assert f"Against the baseline: {markdown_text(change.sentence())}." in markdown
        assert "within noise of the baseline" in change.sentence()
    else:
        # TFX's Pusher reads the blessing file; the reason names the metric, the
        # difference and its interval.
        assert failures == [change.sentence()] and (blessing / "NOT_BLESSED").exists()
        assert f"- {markdown_text(change.sentence())}" in markdown
        assert f"accuracy {change.candidate:.4f} vs {change.baseline:.4f}" in failures[0]
        assert f"{change.difference:+.4f} [{change.low:+.4f}, {change.high:+.4f}]" in failures[0]
