"""Compiles the pipeline into a Kubeflow Pipelines v2 PipelineSpec YAML."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
from collections.abc import Mapping, Sequence

import yaml
from tfx.orchestration.data_types import RuntimeParameter
from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner

from tfrecord_pipelines.components.keys import EXAMPLE_GEN_ID, SPAN_WINDOW_ID, TRAINER_ID
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.definition.config import PipelineConfig
from tfrecord_pipelines.definition.pipeline import create_pipeline
from tfrecord_pipelines.kubeflow import (
    claim_order,
    examples_in_store,
    input_fingerprints,
    task_paths,
)
from tfrecord_pipelines.kubeflow.artifact_store import ArtifactStoreAccess
from tfrecord_pipelines.kubeflow.kfp_executor import DAILY_STATE_FLAG
from tfrecord_pipelines.kubeflow.platform_spec import TaskPlacement, VolumeMount, checked_document
from tfrecord_pipelines.kubeflow.schedule import LATEST_SPAN, SPAN_PARAMETER
from tfrecord_pipelines.kubeflow.training_job.train_job import (
    RUNTIME_KIND as DEFAULT_RUNTIME_KIND,
)
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources
from tfrecord_pipelines.kubeflow.training_job.worker_template import (
    DEFAULT_KIND as DEFAULT_TRAINER_JOB,
)
from tfrecord_pipelines.report.component import reporter_of

# The images the components run in (docker/Dockerfile's cpu and gpu targets).
DEFAULT_IMAGE = "ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0"
DEFAULT_TRAINER_IMAGE = "ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0-gpu"
# Every executor starts through the project's entry point, which repairs what
# KFP's open-source driver leaves out of the executor input before handing it to TFX.
EXECUTOR_COMMAND = ["python", "-m", "tfrecord_pipelines.kubeflow.kfp_executor"]
# TFX's key for the image of components not named in a per-component image map.
_DEFAULT_IMAGE_KEY = "default_image_path"
# The YAML carries no pipeline root: KFP takes it when the run is created.
# TFX still wants one to build the pipeline object.
_PIPELINE_ROOT_SET_AT_SUBMISSION = "pipeline-root-set-at-submission"
# TFX's switch (tfx.components.util.udf_utils) that leaves module files unpackaged.
_DO_NOT_PACKAGE = "UNSUPPORTED_DO_NOT_PACKAGE_USER_MODULES"


def _span_text(config: PipelineConfig) -> str:
    """The compiled span as the run-time parameter's text: its number, else the latest."""
    return LATEST_SPAN if config.span is None else str(config.span)


def _span_parameter(config: PipelineConfig) -> RuntimeParameter | None:
    """For data in spans, the span as a run-time parameter, defaulting to the compiled one."""
    if not config.source.spans:
        return None
    return RuntimeParameter(name=SPAN_PARAMETER, ptype=str, default=_span_text(config))


def _default_span(spec: dict, default: str) -> None:
    """Gives the span parameter its default, which TFX's compiler leaves out (KFP would then
    require it of every run): the compiled span, else the latest."""
    parameter = spec["root"]["inputDefinitions"]["parameters"][SPAN_PARAMETER]
    parameter.update(defaultValue=default, isOptional=True)


def _never_cached(spec: dict, task: str) -> None:
    """Turns KFP's caching off for ``task``: its result depends on more than its inputs."""
    spec["root"]["dag"]["tasks"][task]["cachingOptions"] = {"enableCache": False}


def _with_daily_state(spec: dict, state_dir: str) -> None:
    """Tells ExampleGen's entry point the daily state, where it finds a day's conversion."""
    component = spec["root"]["dag"]["tasks"][EXAMPLE_GEN_ID]["componentRef"]["name"]
    label = spec["components"][component]["executorLabel"]
    container = spec["deploymentSpec"]["executors"][label]["container"]
    container["args"] += [f"--{DAILY_STATE_FLAG}", state_dir]


def _examples_by_reference(spec: dict) -> None:
    """Tells every task's entry point to write examples into the pipeline root's store and
    hand them on as references: each reader of them is a task of this pipeline, which reads
    them there (``examples_in_store``)."""
    for executor in spec["deploymentSpec"]["executors"].values():
        executor["container"]["args"].append(f"--{examples_in_store.FLAG}")


