"""The compiled Kubeflow spec passes kfp's parser and the KFP server's upload checks."""

import json
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format
from kfp.kubernetes import kubernetes_executor_config_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

from conftest import PIPELINE_COMPONENTS, REPO_ROOT, compile_in_process, run_cli
from tfrecord_pipelines.cli.data_service import KUBERNETES_DISPATCHER
from tfrecord_pipelines.components.private_api.kfp_private import load_pipeline_file

# The pipeline's components, then the task that writes the run report.
EXPECTED_TASKS = {*PIPELINE_COMPONENTS, "Reporter", "InputFingerprints"}
# The fingerprint task's executor (input_fingerprints), which runs no TFX executor.
FINGERPRINTS = "InputFingerprints_executor"
SPARK_ON_KUBERNETES = "k8s://https://kubernetes.default.svc:443"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    output = tmp_path_factory.mktemp("kfp") / "penguins.yaml"
    result = run_cli(
        "compile",
        "--output",
        str(output),
        "--image",
        "registry.example/tp:1",
        "--trainer-image",
        "registry.example/tp:1-gpu",
        "--trainer-volume",
        "tf-cache:/cache",
        "--gpus",
        "2",
        "--trainer-cpu",
        "8",
        "--trainer-memory",
        "32Gi",
        "--data-service",
        KUBERNETES_DISPATCHER,
        "--example-gen-engine",
        "spark",
        "--spark-master",
        SPARK_ON_KUBERNETES,
        "--spark-conf",
        "spark.kubernetes.namespace=kubeflow",
        "--shard-size",
        "64MiB",
    )
    assert result.returncode == 0, result.stderr
    assert str(output) in result.stdout
    return output


def _pipeline_spec(compiled) -> dict:
    return next(yaml.safe_load_all(compiled.read_text()))


def _platform_executors(compiled) -> dict:
    documents = list(yaml.safe_load_all(compiled.read_text()))
    assert len(documents) == 2
    return documents[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]


def test_spec_parses_with_kfp_into_pipeline_spec(compiled):
    # kfp.Client's own loader: the same parse upload_pipeline and create_run do.
    loaded = load_pipeline_file(str(compiled))
    spec = loaded.pipeline_spec
    assert "Trainer_executor" in str(loaded.platform_spec)
    # And a strict parse of the raw document (unknown fields are errors).
    json_format.ParseDict(_pipeline_spec(compiled), pipeline_spec_pb2.PipelineSpec())
    # What KFP's API server checks on upload (backend/src/apiserver/template/v2_template.go).
    assert spec.schema_version == "2.1.0"
    assert spec.pipeline_info.name == "penguins"
    assert set(spec.root.dag.tasks) == EXPECTED_TASKS


def test_every_output_artifact_has_a_name_of_its_own(compiled):
    """KFP's UI labels an artifact in the graph and the Artifacts list by its output's name
    alone: two tasks' outputs of one name (ExampleGen's and the Evaluator's `summary` on
    bca8a10) cannot be told apart (issue 91, finding 1)."""
    spec = _pipeline_spec(compiled)
    names = [
        name
        for component in spec["components"].values()
        for name in component.get("outputDefinitions", {}).get("artifacts", {})
    ]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_every_artifact_type_is_a_title_the_task_panel_shows_short(compiled):
    """KFP's task panel shows an artifact type's ``schemaTitle``, else its whole
    ``instanceSchema`` flattened to a line ("title: tfx.Examples type: object properties:
    ...", issue 91, finding 4): every input and output is typed by its title alone."""
    spec = _pipeline_spec(compiled)
    types = [
        artifact["artifactType"]
        for component in spec["components"].values()
        for side in ("inputDefinitions", "outputDefinitions")
        for artifact in component.get(side, {}).get("artifacts", {}).values()
    ]
    assert {"schemaTitle": "tfx.Examples"} in types
    assert {"schemaTitle": "system.Metrics"} in types
    assert all(list(t) == ["schemaTitle"] for t in types), [
        t for t in types if list(t) != ["schemaTitle"]
    ]


