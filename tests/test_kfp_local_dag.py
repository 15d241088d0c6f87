"""The compiled Kubeflow pipeline, all its tasks, run in the component image by kfp.local.

kfp.local orders the tasks, builds every ExecutorInput, substitutes the
placeholders and, with its DockerRunner, runs each task's command in the image
the spec names: the cpu image built from docker/Dockerfile (`make image`),
through podman's Docker API, as the image's UID 1000 with the venv read-only,
the pipeline root mounted at its own path as kfp.local mounts it.
``kfp_local_runs`` changes only the input artifact typing, to the open-source
backend's. Over data in two daily spans, into one pipeline root, as a
recurring run and a backfill would: the whole DAG with ExampleGen on Beam for
the latest span (the parameter's default), then, compiled for Spark
(``local[2]``: the JVM and Spark's Python workers inside the container),
ExampleGen and the schema it reads for span 1 (the run's ``span`` argument;
the rest of that DAG is the same tasks as Beam's, on the same records, which
test_example_gen_spark compares record for record).

Each task's executor output is then read as the backend's launcher reads it:
``protojson.Unmarshal`` (strict: an unknown field fails) into
``ExecutorOutput``, whose messages in kfp-pipeline-spec 0.6.0 are those of the
backend's ``api/v2alpha1/pipeline_spec.proto`` at 2.4.1 and 2.5.0 (checked
below).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import farmhash
import pytest
import yaml
from google.protobuf import json_format, text_format
from google.protobuf.descriptor import FieldDescriptor
from kfp.pipeline_spec import pipeline_spec_pb2
from kfp_local_runs import TaskRecord, run_compiled_pipeline, with_tasks_only
from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2, statistics_pb2

from component_image import chown_for_the_image, podman
from conftest import PIPELINE_COMPONENTS, REPO_ROOT, compile_in_process
from kfp_ui_layout import (
    check_confusion_matrix,
    metrics_table_pages,
    render_markdown,
    shown_text,
)
from report_browser import load_as_kfp_ui_shows
from tfrecord_pipelines.kubeflow import input_fingerprints

pytestmark = [pytest.mark.e2e, pytest.mark.image]

# The pipeline's components, then the Reporter (the run report, for KFP's UI).
TASKS = (*PIPELINE_COMPONENTS, "Reporter")
LOCK = REPO_ROOT / "uv.lock"
# ExecutorOutput and the messages it holds, as written in kubeflow/pipelines'
# api/v2alpha1/pipeline_spec.proto at tag 2.5.0 and at 873e9dedd766, the api
# module backend 2.4.1's go.mod pins: field -> (number, type).
BACKEND_EXECUTOR_OUTPUT = {
    "ml_pipelines.ExecutorOutput": {
        "parameters": (1, "map<string, ml_pipelines.Value>"),
        "artifacts": (2, "map<string, ml_pipelines.ArtifactList>"),
        "parameter_values": (3, "map<string, google.protobuf.Value>"),
    },
    "ml_pipelines.Value": {
        "int_value": (1, "int64"),
        "double_value": (2, "double"),
        "string_value": (3, "string"),
    },
    "ml_pipelines.ArtifactList": {"artifacts": (1, "repeated ml_pipelines.RuntimeArtifact")},
    "ml_pipelines.RuntimeArtifact": {
        "name": (1, "string"),
        "type": (2, "ml_pipelines.ArtifactTypeSchema"),
        "uri": (3, "string"),
        "properties": (4, "map<string, ml_pipelines.Value>"),
        "custom_properties": (5, "map<string, ml_pipelines.Value>"),
        "metadata": (6, "google.protobuf.Struct"),
    },
    "ml_pipelines.ArtifactTypeSchema": {
        "schema_title": (1, "string"),
        "schema_uri": (2, "string"),
        "instance_schema": (3, "string"),
        "schema_version": (4, "string"),
    },
}
_TYPE_NAMES = {
    getattr(FieldDescriptor, name): name[len("TYPE_") :].lower()
    for name in dir(FieldDescriptor)
    if name.startswith("TYPE_")
}


def _field_type(field: FieldDescriptor) -> str:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key, value = message.fields
        return f"map<{_field_type(key)}, {_field_type(value)}>"
    name = message.full_name if message is not None else _TYPE_NAMES[field.type]
    return f"repeated {name}" if field.label == FieldDescriptor.LABEL_REPEATED else name


def _messages(descriptor, found: dict) -> dict:
    """Every ml_pipelines message reachable from descriptor: field -> (number, type)."""
    if descriptor.full_name in found or not descriptor.full_name.startswith("ml_pipelines."):
        return found
    found[descriptor.full_name] = {f.name: (f.number, _field_type(f)) for f in descriptor.fields}
    for field in descriptor.fields:
        message = field.message_type
        if message is None:
            continue
        inner = message.fields if message.GetOptions().map_entry else [field]
        for f in inner:
            if f.message_type is not None:
                _messages(f.message_type, found)
    return found


def test_installed_executor_output_is_the_backends():
    assert _messages(pipeline_spec_pb2.ExecutorOutput.DESCRIPTOR, {}) == BACKEND_EXECUTOR_OUTPUT


# ExampleGen's engine in each run of the DAG: the compile options that choose it.
ENGINES = {
    "beam": (),
    "spark": ("--example-gen-engine", "spark", "--spark-master", "local[2]"),
}
IMAGE_USER = 1000


# The latest span, which a run without a span argument converts.
LATEST_SPAN = 2


def _write_spans(data: Path) -> None:
    """The bundled penguins in two daily span folders, every other row each."""
    header, *rows = (REPO_ROOT / "data" / "penguins" / "penguins.csv").read_text().splitlines()
    for span in (1, LATEST_SPAN):
        (data / f"day-{span}").mkdir(parents=True)
        day = rows[span - 1 :: 2]
        (data / f"day-{span}" / "penguins.csv").write_text("\n".join([header, *day]) + "\n")


# Each engine's run: the span it asks for (None: the parameter's default, the latest) and
# the tasks it runs (None: the whole DAG; else these and the tasks they depend on).
RUNS = {"beam": (None, None), "spark": (1, ("ShardedExampleGen",))}
# The engine whose run is the whole DAG.
WHOLE_DAG = "beam"


@pytest.fixture(scope="module")
def dags(tmp_path_factory, component_image, docker_api):
    """Compiles the bundled penguins pipeline, over two daily spans, for the image, once for
    each engine, and runs each in it (``RUNS``: the tasks and span), into one pipeline root.

    kfp.local mounts the pipeline root alone into each task's container, so
    the data and the serving folder are inside it; the root belongs to the
    image's user, as a pod's volume with fsGroup would. The bundled schema is
    given by its repository path, which compile points at the image's copy.

    Returns each engine's spec, task records and span converted, and the pipeline root.
    """
    root = tmp_path_factory.mktemp("kfp_docker") / "pipeline_root"
    data = root / "data" / "penguins"
    _write_spans(data)
    chown_for_the_image(root)
    runs = {}
    for engine, (span, tasks) in RUNS.items():
        package = root.parent / f"penguins-{engine}.yaml"
        compiled = compile_in_process(
            *("--data", f"{data}/day-{{SPAN}}/", "--label", "species"),
            *("--schema", str(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt")),
            *("--serving-dir", str(root / "serving"), "--train-steps", "200"),
            *("--image", component_image, "--gpus", "0"),
            *ENGINES[engine],
            *("--output", str(package)),
        )
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        spec = pipeline_spec_pb2.PipelineSpec()
        json_format.ParseDict(next(yaml.safe_load_all(package.read_text())), spec)
        if tasks is not None:
            package = with_tasks_only(package, tasks, root.parent / f"{engine}-part.yaml")
        arguments = None if span is None else {"span": str(span)}
        runs[engine] = (spec, run_compiled_pipeline(package, root, arguments), span or LATEST_SPAN)
    return runs, root


@pytest.fixture(params=sorted(ENGINES))
def engine_run(request, dags):
    """One engine's run: its spec, task records, the pipeline root and the span it converted."""
    runs, root = dags
    spec, records, span = runs[request.param]
    return spec, records, root, span