def _with_spans(spec: dict, config: PipelineConfig, state_dir: str | None) -> None:
    """The span's default, the tasks KFP must not cache, and the daily state, in place."""
    _default_span(spec, _span_text(config))
    if config.span is None:
        # KFP keys its cache on the parameter's text: a run given `latest` would get the
        # conversion of whichever span was the latest when a run first converted it.
        _never_cached(spec, EXAMPLE_GEN_ID)
    if config.window:
        _never_cached(spec, SPAN_WINDOW_ID)
        _with_daily_state(spec, state_dir)


def _complete(output_file: str, config: PipelineConfig, state_dir: str | None) -> None:
    """What TFX's compiler cannot write into the spec: examples handed on by reference; for
    data in spans, the span's default and the daily state; a cache key that follows the
    files read by path (``input_fingerprints``); artifact types by their titles."""
    with filesystem.open_file(output_file) as f:
        spec = yaml.safe_load(f.read())
    _examples_by_reference(spec)
    _one_line_protos(spec)
    if config.source.spans:
        _with_spans(spec, config, state_dir)
    input_fingerprints.with_input_fingerprints(spec)
    _titled_types(spec)
    with filesystem.open_file(output_file, "w") as f:
        f.write(yaml.safe_dump(spec, sort_keys=False))


def _one_line_protos(spec: dict) -> None:
    """TFX's proto parameters (eval_config, input_config, push_destination, ...) on one line
    each, in place: TFX writes them as indented JSON, which KFP's UI shows as one line of
    escaped newlines. The executors parse JSON, whatever its spacing."""
    for task in spec["root"]["dag"]["tasks"].values():
        for parameter in task.get("inputs", {}).get("parameters", {}).values():
            constant = parameter.get("runtimeValue", {}).get("constant")
            if isinstance(constant, str) and constant.startswith("{\n"):
                parameter["runtimeValue"]["constant"] = json.dumps(json.loads(constant))


def _titled_types(spec: dict) -> None:
    """Each artifact type of the components' inputs and outputs by its title alone, in place.

    TFX writes ``instanceSchema`` (the title, then the type's properties), which KFP's task
    panel shows whole, as one line (StaticNodeDetailsV2.tsx shows ``schemaTitle`` first).
    Nothing reads the rest: the launcher records ``title: X`` either way (launcher_v2.go
    getArtifactSchema) and makes the ML Metadata type of the title alone (metadata/client.go
    SchemaToArtifactType), and TFX's entry point and ``kfp_executor`` read either kind.
    """
    for component in spec["components"].values():
        for side in ("inputDefinitions", "outputDefinitions"):
            for artifact in component.get(side, {}).get("artifacts", {}).values():
                schema = artifact["artifactType"].get("instanceSchema")
                if schema is not None:
                    artifact["artifactType"] = {"schemaTitle": yaml.safe_load(schema)["title"]}


