"""``compile`` and ``submit``: the pipeline as a Kubeflow Pipelines v2 spec, and a run of it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import traceback
from pathlib import Path

from tfrecord_pipelines.cli.shard_arguments import positive_int_argument
from tfrecord_pipelines.cli.task_arguments import (
    BUNDLED_DATA_DIR,
    SCHEMAS_DIR,
    add_no_cache_argument,
    add_task_arguments,
    check_writable,
    config_from_args,
)
from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.components.daily.daily_state import default_state_dir
from tfrecord_pipelines.components.example_gen.spark.session import KUBERNETES_IMAGE_CONF
from tfrecord_pipelines.kubeflow.artifact_store import DEFAULT_SECRET as DEFAULT_ARTIFACT_SECRET

# Where the image holds the project (docker/Dockerfile's WORKDIR), the bundled schemas and
# the bundled data.
IMAGE_ROOT = "/app"
IMAGE_SCHEMAS_DIR = f"{IMAGE_ROOT}/schemas"
IMAGE_DATA_DIR = f"{IMAGE_ROOT}/data"
# k8s/base creates this claim for pushed models.
DEFAULT_SERVING_PVC = "tfrecord-pipelines-serving"
# Where the repository keeps the generated KFP component specs.
COMPONENT_SPECS_DIR = "kfp_components"
_NONE = "none"
# --trainer-job's choices: the kind of job, and what the cluster needs for it.
TRAINER_JOBS = {
    "tfjob": (
        "TFJob",
        "the Training Operator v1.9 (kubeflow.org/v1) and k8s/overlays/trainer-workers",
    ),
    "trainjob": (
        "TrainJob",
        "Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) and k8s/overlays/trainjob-workers "
        "(the TrainingRuntime and the RBAC)",
    ),
}
# --trainer-runtime's choices: a TrainJob's runtime's kind, and what the cluster needs for it.
TRAINER_RUNTIMES = {
    "namespace": ("TrainingRuntime", None),
    "cluster": (
        "ClusterTrainingRuntime",
        "Kubeflow Trainer v2, the ClusterTrainingRuntime of k8s/overlays/trainjob-cluster-runtime "
        "(a cluster admin's, once) and the RBAC of k8s/overlays/kubeflow-profile-trainjob",
    ),
}


def add_parsers(commands) -> None:
    """Adds the compile and submit sub-commands to the CLI's sub-parsers."""
    compile_ = commands.add_parser("compile", help="write a Kubeflow Pipelines v2 YAML")
    add_task_arguments(compile_)
    add_compile_arguments(compile_)

    from tfrecord_pipelines.kubeflow import submit as submit_lib

    submit = commands.add_parser(
        "submit", help="compile, then create a run on a Kubeflow Pipelines server"
    )
    add_task_arguments(submit)
    add_compile_arguments(submit)
    kfp = submit.add_argument_group("Kubeflow Pipelines run")
    kfp.add_argument(
        "--host",
        help=f"KFP API URL, e.g. http://localhost:8080 (default: ${submit_lib.HOST_ENV})",
    )
    kfp.add_argument(
        "--pipeline-root",
        metavar="URI",
        help="where the run writes artifacts: gs://, s3:// or minio://BUCKET/root (default: "
        f"${submit_lib.PIPELINE_ROOT_ENV}, else the namespace's kfp-launcher ConfigMap)",
    )
    kfp.add_argument(
        "--package", metavar="FILE", help="submit this compiled YAML instead of compiling"
    )
    kfp.add_argument("--experiment", help="experiment name (default: the pipeline's name)")
    kfp.add_argument("--run-name", help="run name (default: '<pipeline name> <UTC time>')")
    kfp.add_argument("--namespace", help="Kubeflow profile namespace (multi-user Kubeflow)")
    kfp.add_argument(
        "--service-account",
        default=submit_lib.DEFAULT_SERVICE_ACCOUNT,
        help=f"the pods' service account (default: {submit_lib.DEFAULT_SERVICE_ACCOUNT}; "
        "'' for the server's default)",
    )
    kfp.add_argument(
        "--upload", action="store_true", help="also upload it as a new pipeline version"
    )
    kfp.add_argument(
        "--schedule",
        metavar="CRON",
        help="create a recurring run instead, on KFP's cron (6 fields, seconds first: "
        "'0 30 1 * * *' is 01:30 daily; or @daily, '@every 6h'); with date specs in --data "
        "each run converts the day before its scheduled time, else the latest span",
    )
    kfp.add_argument(
        "--existing-token",
        metavar="TOKEN",
        help=f"bearer token for the API (default: ${submit_lib.TOKEN_ENV})",
    )
    kfp.add_argument("--cookies", help="Cookie header, e.g. authservice_session=...")
    kfp.add_argument("--ssl-ca-cert", metavar="FILE", help="CA bundle of the server")
    kfp.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="skip TLS certificate checks"
    )