@pytest.fixture
def dag(dags):
    """The run of the whole DAG: its spec, task records, the pipeline root and its span."""
    runs, root = dags
    spec, records, span = runs[WHOLE_DAG]
    return spec, records, root, span


def _executor_output(record: TaskRecord) -> pipeline_spec_pb2.ExecutorOutput:
    """The executor output file, read as strictly as the launcher's protojson.Unmarshal."""
    assert record.executor_output_text is not None, "the task wrote no executor output"
    return json_format.Parse(record.executor_output_text, pipeline_spec_pb2.ExecutorOutput())


def _output(record: TaskRecord, name: str) -> tuple[Path, dict]:
    """Output NAME's URI as a path and its metadata, merged as the launcher merges them."""
    [reported] = _executor_output(record).artifacts[name].artifacts
    return Path(reported.uri), json_format.MessageToDict(reported.metadata)


def _input_uri(record: TaskRecord, name: str) -> Path:
    return Path(record.executor_input.inputs.artifacts[name].artifacts[0].uri)


def test_every_task_ran_once_through_the_entry_point_and_wrote_every_output(dag, component_image):
    spec, records, _, _ = dag
    # And the fingerprint task (input_fingerprints), which hands ImportSchemaGen the schema
    # file's digest for KFP's cache key: a parameter, which kfp.local passes on too.
    assert set(records) == {*TASKS, input_fingerprints.TASK}
    fingerprint = _executor_output(records[input_fingerprints.TASK]).parameter_values
    given = records["ImportSchemaGen"].executor_input.inputs.parameter_values
    assert given[input_fingerprints.FINGERPRINT] == fingerprint["ImportSchemaGen"]
    assert fingerprint["ImportSchemaGen"].string_value.startswith("schema_file=sha256:")
    for task in TASKS:
        container = spec.deployment_spec["executors"][spec.components[task].executor_label]
        assert container["container"]["image"] == component_image
        assert list(container["container"]["command"]) == [
            "python",
            "-m",
            "tfrecord_pipelines.kubeflow.kfp_executor",
        ]
        record = records[task]
        assert record.returncode == 0, task
        executor_output = _executor_output(record)
        defined = spec.components[task].output_definitions.artifacts
        assert set(executor_output.artifacts) == set(defined), task
        for name in defined:
            [reported] = executor_output.artifacts[name].artifacts
            [given] = record.executor_input.outputs.artifacts[name].artifacts
            assert reported.uri == given.uri, (task, name)
            # A Markdown or HTML page is a file at its URI, where KFP's UI reads it.
            title = defined[name].artifact_type.schema_title
            is_page = title in ("system.Markdown", "system.HTML")
            assert Path(reported.uri).is_file() if is_page else Path(reported.uri).is_dir(), (
                task,
                name,
            )