def test_tfx_proto_parameters_are_one_line(compiled):
    """KFP's UI shows a parameter's text with its newlines escaped: TFX's indented eval_config
    was a line of \\n (issue 91, finding 5). Each is compact JSON, the same proto."""
    from tensorflow_model_analysis.proto import config_pb2

    tasks = _pipeline_spec(compiled)["root"]["dag"]["tasks"]
    constants = [
        p["runtimeValue"]["constant"]
        for task in tasks.values()
        for p in task["inputs"].get("parameters", {}).values()
        if "runtimeValue" in p
    ]
    assert not [c for c in constants if isinstance(c, str) and "\n" in c]
    eval_config = tasks["Evaluator"]["inputs"]["parameters"]["eval_config"]["runtimeValue"]
    parsed = json_format.Parse(eval_config["constant"], config_pb2.EvalConfig())
    assert parsed.metrics_specs and parsed.model_specs


def test_no_resolver_node(compiled):
    text = compiled.read_text()
    assert "resolver" not in text.lower()
    spec = _pipeline_spec(compiled)
    for executor in spec["deploymentSpec"]["executors"].values():
        assert "resolver" not in executor, executor


def test_components_run_in_the_given_images_with_the_project_entry_points(compiled):
    spec = _pipeline_spec(compiled)
    executors = spec["deploymentSpec"]["executors"]
    containers = {label: e["container"] for label, e in executors.items()}
    assert containers.pop(FINGERPRINTS)["command"] == [
        "python", "-m", "tfrecord_pipelines.kubeflow.fingerprint_task"
    ]  # fmt: skip
    assert containers["Trainer_executor"]["image"] == "registry.example/tp:1-gpu"
    assert {c["image"] for label, c in containers.items() if label != "Trainer_executor"} == {
        "registry.example/tp:1"
    }
    assert {tuple(c["command"]) for c in containers.values()} == {
        ("python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor")
    }
    # Every task hands the examples it writes on by reference (issue 75, finding 7): every
    # reader of them in this pipeline reads them from the store through the same entry point.
    assert all(c["args"][-1] == "--examples_in_store" for c in containers.values()), containers
    transform = spec["root"]["dag"]["tasks"]["Transform"]["inputs"]["parameters"]
    trainer = spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"]
    preprocessing_fn = "tfrecord_pipelines.components.transform.preprocessing.preprocessing_fn"
    assert preprocessing_fn in str(transform)
    assert "tfrecord_pipelines.components.trainer.run.run_fn" in str(trainer)


def test_every_task_reaches_the_roots_store_without_a_window(compiled, tmp_path):
    # ExampleGen writes its examples into the store and each reader reads them there, in the
    # one-shot pipeline as in the daily one: every task gets the store's Secret. No endpoint
    # is compiled in unless given (issue 89, finding 4: no one literal fits every release;
    # each task finds it as the launcher does, root_store).
    platform = _platform_executors(compiled)
    for label, executor in _pipeline_spec(compiled)["deploymentSpec"]["executors"].items():
        [secret] = platform[label]["secretAsEnv"]
        assert secret["secretName"] == "mlpipeline-minio-artifact", label
        names = {v["name"] for v in executor["container"].get("env", [])}
        assert "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT" not in names, label
    output = tmp_path / "given.yaml"
    given = compile_in_process(
        "--artifact-endpoint", "http://minio.store:9000", "--output", str(output)
    )
    assert given.returncode == 0, given.stderr
    for label, executor in _pipeline_spec(output)["deploymentSpec"]["executors"].items():
        env = {v["name"]: v["value"] for v in executor["container"]["env"]}
        assert env["TFRECORD_PIPELINES_ARTIFACT_ENDPOINT"] == "http://minio.store:9000", label