def compile_for_kubeflow(
    config: PipelineConfig,
    output_file: str,
    image: str = DEFAULT_IMAGE,
    trainer_image: str = DEFAULT_TRAINER_IMAGE,
    trainer_resources: TrainerResources | None = None,
    placements: Mapping[str, TaskPlacement] | None = None,
    enable_cache: bool = True,
    state_dir: str | None = None,
    volumes: Sequence[VolumeMount] = (),
    artifact_store: ArtifactStoreAccess | None = None,
    in_image: Sequence[str] = (),
    trainer_workers: int = 1,
    trainer_job: str = DEFAULT_TRAINER_JOB,
    trainer_runtime_kind: str = DEFAULT_RUNTIME_KIND,
) -> str:
    """Writes the pipeline as a KFP v2 YAML file: PipelineSpec, then PlatformSpec.

    The first document is TFX's PipelineSpec (schema 2.1.0); the second, written
    only when a placement is given, holds the Kubernetes settings TFX cannot
    express (node selectors, tolerations, volume mounts), keyed by executor label.
    The build has no Resolver node: KFP's open-source backend does not
    implement it, so the Evaluator has no baseline and applies only its value
    thresholds. A window of spans (``config.window``) comes from the daily
    state in ``state_dir`` instead (SpanWindow, RecordRun), with the drift
    check, the warm start and the Evaluator's baseline; SpanWindow is never
    cached, as what it reads changes from run to run. Its last task, the
    Reporter, writes the run report as a ``system.HTML`` output.

    Args:
      config: the pipeline's settings; its paths must be reachable from the
        cluster's pods (a bucket URI or a mounted volume).
      output_file: the YAML file to write; must end in .yaml or .yml.
      image: the container image the components run in.
      trainer_image: the Trainer's image (the GPU build).
      trainer_resources: the Trainer's GPUs, CPU and memory limits; None:
        the defaults (one nvidia.com/gpu).
      placements: node selectors, tolerations and volumes by component id.
      enable_cache: every task's ``cachingOptions.enableCache``: KFP reuses a
        task's earlier outputs when its image, command, inputs and parameters match.
      state_dir: with a window of spans: the daily state's folder, which the
        pods read and write (a bucket URI, or a folder of a volume).
      volumes: PersistentVolumeClaims each mounted in every task given a path
        under its mount path (the serving folder, the daily state, data).
      artifact_store: the Secret and endpoint every task reaches the pipeline
        root's store with (MinIO, S3) for what the launcher does not copy: the
        examples, which their writer puts there (``examples_in_store``), and
        earlier runs' artifacts; None: the tasks reach it with the pod's own
        settings (gs://, an s3:// root read with the pod's role).
      in_image: folders the image holds, which a task may be given paths in.
      trainer_workers: more than one: the Trainer's task trains in a job of that many
        workers (``trainer_job_spec``); one: in its own pod.
      trainer_job: that job's kind: ``TFJob`` or ``TrainJob`` (``worker_template.KINDS``).
      trainer_runtime_kind: a TrainJob's runtime's kind: ``TrainingRuntime`` (in the
        run's namespace) or ``ClusterTrainingRuntime``.

    Returns:
      output_file.

    Raises:
      ValueError: if output_file does not end in .yaml or .yml, or the config
        asks for a window of spans without a state_dir.
      task_paths.UnreachablePathError: a task is given a local path that no volume
        of its pod holds and the image does not (no file is left behind).
    """
    _check_output_and_state(output_file, config, state_dir)
    pipeline = _kubeflow_pipeline(config, enable_cache, state_dir)
    resources = trainer_resources or TrainerResources()
    _with_trainer_resources(pipeline, resources)
    _write_pipeline_spec(pipeline, output_file, image, trainer_image)
    _complete(output_file, config, state_dir)
    placements = _pods(output_file, dict(placements or {}), volumes, in_image)
    if artifact_store:
        _with_artifact_store(output_file, placements, artifact_store)
    if trainer_workers > 1:
        _with_trainer_workers(
            output_file, trainer_workers, trainer_image, resources, placements,
            kind=trainer_job, runtime_kind=trainer_runtime_kind,
        )  # fmt: skip
    _append_platform_spec(output_file, placements)
    return output_file


def _check_output_and_state(output_file: str, config: PipelineConfig, state_dir) -> None:
    """Refuses an output that is not YAML, or a window of spans with no state folder."""
    if not output_file.endswith((".yaml", ".yml")):
        raise ValueError(f"Output {output_file!r} must end in .yaml or .yml.")
    if config.window and not state_dir:
        raise ValueError(
            f"window {config.window}: a window of spans on Kubeflow keeps its state in a "
            "folder the pods reach: give state_dir."
        )


def _with_trainer_resources(pipeline, resources: TrainerResources) -> None:
    """The Trainer's GPUs, CPU and memory on its node, in place."""
    resource_spec = resources.to_resource_spec()
    if resource_spec.ByteSize():  # an empty spec would still write `resources: {}`
        trainer = next(c for c in pipeline.components if c.id == TRAINER_ID)
        trainer.with_platform_config(resource_spec)


def _with_trainer_workers(
    output_file: str,
    workers: int,
    image: str,
    resources: TrainerResources,
    placements: Mapping[str, TaskPlacement],
    **job: str,
) -> None:
    """The Trainer's task made to train in a job of WORKERS workers, in place; JOB: its kind
    and options (``trainer_job_spec.worker_template``)."""
    from tfrecord_pipelines.kubeflow import platform_spec
    from tfrecord_pipelines.kubeflow.training_job import trainer_job_spec

    with filesystem.open_file(output_file) as f:
        spec = yaml.safe_load(f.read())
    label = platform_spec.executor_label(spec, TRAINER_ID)
    env = spec["deploymentSpec"]["executors"][label]["container"].get("env", [])
    template = trainer_job_spec.worker_template(
        workers, image, resources, placements.get(TRAINER_ID, TaskPlacement()), env, **job
    )
    trainer_job_spec.with_worker_job(spec, label, TRAINER_ID, template)
    with filesystem.open_file(output_file, "w") as f:
        f.write(yaml.safe_dump(spec, sort_keys=False))