def test_upstream_artifacts_arrive_untyped_as_from_the_backend_driver(dag):
    _, records, _, _ = dag
    untyped = [
        (task, name)
        for task in TASKS
        for name, artifacts in records[task].executor_input.inputs.artifacts.items()
        for artifact in artifacts.artifacts
        if artifact.type.WhichOneof("kind") == "instance_schema"
        and artifact.type.instance_schema == ""
    ]
    assert ("Transform", "examples") in untyped
    assert ("Pusher", "model_blessing") in untyped
    assert len(untyped) == sum(len(records[task].executor_input.inputs.artifacts) for task in TASKS)


def _curated_schema() -> set[str]:
    schema = text_format.Parse(
        (REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt").read_text(), schema_pb2.Schema()
    )
    return {feature.name for feature in schema.feature}


def _count_tfrecords(path: Path) -> int:
    opener = gzip.open if path.name.endswith(".gz") else open
    count = 0
    with opener(path, "rb") as f:
        while header := f.read(12):  # uint64 length, uint32 length CRC
            length = int.from_bytes(header[:8], "little")
            assert len(f.read(length + 4)) == length + 4, f"{path}: truncated record"
            count += 1
    return count


def _split_counts(examples: Path) -> dict[str, int]:
    return {
        split: sum(
            _count_tfrecords(shard)
            for shard in sorted((examples / f"Split-{split}").glob("data_tfrecord-*"))
        )
        for split in ("train", "eval")
    }


def test_schema_and_examples(engine_run):
    _, records, folder, span = engine_run
    schema_uri, _ = _output(records["ImportSchemaGen"], "schema")
    schema = text_format.Parse((schema_uri / "schema.pbtxt").read_text(), schema_pb2.Schema())
    assert {feature.name for feature in schema.feature} == _curated_schema()

    examples, metadata = _output(records["ShardedExampleGen"], "examples")
    assert json.loads(metadata["split_names"]) == ["train", "eval"]
    counts = _split_counts(examples)
    assert min(counts.values()) > 0, counts
    assert sum(counts.values()) == metadata["records_written"]
    day = folder / "data" / "penguins" / f"day-{span}" / "penguins.csv"
    rows = len(day.read_text().splitlines()) - 1
    assert metadata["records_written"] + metadata["quarantined_count"] == rows
    # Set by TFX's file-based ExampleGen driver, which the entry point runs.
    assert metadata["input_fingerprint"].startswith("split:single_split,num_files:1,")
    _, quarantine = _output(records["ShardedExampleGen"], "quarantine")
    assert quarantine["count"] == metadata["quarantined_count"]
    # The page KFP's UI shows for ExampleGen: its shards and the train split's features.
    page, _ = _output(records["ShardedExampleGen"], "examples_summary")
    text = page.read_text()
    assert text.startswith(f"## Examples: {int(metadata['records_written']):,} records in ")
    # As the UI renders it (issue 91, finding 2): every feature's name whole, no emphasis.
    rendered = render_markdown(text)
    shown = shown_text(rendered).split()
    assert "<em>" not in rendered and "<strong>" not in rendered
    assert all(feature in shown for feature in _curated_schema() - {"species"})


def test_statistics_and_validation(dag):
    _, records, _, _ = dag
    examples, _ = _output(records["ShardedExampleGen"], "examples")
    counts = _split_counts(examples)
    # ExampleGen describes its records in its own pass: there is no StatisticsGen.
    statistics, _ = _output(records["ShardedExampleGen"], "statistics")
    for split, count in counts.items():
        stats = statistics_pb2.DatasetFeatureStatisticsList.FromString(
            (statistics / f"Split-{split}" / "FeatureStats.pb").read_bytes()
        )
        [dataset] = stats.datasets
        assert dataset.num_examples == count
        assert {".".join(f.path.step) for f in dataset.features} == _curated_schema()

    anomalies_uri, metadata = _output(records["ExampleValidator"], "anomalies")
    assert metadata["blessed"] == {"train": 1, "eval": 1}
    for split in counts:
        anomalies = anomalies_pb2.Anomalies.FromString(
            (anomalies_uri / f"Split-{split}" / "SchemaDiff.pb").read_bytes()
        )
        assert dict(anomalies.anomaly_info) == {}


def test_transform_trainer_evaluator_pusher(dag):
    _, records, folder, _ = dag
    transform_graph, _ = _output(records["Transform"], "transform_graph")
    assert (transform_graph / "transform_fn" / "saved_model.pb").is_file()
    assert _input_uri(records["Trainer"], "transform_graph") == transform_graph

    model, _ = _output(records["Trainer"], "model")
    assert (model / "Format-Serving" / "saved_model.pb").is_file()
    assert _input_uri(records["Evaluator"], "model") == model

    blessing, metadata = _output(records["Evaluator"], "blessing")
    assert metadata["blessed"] == 1
    assert (blessing / "BLESSED").is_file()
    evaluation, _ = _output(records["Evaluator"], "evaluation")
    assert any(evaluation.iterdir())

    _, pushed = _output(records["Pusher"], "pushed_model")
    assert pushed["pushed"] == 1
    destination = Path(pushed["pushed_destination"])
    assert destination.parent == folder / "serving"
    assert (destination / "saved_model.pb").is_file()


def test_the_evaluator_writes_what_kfps_ui_draws(dag):
    spec, records, _, _ = dag
    titles = {
        name: definition.artifact_type.schema_title
        for name, definition in spec.components["Evaluator"].output_definitions.artifacts.items()
    }
    assert {titles[n] for n in ("metrics", "classification_metrics", "evaluation_summary")} == {
        "system.Metrics",
        "system.ClassificationMetrics",
        "system.Markdown",
    }
    _, metrics = _output(records["Evaluator"], "metrics")
    # Every custom property of a system.Metrics is a row of the UI's table: numbers only,
    # on one page, the headline among them (issue 91, finding 3: four pages on bca8a10).
    assert all(isinstance(value, float) for value in metrics.values()), metrics
    [table] = metrics_table_pages(metrics)
    assert "sparse_categorical_accuracy" in dict(table)
    assert not any("95%" in name or "(Adelie)" in name for name, _ in table)
    rows = metrics["eval rows"]
    _, classification = _output(records["Evaluator"], "classification_metrics")
    categories, counts = check_confusion_matrix(classification["confusionMatrix"])
    assert sorted(categories) == ["Adelie", "Chinstrap", "Gentoo"]
    assert sum(map(sum, counts)) == rows
    # Three classes: no ROC curve.
    assert "confidenceMetrics" not in classification
    page, _ = _output(records["Evaluator"], "evaluation_summary")
    text = page.read_text()
    assert text.startswith("## Evaluation: blessed") and f"on {int(rows):,} eval rows" in text
    # The intervals are here, each metric's name whole as the UI renders it.
    rendered = render_markdown(text)
    shown = " ".join(shown_text(rendered).split())
    assert "<em>" not in rendered
    accuracy = metrics["sparse_categorical_accuracy"]
    assert f"sparse_categorical_accuracy {accuracy:.4f} [" in shown


def test_the_last_task_writes_the_run_report_kfps_ui_shows(dag, chromium_endpoint, tmp_path):
    spec, records, _, _ = dag
    titles = {
        name: definition.artifact_type.schema_title
        for name, definition in spec.components["Reporter"].output_definitions.artifacts.items()
    }
    assert titles == {"report": "system.HTML", "training": "system.Metrics"}
    # It follows the Pusher, the last of the others, so the run's whole outcome is on the page.
    assert "Pusher" in spec.root.dag.tasks["Reporter"].dependent_tasks
    # The Trainer's verdict on one page of the UI's scalar table, beside its figures.
    _, training = _output(records["Reporter"], "training")
    [table] = metrics_table_pages(training)
    shown = dict(table)
    assert shown["bound by"] in ('"device-bound"', '"host-bound"', '"input-bound"'), shown
    assert shown["steps a call"] == "200.0"
    assert {"input stall (% of step time)", "host stall (% of step time)"} <= set(shown)
    page, _ = _output(records["Reporter"], "report")
    html = page.read_text()
    loaded = load_as_kfp_ui_shows(chromium_endpoint, html, tmp_path / "report.png")
    assert loaded.errors == []
    # It reads in the task panel's frame: nothing wider, every link of its bar in view.
    assert (loaded.overflow_px, loaded.hidden_links) == (0, [])
    # Self-contained: the frame requested nothing.
    assert loaded.requests == []
    assert loaded.sections == [
        "components",
        "data",
        "quarantine",
        "features",
        "schema",
        "training",
        "evaluation",
    ]
    _, quarantine = _output(records["ShardedExampleGen"], "quarantine")
    assert loaded.counts["quarantine-count"] == str(int(quarantine["count"]))
    assert loaded.counts["anomaly-count"] == "0"
    _, metrics = _output(records["Evaluator"], "metrics")
    assert f"{int(metrics['eval rows']):,}</span> rows" in html
    assert f'<td class="num">{metrics["sparse_categorical_accuracy"]:.4g}</td>' in html
    _, pushed = _output(records["Pusher"], "pushed_model")
    [push] = [line for line in html.splitlines() if 'id="push"' in line]
    assert f'Pushed to <span class="path">{pushed["pushed_destination"]}</span>' in push
    # Each task's state and time are on KFP's run page, which the page points to.
    assert 'id="components-elsewhere"' in html


def test_each_run_converts_the_span_its_argument_names(dags):
    runs, folder = dags
    for spec, run, span in runs.values():
        parameter = spec.root.input_definitions.parameters["span"]
        assert parameter.default_value.string_value == "latest"
        asked = run["ShardedExampleGen"].executor_input.inputs.parameter_values["requested_span"]
        assert asked.string_value == ("latest" if span == LATEST_SPAN else str(span))
        examples, metadata = _output(run["ShardedExampleGen"], "examples")
        # TFX's driver writes the span as a custom property, which the executor output
        # names "custom:span" (Examples also has a "span" property).
        assert metadata["custom:span"] == span
        plan = json.loads((examples / "shard_plan.json").read_text())
        assert (plan["span"], plan["input_pattern"]) == (span, f"day-{span}/*.csv")
    assert {span for _, _, span in runs.values()} == {1, LATEST_SPAN}
    # The whole DAG's run pushed its model, the only version in the serving folder.
    _, pushed = _output(runs[WHOLE_DAG][1]["Pusher"], "pushed_model")
    assert pushed["pushed"] == 1
    assert [p.name for p in (folder / "serving").iterdir()] == [
        Path(pushed["pushed_destination"]).name
    ]


def test_tasks_ran_as_the_images_user_with_its_schemas(engine_run):
    spec, records, _, _ = engine_run
    for task in records:
        for name in spec.components[task].output_definitions.artifacts:
            uri, _ = _output(records[task], name)
            assert uri.stat().st_uid == IMAGE_USER, (task, name)
    # compile pointed the bundled schema at the image's copy, which the task read.
    parameters = records["ImportSchemaGen"].executor_input.inputs.parameter_values
    assert parameters["schema_file"].string_value == "/app/schemas/penguins/schema.pbtxt"


def test_example_gen_ran_on_its_engine_in_the_container(engine_run, request):
    _, records, _, _ = engine_run
    logs = records["ShardedExampleGen"].logs
    on_spark = "Converting on Spark (local[2]" in logs
    assert on_spark == (request.node.callspec.params["engine_run"] == "spark"), logs[-2000:]


def test_the_image_runs_as_a_numeric_user_with_a_read_only_environment(component_image):
    probe = podman(
        "run",
        "--rm",
        component_image,
        "python",
        "-c",
        "import os, shutil, tfrecord_pipelines; "
        "print(os.getuid(), os.access('/app/.venv/lib', os.W_OK), "
        "os.access(os.environ['HOME'], os.W_OK), bool(shutil.which('java')), "
        "tfrecord_pipelines.__file__)",
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    uid, venv_writable, home_writable, has_java, package = probe.stdout.split()
    assert (uid, venv_writable, home_writable, has_java) == ("1000", "False", "True", "True")
    assert package.startswith("/app/pipelines/")
    # Everything in HOME is the user's: a build step's cache left there (root's) would keep
    # pip and uv from caching in ~/.cache.
    others = podman("run", "--rm", component_image, "find", "/home/app", "!", "-user", "1000")
    assert others.returncode == 0 and others.stdout == "", others.stdout[:500] + others.stderr


def test_the_packages_built_from_source_run_compiled_in_the_image(component_image):
    # The runtime has no compiler: docker/compiled_wheels.py built these in the wheels
    # stage. crcmod's build falls back to pure Python without one; farmhash has no fallback.
    probe = podman(
        "run", "--rm", component_image, "python", "-c",
        "import farmhash, crcmod._crcfunext, importlib.metadata as m; "
        "print(farmhash.hash64('tfrecord'), m.version('pyfarmhash'), m.version('crcmod'))",
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-2000:]
    hashed, *versions = probe.stdout.split()
    assert int(hashed) == farmhash.hash64("tfrecord")
    locked = {p["name"]: p["version"] for p in tomllib.loads(LOCK.read_text())["package"]}
    assert versions == [locked["pyfarmhash"], locked["crcmod"]]


def test_an_image_built_from_the_same_inputs_is_not_built_again(component_image):
    # The session's build labelled the image with its inputs' digest; the same inputs again
    # are found up to date, without podman's build (which hashes the 4 GB environment).
    again = subprocess.run(
        [sys.executable, str(REPO_ROOT / "docker" / "build_image.py"), "--target", "cpu"],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{component_image} is up to date: built from the same inputs" in again.stdout
    assert "Building" not in again.stdout