def add_components_parser(commands) -> None:
    """Adds the ``components`` sub-command: the KFP component specs and their reference."""
    parser = commands.add_parser(
        "components", help="write the KFP component specs (YAML) for plain KFP pipelines"
    )
    parser.add_argument(
        "--output", default=COMPONENT_SPECS_DIR, help="folder of the specs (default: %(default)s)"
    )
    parser.add_argument(
        "--image", help="the image the components run (default: the project's published image)"
    )
    parser.add_argument("--reference", metavar="FILE", help="also write the reference page here")
    parser.add_argument("--verbose", action="store_true", help="show all library logs")


def run_components(args: argparse.Namespace) -> None:
    """Writes the component specs (and the reference page); prints where."""
    check_writable(args.output)
    from tfrecord_pipelines.kubeflow.reusable import definitions, specs

    paths = specs.write_specs(args.output, args.image or definitions.IMAGE)
    print(f"Wrote {len(paths)} KFP component specs to {args.output}")
    if args.reference:
        print(f"Wrote their reference to {specs.write_reference(args.reference)}")


def add_compile_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that shape the compiled Kubeflow spec (compile and submit share them)."""
    parser.add_argument("--output", help="YAML file (default: output/kubeflow/<name>.yaml)")
    add_no_cache_argument(parser)
    parser.add_argument("--image", help="container image of every component but the Trainer")
    parser.add_argument("--trainer-image", help="the Trainer's container image (the GPU build)")
    _add_trainer_arguments(parser)
    _add_storage_arguments(parser)


def _add_trainer_arguments(parser: argparse.ArgumentParser) -> None:
    """The Trainer's pod: its GPUs, workers, limits, node pool and volumes."""
    parser.add_argument(
        "--gpus", type=int, default=1, help="GPUs the Trainer requests (default: 1; 0 for CPU)"
    )
    parser.add_argument(
        "--gpu-resource",
        default="nvidia.com/gpu",
        help="Kubernetes resource name of the GPUs (default: nvidia.com/gpu)",
    )
    parser.add_argument(
        "--trainer-workers",
        type=positive_int_argument,
        default=1,
        help="Trainer workers, each with --gpus GPUs: more than 1 trains in a job of "
        "--trainer-job's kind that the Trainer's task creates (default: 1, its own pod)",
    )
    parser.add_argument(
        "--trainer-job",
        choices=sorted(TRAINER_JOBS),
        default="tfjob",
        help="the workers' job: tfjob (the Kubeflow Training Operator v1.9's TFJob) or "
        "trainjob (Kubeflow Trainer v2's TrainJob, with k8s/'s TrainingRuntime; Kubeflow "
        "1.11's default) (default: tfjob)",
    )
    parser.add_argument(
        "--trainer-runtime",
        choices=sorted(TRAINER_RUNTIMES),
        default="namespace",
        help="a TrainJob's runtime: namespace (k8s/'s TrainingRuntime in the run's namespace) "
        "or cluster (its ClusterTrainingRuntime, which a cluster admin installs once: for a "
        "Kubeflow profile, whose owner cannot install a TrainingRuntime) (default: namespace)",
    )
    parser.add_argument("--trainer-cpu", help="Trainer CPU limit, e.g. 8 or 7500m")
    parser.add_argument("--trainer-memory", help="Trainer memory limit, e.g. 32Gi")
    parser.add_argument(
        "--gpu-node-selector",
        action="append",
        metavar="KEY=VALUE",
        help="node label the Trainer needs, repeatable; 'none' for no selector "
        "(default: nvidia.com/gpu.present=true)",
    )
    parser.add_argument(
        "--gpu-toleration",
        action="append",
        metavar="KEY[=VALUE]:EFFECT",
        help="taint the Trainer tolerates, repeatable; 'none' for no toleration "
        "(default: nvidia.com/gpu:NoSchedule)",
    )
    parser.add_argument(
        "--trainer-volume",
        action="append",
        default=[],
        metavar="CLAIM:/PATH",
        help="PersistentVolumeClaim to mount into the Trainer, repeatable",
    )