def test_compile_rejects_a_non_yaml_output(tmp_path):
    result = compile_in_process("--output", str(tmp_path / "p.json"))
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"error: --output {tmp_path / 'p.json'} must end in .yaml or .yml."
    )


def _executor(spec: dict, task: str) -> dict:
    component = spec["root"]["dag"]["tasks"][task]["componentRef"]["name"]
    label = spec["components"][component]["executorLabel"]
    return spec["deploymentSpec"]["executors"][label]


def test_the_trainer_asks_for_its_gpus_cpu_and_memory(compiled):
    spec = _pipeline_spec(compiled)
    resources = _executor(spec, "Trainer")["container"]["resources"]
    assert resources["accelerator"] == {
        "type": "nvidia.com/gpu",
        "count": "2",
        "resourceType": "nvidia.com/gpu",
        "resourceCount": "2",
    }
    assert resources["resourceCpuLimit"] == "8"
    assert resources["cpuLimit"] == 8.0
    assert resources["resourceMemoryLimit"] == "32Gi"
    assert resources["memoryLimit"] == pytest.approx(34.359738368)
    # Only the Trainer needs a GPU.
    assert "resources" not in _executor(spec, "Transform")["container"]


def test_training_options_reach_the_trainer(compiled):
    spec = _pipeline_spec(compiled)
    trainer = str(spec["root"]["dag"]["tasks"]["Trainer"]["inputs"]["parameters"])
    # The batch and the length are left to the Trainer, which knows the split's size.
    assert '"training": {"batch_size": null' in trainer.replace("\\", "")
    assert '"epochs": null' in trainer.replace("\\", "")


def test_tabular_trainer_reads_example_gens_shards_and_transform_only_analyzes(compiled):
    spec = _pipeline_spec(compiled)
    tasks = spec["root"]["dag"]["tasks"]
    trainer_examples = tasks["Trainer"]["inputs"]["artifacts"]["examples"]["taskOutputArtifact"]
    assert trainer_examples["producerTask"] == "ShardedExampleGen"
    assert (
        '"raw_examples": true'
        in tasks["Trainer"]["inputs"]["parameters"]["custom_config"]["runtimeValue"]["constant"]
    )
    transform = spec["components"][tasks["Transform"]["componentRef"]["name"]]
    assert "transformed_examples" not in transform["outputDefinitions"]["artifacts"]
    parameters = tasks["Transform"]["inputs"]["parameters"]
    assert parameters["disable_statistics"]["runtimeValue"]["constant"] == 1
    # Transform's analysis comes from ExampleGen's statistics of the same examples.
    statistics = tasks["Transform"]["inputs"]["artifacts"]["statistics"]["taskOutputArtifact"]
    assert statistics == {"producerTask": "ShardedExampleGen", "outputArtifactKey": "statistics"}
    # TrainArgs' num_steps left at 0: the Trainer plans from the split's size.
    train_args = tasks["Trainer"]["inputs"]["parameters"]["train_args"]["runtimeValue"]["constant"]
    assert "num_steps" not in train_args


def test_platform_spec_places_the_trainer_on_gpu_nodes_and_mounts_volumes(compiled):
    executors = _platform_executors(compiled)
    spec = _pipeline_spec(compiled)
    # Every task has the artifact store's Secret; only these two mount or select anything.
    assert set(executors) == set(spec["deploymentSpec"]["executors"])
    placed = {label for label, c in executors.items() if set(c) - {"secretAsEnv"}}
    assert placed == {"Trainer_executor", "Pusher_executor"}
    configs = {}
    for label, config in executors.items():
        configs[label] = json_format.ParseDict(
            config, kubernetes_executor_config_pb2.KubernetesExecutorConfig()
        )
    trainer = configs["Trainer_executor"]
    assert dict(trainer.node_selector.labels) == {"nvidia.com/gpu.present": "true"}
    assert [(t.key, t.operator, t.effect) for t in trainer.tolerations] == [
        ("nvidia.com/gpu", "Exists", "NoSchedule")
    ]
    assert [(m.constant, m.mount_path) for m in trainer.pvc_mount] == [("tf-cache", "/cache")]
    assert trainer.pvc_mount[0].pvc_name_parameter.runtime_value.constant.string_value == (
        "tf-cache"
    )
    pusher = configs["Pusher_executor"]
    # The default serving dir is /pipeline/serving_model/<name>, on k8s/'s claim.
    assert [(m.constant, m.mount_path) for m in pusher.pvc_mount] == [
        ("tfrecord-pipelines-serving", "/pipeline/serving_model")
    ]
    assert not pusher.tolerations and not pusher.node_selector.labels