def _pods(
    output_file: str,
    placements: dict[str, TaskPlacement],
    volumes: Sequence[VolumeMount],
    in_image: Sequence[str],
) -> dict[str, TaskPlacement]:
    """Each task's placement with the volumes its paths need, the tasks that mount one claim
    ordered (``claim_order``); refuses a path none holds, removing the spec written so far."""
    with filesystem.open_file(output_file) as f:
        spec = yaml.safe_load(f.read())
    placements = _with_volumes(spec, placements, volumes)
    try:
        task_paths.check_reachable(
            spec, {task: p.volumes for task, p in placements.items()}, in_image
        )
    except task_paths.UnreachablePathError:
        filesystem.remove(output_file)
        raise
    claims = {task: [v.claim for v in p.volumes] for task, p in placements.items()}
    claim_order.one_task_at_a_time(spec, claims)
    with filesystem.open_file(output_file, "w") as f:
        f.write(yaml.safe_dump(spec, sort_keys=False))
    return placements


def _with_volumes(
    spec: dict, placements: dict[str, TaskPlacement], volumes: Sequence[VolumeMount]
) -> dict[str, TaskPlacement]:
    """Each task's placement with the volumes that hold the paths it is given."""
    for task, needed in task_paths.volumes_by_task(spec, volumes).items():
        placement = placements.get(task, TaskPlacement())
        extra = tuple(v for v in needed if v not in placement.volumes)
        placements[task] = dataclasses.replace(placement, volumes=placement.volumes + extra)
    return placements


def _with_artifact_store(
    output_file: str, placements: dict[str, TaskPlacement], access: ArtifactStoreAccess
) -> None:
    """Gives every task the store's endpoint and the Secret's keys, in place."""
    with filesystem.open_file(output_file) as f:
        spec = yaml.safe_load(f.read())
    for executor in spec["deploymentSpec"]["executors"].values():
        env = executor["container"].setdefault("env", [])
        env += [{"name": k, "value": v} for k, v in access.environment().items()]
    for task in spec["root"]["dag"]["tasks"]:
        placement = placements.get(task, TaskPlacement())
        placements[task] = dataclasses.replace(
            placement, secret_env=(*placement.secret_env, access.secret_env())
        )
    with filesystem.open_file(output_file, "w") as f:
        f.write(yaml.safe_dump(spec, sort_keys=False))


def _kubeflow_pipeline(config: PipelineConfig, enable_cache: bool, state_dir: str | None):
    """The pipeline as Kubeflow runs it: no Resolver, the span a run-time parameter, the
    daily state in place of a window's Resolvers, the Reporter last."""
    with _module_file_by_path():
        return create_pipeline(
            config,
            _PIPELINE_ROOT_SET_AT_SUBMISSION,
            compare_to_latest_blessed=False,
            enable_cache=enable_cache,
            requested_span=_span_parameter(config),
            state_dir=state_dir if config.window else None,
            # KFP runs nothing after a run: its last task writes the report KFP's UI shows.
            last_task=functools.partial(
                reporter_of, pipeline_name=config.name, images=config.source.is_images
            ),
        )


def _write_pipeline_spec(pipeline, output_file: str, image: str, trainer_image: str) -> None:
    """TFX's PipelineSpec of ``pipeline``, every task in ``image`` but the Trainer's."""
    runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
        config=kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
            default_image={_DEFAULT_IMAGE_KEY: image, TRAINER_ID: trainer_image},
            default_commands=EXECUTOR_COMMAND,
            use_pipeline_spec_2_1=True,
        ),
        output_dir=os.path.dirname(os.path.abspath(output_file)),
        output_filename=os.path.basename(output_file),
    )
    runner.run(pipeline, write_out=True)


@contextlib.contextmanager
def _module_file_by_path():
    """Keeps a module file as its path in the spec, for the pods to import.

    TFX otherwise builds a wheel of it into the pipeline root at compile time,
    which for KFP is only known when the run is created.
    """
    previous = os.environ.get(_DO_NOT_PACKAGE)
    os.environ[_DO_NOT_PACKAGE] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[_DO_NOT_PACKAGE]
        else:
            os.environ[_DO_NOT_PACKAGE] = previous


def _append_platform_spec(output_file: str, placements: Mapping[str, TaskPlacement]) -> None:
    with filesystem.open_file(output_file) as f:
        text = f.read()
    platforms = checked_document(yaml.safe_load(text), placements)
    if not platforms:
        return
    with filesystem.open_file(output_file, "w") as f:
        f.write(text + "---\n" + yaml.safe_dump(platforms, sort_keys=True))