def _add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the tasks find their volumes, the serving folder, the daily state and the
    pipeline root's store."""
    parser.add_argument(
        "--volume",
        action="append",
        default=[],
        metavar="CLAIM:/PATH",
        help="PersistentVolumeClaim mounted at /PATH in every task given a path under it "
        "(local --data, --module-file, --serving-dir, --state-dir), repeatable",
    )
    parser.add_argument(
        "--serving-dir",
        help="where pods push blessed models (default: /pipeline/serving_model/<name>)",
    )
    parser.add_argument(
        "--state-dir",
        help="with --window: the folder where runs record the spans they converted and the "
        "models they trained, for the next run's window, drift check and warm start "
        "(default: daily-state/<name> beside --serving-dir)",
    )
    parser.add_argument(
        "--serving-pvc",
        default=DEFAULT_SERVING_PVC,
        help="PersistentVolumeClaim mounted at a local --serving-dir's parent, in every task "
        "given a path under it (the Pusher; with --window, the tasks that keep the daily "
        f"state); 'none' to mount nothing (default: {DEFAULT_SERVING_PVC}, from k8s/)",
    )
    parser.add_argument(
        "--artifact-secret",
        default=DEFAULT_ARTIFACT_SECRET,
        metavar="NAME[:ACCESS_KEY_ENTRY,SECRET_KEY_ENTRY]",
        help="the Secret whose keys the tasks read and write what the launcher does not copy "
        "(the examples, earlier runs' artifacts) in a minio:// or s3:// pipeline root with "
        "(k8s/'s: tfrecord-pipelines-s3-credentials:"
        "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY); 'none' for a gs:// pipeline root "
        f"(default: KFP's own, {DEFAULT_ARTIFACT_SECRET}, entries accesskey,secretkey)",
    )
    parser.add_argument(
        "--artifact-endpoint",
        default=None,
        help="the S3 endpoint of that pipeline root's store (default: none compiled in; each "
        "task reaches the store as KFP's launcher in its pod does: the session the launcher "
        "recorded on its inputs, else the kfp-launcher ConfigMap's provider, else the "
        "release's own, http://minio-service.kubeflow:9000 for KFP 2.4-2.15 and "
        "http://seaweedfs.kubeflow:9000 from 2.16)",
    )


def _trainer_placement(args: argparse.Namespace):
    """The Trainer's GPU node pool and volumes, from the flags."""
    from tfrecord_pipelines.kubeflow import platform_spec

    def given(values: list[str] | None, default: list[str]) -> list[str]:
        if values is None:
            return default
        return [] if values == [_NONE] else values

    selector = given(
        args.gpu_node_selector,
        [f"{k}={v}" for k, v in platform_spec.DEFAULT_GPU_NODE_SELECTOR.items()],
    )
    tolerations = given(args.gpu_toleration, [platform_spec.DEFAULT_GPU_TOLERATION])
    gpu_pool = args.gpus > 0
    return platform_spec.TaskPlacement(
        node_selector=platform_spec.parse_node_selector(selector) if gpu_pool else {},
        tolerations=tuple(map(platform_spec.Toleration.parse, tolerations)) if gpu_pool else (),
        volumes=tuple(map(platform_spec.VolumeMount.parse, args.trainer_volume)),
    )


def _volumes(args: argparse.Namespace, serving_dir: str) -> tuple:
    """--volume's claims, and the serving PVC at a local serving folder's parent, which holds
    the daily state too."""
    from tfrecord_pipelines.kubeflow import platform_spec

    volumes = tuple(map(platform_spec.VolumeMount.parse, args.volume))
    if args.serving_pvc == _NONE or "://" in serving_dir:
        return volumes
    return (*volumes, platform_spec.VolumeMount(args.serving_pvc, os.path.dirname(serving_dir)))


def _artifact_store(args: argparse.Namespace):
    """How the tasks reach the pipeline root's store for what the launcher does not copy."""
    from tfrecord_pipelines.kubeflow.artifact_store import ArtifactStoreAccess

    if args.artifact_secret == _NONE:
        return None
    return ArtifactStoreAccess.parse(args.artifact_secret, args.artifact_endpoint)