def test_cpu_training_with_a_bucket_serving_dir_needs_no_platform_spec(tmp_path):
    # A gs:// pipeline root's tasks reach the store with the pod's own credentials: no Secret.
    output = tmp_path / "cpu.yaml"
    result = compile_in_process(
        "--output", str(output), "--image", "registry.example/tp:1", "--gpus", "0",
        "--serving-dir", "gs://bucket/models/penguins", "--artifact-secret", "none",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    documents = list(yaml.safe_load_all(output.read_text()))
    assert len(documents) == 1
    trainer = _executor(documents[0], "Trainer")["container"]
    assert trainer["image"] == "registry.example/tp:1"
    assert "resources" not in trainer


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--trainer-memory", "lots"], "Trainer memory 'lots' is not a positive Kubernetes"),
        (["--gpus", "-1"], "gpus must be 0 or more, got -1."),
        (["--gpu-toleration", "nvidia.com/gpu"], "Toleration 'nvidia.com/gpu' must be KEY"),
        (["--trainer-volume", "data"], "Volume 'data' must be CLAIM:/mount/path"),
    ],
)
def test_bad_trainer_resources_are_one_line_errors(flags, message, tmp_path):
    result = compile_in_process("--output", str(tmp_path / "p.yaml"), *flags)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: {message}")
    assert not (tmp_path / "p.yaml").exists()


def test_image_pipeline_with_a_module_file_compiles_for_pods(tmp_path, repo_root):
    module = tmp_path / "my_trainer.py"
    module.write_text("def run_fn(fn_args):\n    pass\n")
    output = tmp_path / "digits.yaml"
    settings = ("--data", str(repo_root / "data" / "digits"), "--module-file", str(module))
    result = compile_in_process(*settings, "--output", str(output), cwd=tmp_path)
    # A pod has only the volumes its spec mounts: the module file is in none of them.
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: Trainer is given {module}, which no volume")
    assert len(result.stderr.strip().splitlines()) == 1 and not output.exists()
    result = compile_in_process(
        *settings, "--volume", f"user-code:{tmp_path}", "--output", str(output), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    platforms = list(yaml.safe_load_all(output.read_text()))[1]["platforms"]["kubernetes"]
    mounted = {
        executor: [m["mountPath"] for m in config.get("pvcMount", [])]
        for executor, config in platforms["deploymentSpec"]["executors"].items()
    }
    # Mounted where a path under it is given: the Trainer, which imports the module file, and
    # InputFingerprints, which fingerprints it for the Trainer's cache key.
    assert sorted(e for e, paths in mounted.items() if str(tmp_path) in paths) == [
        FINGERPRINTS, "Trainer_executor"
    ]  # fmt: skip
    spec = _pipeline_spec(output)
    tasks = spec["root"]["dag"]["tasks"]

    def constant(task, name):
        return tasks[task]["inputs"]["parameters"][name]["runtimeValue"]["constant"]

    # The module file stays a path for the pods to import (no wheel in a
    # pipeline root that is only known at submission); only its run_fn is used.
    assert constant("Trainer", "module_file") == str(module)
    assert "run_fn" not in tasks["Trainer"]["inputs"]["parameters"]
    assert constant("Transform", "preprocessing_fn") == (
        "tfrecord_pipelines.components.transform.preprocessing.preprocessing_fn"
    )
    assert not list(tmp_path.glob("pipeline-root-set-at-submission*"))
    # Images: uncompressed shards for 10 readers, image statistics, no
    # transformed copy of the images; the Trainer reads ExampleGen's shards.
    assert constant("ShardedExampleGen", "source_format") == "images"
    # The bundled images where the image holds them.
    assert constant("ShardedExampleGen", "input_base") == "/app/data/digits"
    assert constant("ShardedExampleGen", "compression") == "none"
    assert constant("ShardedExampleGen", "num_readers") == 10
    # ExampleGen describes the images as images in its own pass (no StatisticsGen).
    assert "StatisticsGen" not in tasks
    trainer_examples = tasks["Trainer"]["inputs"]["artifacts"]["examples"]["taskOutputArtifact"]
    assert trainer_examples["producerTask"] == "ShardedExampleGen"
    transform = spec["components"][tasks["Transform"]["componentRef"]["name"]]
    assert "transformed_examples" not in transform["outputDefinitions"]["artifacts"]
    assert '"raw_examples": true' in constant("Trainer", "custom_config")
    assert constant("ImportSchemaGen", "schema_file") == "/app/schemas/digits/schema.pbtxt"


def _caching(spec: dict) -> dict[str, bool]:
    return {
        name: task.get("cachingOptions", {}).get("enableCache", False)
        for name, task in spec["root"]["dag"]["tasks"].items()
    }


def test_every_task_caches_by_default(compiled):
    # But the fingerprint task, which reads what a path holds now (input_fingerprints).
    assert _caching(_pipeline_spec(compiled)) == {
        **dict.fromkeys(EXPECTED_TASKS, True),
        "InputFingerprints": False,
    }


def test_no_cache_turns_caching_off_for_every_task(tmp_path):
    output = tmp_path / "uncached.yaml"
    result = compile_in_process("--output", str(output), "--no-cache", "--gpus", "0")
    assert result.returncode == 0, result.stderr
    assert _caching(_pipeline_spec(output)) == dict.fromkeys(
        EXPECTED_TASKS - {"InputFingerprints"}, False
    )


def test_trainer_reads_through_the_data_service_it_was_compiled_with(compiled):
    trainer = _pipeline_spec(compiled)["root"]["dag"]["tasks"]["Trainer"]
    custom_config = trainer["inputs"]["parameters"]["custom_config"]["runtimeValue"]["constant"]
    assert json.loads(custom_config)["training"]["data_service"] == KUBERNETES_DISPATCHER


def test_example_gen_converts_on_the_spark_master_it_was_compiled_with(compiled):
    example_gen = _pipeline_spec(compiled)["root"]["dag"]["tasks"]["ShardedExampleGen"]
    parameters = example_gen["inputs"]["parameters"]
    assert parameters["engine"]["runtimeValue"]["constant"] == "spark"
    assert parameters["spark_master"]["runtimeValue"]["constant"] == SPARK_ON_KUBERNETES
    conf = json.loads(parameters["spark_conf"]["runtimeValue"]["constant"])
    assert conf == {
        "spark.kubernetes.namespace": "kubeflow",
        # The executors run the image the components run.
        "spark.kubernetes.container.image": "registry.example/tp:1",
    }


def test_a_shard_size_set_wins_over_the_default_reader_floor(compiled):
    parameters = _pipeline_spec(compiled)["root"]["dag"]["tasks"]["ShardedExampleGen"]["inputs"][
        "parameters"
    ]
    assert parameters["target_shard_bytes"]["runtimeValue"]["constant"] == 64 * 2**20
    # No floor: the images' pipeline, compiled with the defaults, has num_readers 10.
    assert "num_readers" not in parameters and "num_shards" not in parameters


def _two_days(events: Path) -> None:
    """Spans 1 and 2 of a tiny table, in ``events/day-{SPAN}/``."""
    for day in (1, 2):
        (events / f"day-{day}").mkdir(parents=True)
        (events / f"day-{day}" / "rows.csv").write_text("x,label\n1,0\n2,1\n")


def test_data_in_spans_compiles_with_the_span_as_a_run_time_parameter(tmp_path):
    _two_days(tmp_path / "events")
    output = tmp_path / "events.yaml"
    result = compile_in_process(
        "--data", f"{tmp_path}/events/day-{{SPAN}}/", "--label", "label",
        "--output", str(output), "--serving-dir", "gs://bucket/serving",
        "--volume", f"events:{tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    spec = _pipeline_spec(output)
    # The run's span is a pipeline parameter, by default the latest on disk, that reaches
    # ExampleGen; a run (or a schedule) may set it.
    assert spec["root"]["inputDefinitions"]["parameters"]["span"] == {
        "parameterType": "STRING",
        "defaultValue": "latest",
        "isOptional": True,
    }
    example_gen = spec["root"]["dag"]["tasks"]["ShardedExampleGen"]["inputs"]["parameters"]
    assert example_gen["requested_span"] == {"componentInputParameter": "span"}
    assert example_gen["input_base"]["runtimeValue"]["constant"] == f"{tmp_path}/events"
    assert "day-{SPAN}/*.csv" in example_gen["input_config"]["runtimeValue"]["constant"]
    # KFP keys its cache on the parameter's text: `latest` must not get an earlier span's
    # conversion. A span given when compiling is a cache key of its own.
    assert _caching(spec)["ShardedExampleGen"] is False
    pinned = tmp_path / "pinned.yaml"
    result = compile_in_process(
        "--data", f"{tmp_path}/events/day-{{SPAN}}/", "--label", "label",
        "--span", "1", "--output", str(pinned), "--serving-dir", "gs://bucket/serving",
        "--volume", f"events:{tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _caching(_pipeline_spec(pinned))["ShardedExampleGen"] is True


def test_a_window_compiles_to_span_window_and_record_run_over_the_daily_state(tmp_path):
    _two_days(tmp_path / "events")
    output = tmp_path / "daily.yaml"
    result = compile_in_process(
        "--data", f"{tmp_path}/events/day-{{SPAN}}/", "--label", "label",
        "--window", "3", "--output", str(output), "--serving-dir", "gs://bucket/models/serving",
        "--volume", f"events:{tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "gs://bucket/models/daily-state/events" in result.stdout
    spec = _pipeline_spec(output)
    tasks = spec["root"]["dag"]["tasks"]
    window = tasks["SpanWindow"]["inputs"]["parameters"]
    assert (
        window["state_dir"]["runtimeValue"]["constant"] == "gs://bucket/models/daily-state/events"
    )
    assert window["num_spans"]["runtimeValue"]["constant"] == 3
    assert window["data_pattern"]["runtimeValue"]["constant"] == f"{tmp_path}/events/day-{{SPAN}}"

    # Transform and the Trainer read the window; DriftCheck the previous span; the Trainer
    # warm-starts from SpanWindow's base model; RecordRun keeps what the run trained.
    def producer(task: str, name: str) -> tuple[str, str]:
        source = tasks[task]["inputs"]["artifacts"][name]["taskOutputArtifact"]
        return source["producerTask"], source["outputArtifactKey"]

    assert producer("Transform", "examples") == ("SpanWindow", "window")
    assert producer("Transform", "analyzer_cache") == ("SpanWindow", "analyzer_cache")
    assert producer("Transform", "statistics") == ("SpanWindow", "window_statistics")
    assert producer("Trainer", "examples") == ("SpanWindow", "window")
    assert producer("Trainer", "base_model") == ("SpanWindow", "base_model")
    assert producer("DriftCheck", "previous_statistics") == ("SpanWindow", "previous_statistics")
    assert producer("Pusher", "drift") == ("DriftCheck", "anomalies")
    assert producer("Evaluator", "baseline_model") == ("SpanWindow", "baseline_model")
    assert producer("RecordRun", "model") == ("Trainer", "model")
    assert producer("Reporter", "window") == ("SpanWindow", "window")
    assert producer("Reporter", "drift") == ("DriftCheck", "anomalies")
    assert not any("resolver" in name.lower() for name in tasks)
    # What SpanWindow reads changes from run to run: KFP must never reuse its outputs.
    assert _caching(spec)["SpanWindow"] is False
    assert _caching(spec)["Trainer"] is True


def _executors(output: Path) -> dict[str, dict]:
    """The PlatformSpec's config of each executor, by task name."""
    spec, platform = yaml.safe_load_all(output.read_text())
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    return {task: executors.get(f"{task}_executor", {}) for task in spec["root"]["dag"]["tasks"]}


def test_every_task_that_keeps_the_daily_state_mounts_its_volume(tmp_path):
    """Issue 63, finding 1: by default the daily state is beside the serving folder on the
    serving PVC; every task that reads or writes it mounts it, not only the Pusher."""
    _two_days(tmp_path / "events")
    output = tmp_path / "daily.yaml"
    result = compile_in_process(
        "--data", f"{tmp_path}/events/day-{{SPAN}}/", "--label", "label",
        "--window", "2", "--output", str(output), "--volume", f"events:{tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "/pipeline/serving_model/daily-state/events" in result.stdout
    executors = _executors(output)
    mounts = {
        task: sorted(f"{m['constant']}:{m['mountPath']}" for m in config.get("pvcMount", []))
        for task, config in executors.items()
    }
    serving = "tfrecord-pipelines-serving:/pipeline/serving_model"
    assert {t for t, m in mounts.items() if serving in m} == {
        "ShardedExampleGen", "SpanWindow", "RecordRun", "Pusher",
    }  # fmt: skip
    # The data's volume where the data is read: ExampleGen, and SpanWindow's span folders.
    assert {t for t, m in mounts.items() if f"events:{tmp_path}" in m} == {
        "ShardedExampleGen", "SpanWindow",
    }  # fmt: skip
    # Every task reads earlier runs' artifacts from a MinIO pipeline root with KFP's Secret,
    # under the project's own names (issue 75, finding 5): the AWS SDKs' own would send the
    # task's s3:// data in AWS to the pipeline root's store.
    for task, config in executors.items():
        [secret] = config["secretAsEnv"]
        assert secret["secretName"] == "mlpipeline-minio-artifact", task
        assert [k["envVar"] for k in secret["keyToEnv"]] == [
            "TFRECORD_PIPELINES_ARTIFACT_ACCESS_KEY_ID",
            "TFRECORD_PIPELINES_ARTIFACT_SECRET_ACCESS_KEY",
        ]  # fmt: skip
    spec = _pipeline_spec(output)
    for executor in spec["deploymentSpec"]["executors"].values():
        env = executor["container"].get("env", [])
        # No endpoint compiled in: each task finds it as the launcher does (root_store).
        assert not {v["name"] for v in env} & {
            "TFRECORD_PIPELINES_ARTIFACT_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"
        }  # fmt: skip


def test_a_path_no_volume_holds_is_refused_naming_the_task(tmp_path):
    _two_days(tmp_path / "events")
    output = tmp_path / "daily.yaml"
    result = compile_in_process(
        "--data", f"{tmp_path}/events/day-{{SPAN}}/", "--label", "label",
        "--window", "2", "--output", str(output),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"error: ShardedExampleGen is given {tmp_path}/events, which no volume of its pod holds"
    )
    assert len(result.stderr.strip().splitlines()) == 1 and not output.exists()


def test_a_state_dir_without_a_window_is_a_usage_error(tmp_path):
    result = compile_in_process("--state-dir", "gs://b/state", "--output", str(tmp_path / "x.yaml"))
    assert result.returncode == 2
    assert "--state-dir keeps a window's state: give --window N with it." in result.stderr


# Every shape of pipeline the project ships and its guides show, each with the volumes its
# data needs (the spans on a claim, as a cluster would mount them).
SHIPPED = {
    "penguins": (),
    "images": ("--data", str(REPO_ROOT / "data" / "digits")),
    "spans": ("--data", "{events}/day-{{SPAN}}/", "--label", "label", "--volume", "events:{root}"),
    "daily": (
        "--data", "{events}/day-{{SPAN}}/", "--label", "label", "--window", "3",
        "--volume", "events:{root}",
    ),
    "gpu": (
        "--image", "registry.example/tp:1", "--trainer-image", "registry.example/tp:1-gpu",
        "--gpus", "2", "--trainer-cpu", "8", "--trainer-memory", "32Gi",
        "--example-gen-engine", "spark", "--spark-master", "k8s://https://kubernetes.default.svc:443",
        "--data-service", "grpc://tf-data-dispatcher:5000",
    ),
}  # fmt: skip


def _shipped(shape: str, tmp_path):
    """The compiled spec of a SHIPPED shape, and its placements read back as KFP's backend
    reads the PlatformSpec, by executor label."""
    from tfrecord_pipelines.kubeflow import platform_spec

    _two_days(tmp_path / "events")
    output = tmp_path / f"{shape}.yaml"
    settings = [s.format(events=tmp_path / "events", root=tmp_path) for s in SHIPPED[shape]]
    result = compile_in_process(*settings, "--output", str(output))
    assert result.returncode == 0, result.stderr
    spec, document = yaml.safe_load_all(output.read_text())
    return spec, platform_spec.read_back(spec, document)


@pytest.mark.parametrize("shape", sorted(SHIPPED))
def test_every_path_a_task_is_given_is_on_a_volume_it_mounts_or_in_the_image(shape, tmp_path):
    """Issue 63: read back as KFP's backend reads the PlatformSpec, every local path each task
    is given (parameters, their JSON, its container's arguments) is under a volume its pod
    mounts, or in the image (/app)."""
    from tfrecord_pipelines.kubeflow import platform_spec, task_paths

    spec, placements = _shipped(shape, tmp_path)
    paths = task_paths.local_paths(spec)
    assert any(paths.values()), paths
    for task, given in paths.items():
        executor = platform_spec.executor_label(spec, task)
        placement = placements.get(executor, platform_spec.TaskPlacement())
        mounts = [volume.mount_path for volume in placement.volumes]
        for path in given:
            assert any(task_paths.is_under(path, m) for m in [*mounts, "/app"]), (
                task,
                path,
                mounts,
            )


@pytest.mark.parametrize("shape", sorted(SHIPPED))
def test_no_two_tasks_that_can_run_at_once_mount_one_claim(shape, tmp_path):
    """Issue 89, finding 5: Argo starts every ready task at once; two that mount one
    ReadWriteOnce claim (k8s/'s serving claim) on two nodes would wait on each other's
    Multi-Attach error. Read back as KFP's backend reads the PlatformSpec, every two tasks that
    mount one claim run one after the other (``claim_order``); on bca8a10 the daily pipeline's
    Pusher and RecordRun could run at once."""
    from argo_schedule import check_claims

    from tfrecord_pipelines.kubeflow import platform_spec

    spec, placements = _shipped(shape, tmp_path)

    def claims_of(task):
        placement = placements.get(platform_spec.executor_label(spec, task))
        return [v.claim for v in placement.volumes] if placement else []

    tasks = spec["root"]["dag"]["tasks"]
    assert sum(bool(claims_of(task)) for task in tasks) >= 1
    check_claims(tasks, claims_of)