def _in_image_paths(config):
    """The config with the bundled schemas and data at their place in the component image."""
    if config.schema_path and Path(config.schema_path).is_relative_to(SCHEMAS_DIR):
        relative = Path(config.schema_path).relative_to(SCHEMAS_DIR)
        config = dataclasses.replace(config, schema_path=f"{IMAGE_SCHEMAS_DIR}/{relative}")
    source = config.source
    if not source.spans and Path(source.root).is_relative_to(BUNDLED_DATA_DIR):
        relative = Path(source.root).relative_to(BUNDLED_DATA_DIR)
        source = dataclasses.replace(source, root=f"{IMAGE_DATA_DIR}/{relative}")
        config = dataclasses.replace(config, source=source)
    return config


def _with_a_shard_per_worker(config, workers: int):
    """Each split converted into at least WORKERS shards, each trainer worker reading its own.

    Raises:
      UsageError: --num-shards below the workers' count.
    """
    ingest = config.ingest
    if workers == 1:
        return config
    if ingest.num_shards is not None and ingest.num_shards < workers:
        raise UsageError(
            f"--num-shards {ingest.num_shards} for --trainer-workers {workers}: each worker "
            f"reads whole train shards of its own; give at least {workers} shards"
        )
    readers = max(ingest.sharding().num_readers or 1, workers)
    return dataclasses.replace(config, ingest=dataclasses.replace(ingest, num_readers=readers))


def _spark_executors_in_the_image(config, image: str):
    """On a k8s:// master, Spark's executor pods run the component image unless told otherwise."""
    ingest = config.ingest
    conf = dict(ingest.spark_conf)
    if not (ingest.engine == "spark" and (ingest.spark_master or "").startswith("k8s://")):
        return config
    conf.setdefault(KUBERNETES_IMAGE_CONF, image)
    return dataclasses.replace(
        config, ingest=dataclasses.replace(ingest, spark_conf=tuple(conf.items()))
    )


def run_compile(args: argparse.Namespace) -> str:
    """Writes the compiled spec; returns its path."""
    if args.output and not args.output.endswith((".yaml", ".yml")):
        raise UsageError(f"--output {args.output} must end in .yaml or .yml.")
    if args.state_dir and not args.window:
        raise UsageError("--state-dir keeps a window's state: give --window N with it.")
    if args.trainer_runtime != "namespace" and args.trainer_job != "trainjob":
        raise UsageError(
            f"--trainer-runtime {args.trainer_runtime} is a TrainJob's: give --trainer-job trainjob"
        )
    config = _with_a_shard_per_worker(
        _in_image_paths(config_from_args(args, serving_dir=args.serving_dir)),
        args.trainer_workers,
    )
    from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources

    # The Trainer's flags before the runner's import (TFX): a typo is a quick error.
    resources = TrainerResources(
        gpus=args.gpus,
        accelerator=args.gpu_resource,
        cpu=args.trainer_cpu,
        memory=args.trainer_memory,
    )
    trainer_placement = _trainer_placement(args)
    volumes = _volumes(args, config.serving_dir)
    artifact_store = _artifact_store(args)
    from tfrecord_pipelines.kubeflow import runner as kubeflow_runner

    config = _spark_executors_in_the_image(config, args.image or kubeflow_runner.DEFAULT_IMAGE)
    from tfrecord_pipelines.components.keys import TRAINER_ID

    placements = {TRAINER_ID: trainer_placement}
    output = args.output or os.path.join("output", "kubeflow", f"{config.name}.yaml")
    state_dir = None
    if config.window:
        state_dir = args.state_dir or default_state_dir(config.serving_dir, config.name)
        print(f"Daily state (the window's spans, the models for warm starts): {state_dir}")
    check_writable(os.path.dirname(os.path.abspath(output)))
    kubeflow_runner.compile_for_kubeflow(
        config,
        output,
        image=args.image or kubeflow_runner.DEFAULT_IMAGE,
        trainer_image=args.trainer_image
        or (kubeflow_runner.DEFAULT_TRAINER_IMAGE if args.gpus else args.image)
        or kubeflow_runner.DEFAULT_IMAGE,
        trainer_resources=resources,
        placements=placements,
        enable_cache=not args.no_cache,
        state_dir=state_dir,
        volumes=volumes,
        artifact_store=artifact_store,
        in_image=(IMAGE_ROOT,),
        trainer_workers=args.trainer_workers,
        trainer_job=TRAINER_JOBS[args.trainer_job][0],
        trainer_runtime_kind=TRAINER_RUNTIMES[args.trainer_runtime][0],
    )
    if args.trainer_workers > 1:
        kind, needs = TRAINER_JOBS[args.trainer_job]
        needs = TRAINER_RUNTIMES[args.trainer_runtime][1] or needs
        print(
            f"The Trainer trains in a {kind} of {args.trainer_workers} workers: {needs} "
            "must be in the namespace"
        )
    print(f"Wrote Kubeflow Pipelines v2 spec for {config.name!r} to {os.path.abspath(output)}")
    return output


@contextlib.contextmanager
def _one_line_server_errors(args: argparse.Namespace):
    """A server's failure, not a usage error: one line (--verbose: the traceback), status 1."""
    from tfrecord_pipelines.kubeflow import submit

    try:
        yield
    except submit.SubmitError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None


def _schedule(args: argparse.Namespace, package: str, connection, pipeline_root) -> None:
    """Creates the recurring run of ``submit --schedule`` and prints where it is."""
    from tfrecord_pipelines.kubeflow import submit

    with _one_line_server_errors(args):
        scheduled = submit.schedule_runs(
            package,
            connection=connection,
            schedule=args.schedule,
            pipeline_root=pipeline_root,
            experiment=args.experiment,
            service_account=args.service_account,
            upload=args.upload,
            enable_caching=False if args.no_cache else None,
        )
    print(f"Scheduled {scheduled.name!r} of {package} on {connection.host}")
    print(f"  recurring run: {scheduled.recurring_run_id}")
    print(f"  page:          {scheduled.url}")
    print(f"  schedule:      {scheduled.schedule} (KFP's cron: seconds first)")
    given = ", ".join(f"{k}={v}" for k, v in scheduled.parameters.items()) or "none"
    print(f"  each run gets: {given}")
    print(f"  experiment:    {scheduled.experiment} ({scheduled.experiment_url})")
    if scheduled.pipeline_version_url:
        print(f"  pipeline:      {scheduled.pipeline_version_url}")


def run_submit(args: argparse.Namespace) -> None:
    """Compiles (unless --package is given), then creates a run on a KFP server."""
    from tfrecord_pipelines.kubeflow import package, submit

    host = args.host or os.environ.get(submit.HOST_ENV)
    if not host:
        raise UsageError(
            f"--host is required (or set {submit.HOST_ENV}): the Kubeflow Pipelines API URL, "
            "e.g. http://localhost:8080 after kubectl port-forward -n kubeflow "
            "svc/ml-pipeline-ui 8080:80."
        )
    # None: the run uses its namespace's kfp-launcher defaultPipelineRoot (k8s/).
    pipeline_root = args.pipeline_root or os.environ.get(submit.PIPELINE_ROOT_ENV) or None
    if pipeline_root:
        package.check_pipeline_root(pipeline_root)
    connection = submit.KfpConnection(
        host=host,
        namespace=args.namespace,
        existing_token=args.existing_token or os.environ.get(submit.TOKEN_ENV),
        cookies=args.cookies,
        ssl_ca_cert=args.ssl_ca_cert,
        verify_ssl=not args.insecure_skip_tls_verify,
    )
    if args.no_cache and args.package and args.upload:
        raise UsageError(
            "--no-cache with --package and --upload: an uploaded version keeps the package's "
            "caching; compile the package with --no-cache instead."
        )
    if args.schedule:
        from tfrecord_pipelines.kubeflow.schedule import check_cron

        check_cron(args.schedule)  # before the compile's half minute
        if args.run_name:
            raise UsageError(
                "--run-name names a run; a recurring run is named by --experiment and its schedule."
            )
    package = args.package or run_compile(args)
    if args.schedule:
        _schedule(args, package, connection, pipeline_root)
        return
    with _one_line_server_errors(args):
        run = submit.submit_run(
            package,
            connection=connection,
            pipeline_root=pipeline_root,
            experiment=args.experiment,
            run_name=args.run_name,
            service_account=args.service_account,
            upload=args.upload,
            # A package given as it is still runs uncached; a compiled one is already.
            enable_caching=False if args.no_cache else None,
        )
    print(f"Submitted run {run.run_name!r} of {package} to {connection.host}")
    print(f"  run id:      {run.run_id}")
    print(f"  run:         {run.url}")
    print(f"  experiment:  {run.experiment} ({run.experiment_url})")
    print(
        "  root:        "
        + (run.pipeline_root or "the namespace's default (kfp-launcher's defaultPipelineRoot)")
    )
    if run.pipeline_version_url:
        print(f"  pipeline:    {run.pipeline_version_url}")
