"""A contract test of KFP's driver and launcher: a compiled pipeline's tasks run as a cluster's
pods get them, each in its own container of the image.

What a pod of KFP open source gets, and nothing more, read in kubeflow/pipelines at
7b70c7b95f68 (backend/src/v2; file:line given at each rule below):

- Its output artifacts' URIs under the pipeline root, ``{root}/{pipeline}/{run}`` and
  then ``{task}/{uuid}/{output}`` (metadata/client.go:420, driver/driver.go:767-778,
  driver/container.go:116-122, a new uuid per execution), the executor output file at
  the local path of ``{task}/{uuid}`` (driver/driver.go:795-800), and an
  ``executor-logs`` output, since PUBLISH_LOGS defaults to "true"
  (compiler/argocompiler/container.go:144-149, driver/driver.go:747-758).
- Each input artifact as ML Metadata gives it back: its URI and metadata as the producer's
  launcher recorded them, merged from the executor output (component/launcher_v2.go:
  805-808, 1188-1205), with no type (metadata/client.go:1144, ``Schema: ""``).
- Each input artifact with a gs://, minio:// or s3:// URI downloaded whole, every
  object under its key, to ``/gcs/...``, ``/minio/...`` or ``/s3/...`` before the
  command runs, whether the command reads it or not (component/launcher_v2.go:
  691, 927-1003, 1239-1253; objectstore/object_store.go:176-205).
- The parent folder of each output's local path made (component/launcher_v2.go:
  1280-1307); the command run with ``{{$}}`` replaced by the ExecutorInput's JSON
  (component/launcher_v2.go:1051-1077); after it, each output's local path
  uploaded, file by file, to its URI, a path that does not exist skipped
  (component/launcher_v2.go:778-855, objectstore/object_store.go:111-144).
- The volumes, secrets and variables its PlatformSpec and container spec name: a
  PersistentVolumeClaim the test's cluster holds at its mount path, a secret's keys
  as variables. The container's own disk goes with the pod. KFP sets no fsGroup
  (driver/k8s.go:721-790 sets runAsUser, runAsGroup and runAsNonRoot, and only when
  an administrator or the PlatformSpec asks): a claim is as a new volume is, its
  root folder owned by root with mode 0755 (``new_claim``), unless a Job of the
  cluster's prepared it (``cluster_jobs``).

Wherever the launcher fails a task, the harness fails it with the launcher's words
(``launcher_rules``): an input or output URI it cannot parse, an input object whose key
has a ``..`` component, an upload outside the pipeline root's bucket, a metadata value ML
Metadata cannot take. Outputs are
recorded into a real ML Metadata store and read back for the next task as the
driver reads them. A failed command's ``executor-logs`` are still uploaded
(launcher_v2.go:449-456, 787-790).

Stand-ins, each named: podman runs a pod's container (``--network host``, for the
object stores on 127.0.0.1); the PVC is a folder of this machine; ML Metadata runs in
memory; every pod also gets ``cluster_environment``, which
points the clients at the emulators, as a cluster's network routes them to the
real service. Scheduling (node selectors, tolerations, resources) is the
cluster's and is not imitated: every task runs here, one at a time, in the DAG's
order. Placeholders other than ``{{$}}`` are refused: none of the project's
pipelines uses one. Every pod gets ``KFP_POD_NAME`` and ``KFP_POD_UID`` as KFP's
compiler gives them (compiler/argocompiler/common.go:42-56); with ``Cluster.kubernetes``,
the API server's Service variables and the service account's files as Kubernetes
gives every pod (``fake_k8s_api``; ``fake_tf_operator`` runs the TFJobs a task creates).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import yaml
from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from launcher_rules import (
    WORKSPACE_FLAG,
    BucketConfig,
    LauncherError,
    MetadataStore,
    check_input_buckets,
    input_key,
    merge_runtime_artifacts,
    output_key,
)
from launcher_stores import ObjectStores

from component_image import chown_for_the_image, podman

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# component/launcher_v2.go:1239-1253, LocalPathForURI.
LOCAL_PREFIXES = {"gs://": "/gcs/", "minio://": "/minio/", "s3://": "/s3/"}
_LOG_OUTPUT = "executor-logs"


class TaskFailed(RuntimeError):
    """A task failed: its command exited non-zero, or the launcher refused it (the logs' or
    the launcher's words are in the message)."""

    def __init__(self, task: str, logs: str, log_uri: str | None = None) -> None:
        # Without faulthandler's list of extension modules, which would fill the tail.
        shown = "\n".join(x for x in logs.splitlines() if not x.startswith("Extension modules:"))
        super().__init__(f"{task} failed:\n{shown[-4000:]}")
        self.task = task
        self.logs = logs
        # Where the launcher uploaded the executor's logs (a failed command's too).
        self.log_uri = log_uri


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """One task as the launcher ran it."""

    executor_input: pipeline_spec_pb2.ExecutorInput
    # Each output as ML Metadata gives it back to a later task: name -> (uri, metadata).
    outputs: dict[str, tuple[str, dict]]
    # Each output's ML Metadata id, by name.
    output_ids: dict[str, int]
    logs: str
    # What the launcher copied into the pod before the command: each file's path in the pod
    # and bytes, and the seconds the copy took.
    staged: tuple[tuple[str, int], ...]
    staged_seconds: float
    # The PVC mounts and secret variables the pod got.
    mounts: tuple[str, ...]
    secret_variables: tuple[str, ...]
    # The task's wall seconds: the copies, the container, the uploads and the recording.
    seconds: float = 0.0

    @property
    def staged_bytes(self) -> int:
        return sum(size for _, size in self.staged)


@dataclasses.dataclass
class Cluster:
    """What the test's cluster holds: PVCs by claim name (a folder each, ``new_claim``),
    secrets by name (key -> value), the variables every pod gets in place of the cluster's
    network routes, the object stores, and ML Metadata (one store for all its runs)."""

    stores: ObjectStores
    claims: Mapping[str, Path] = dataclasses.field(default_factory=dict)
    secrets: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    cluster_environment: Mapping[str, str] = dataclasses.field(default_factory=dict)
    metadata: MetadataStore = dataclasses.field(default_factory=MetadataStore)
    # The API server every pod reaches as its in-cluster configuration does, if any.
    kubernetes: InClusterApi | None = None


@dataclasses.dataclass(frozen=True)
class InClusterApi:
    """An API server on 127.0.0.1 (``fake_k8s_api``, over HTTPS) and the service account
    folder Kubernetes mounts in every pod (its namespace, token and CA)."""

    port: int
    service_account: Path

    def pod_options(self) -> list[str]:
        """What a pod of the cluster gets: the API server's Service variables (kubelet's) and
        the service account's files."""
        return [
            "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", f"KUBERNETES_SERVICE_PORT={self.port}",
            "-v", f"{self.service_account}:{SERVICE_ACCOUNT_DIR}:ro",
        ]  # fmt: skip


def new_claim(folder: Path) -> Path:
    """A PersistentVolumeClaim's volume as a storage class makes it: its root folder owned by
    root, mode 0755 (nothing in KFP's pod spec changes that: no fsGroup)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, 0, 0)
    folder.chmod(0o755)
    return folder


def local_path_for_uri(uri: str) -> str | None:
    """The launcher's local path for a URI (LocalPathForURI); None for another scheme."""
    for remote, local in LOCAL_PREFIXES.items():
        if uri.startswith(remote):
            return local + uri[len(remote) :]
    return None


def _ordered_tasks(dag: Mapping) -> list[str]:
    """The DAG's tasks, each after those it depends on (a cluster may run the rest at once)."""
    tasks, done, order = dag["tasks"], set(), []
    while len(order) < len(tasks):
        ready = sorted(
            name
            for name, task in tasks.items()
            if name not in done and set(task.get("dependentTasks", [])) <= done
        )
        if not ready:
            raise ValueError(f"the DAG has a cycle among {sorted(set(tasks) - done)}")
        order += ready
        done |= set(ready)
    return order


def _struct(data: Mapping) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(data))
    return struct


class _Run:
    """One run of a compiled pipeline: the driver's and launcher's work for each task."""

    def __init__(self, package: Path, cluster: Cluster, pipeline_root: str, arguments: Mapping):
        documents = list(yaml.safe_load_all(package.read_text()))
        self.spec = documents[0]
        platform = documents[1] if len(documents) > 1 else {}
        self.executors_k8s = (
            platform.get("platforms", {}).get("kubernetes", {}).get("deploymentSpec", {})
            .get("executors", {})
        )  # fmt: skip
        self.cluster = cluster
        self.root = BucketConfig.of_pipeline_root(pipeline_root)
        run_id = uuid.uuid4().hex
        # metadata/client.go:420: the run's root under the pipeline root.
        self.run_root = f"{pipeline_root.rstrip('/')}/{self.spec['pipelineInfo']['name']}/{run_id}"
        self.arguments = dict(arguments)
        self.records: dict[str, TaskRecord] = {}

    def _parameter(self, spec: Mapping) -> struct_pb2.Value:
        value = struct_pb2.Value()
        if "runtimeValue" in spec:
            json_format.ParseDict(spec["runtimeValue"]["constant"], value)
        elif "componentInputParameter" in spec:
            name = spec["componentInputParameter"]
            root_inputs = self.spec["root"].get("inputDefinitions", {}).get("parameters", {})
            given = self.arguments.get(name, root_inputs.get(name, {}).get("defaultValue"))
            json_format.ParseDict(given, value)
        else:
            raise ValueError(f"parameter source {spec} is not one this harness follows")
        return value

    def _inputs(self, task: Mapping, component: Mapping) -> pipeline_spec_pb2.ExecutorInput.Inputs:
        inputs = pipeline_spec_pb2.ExecutorInput.Inputs()
        for name, spec in task.get("inputs", {}).get("parameters", {}).items():
            inputs.parameter_values[name].CopyFrom(self._parameter(spec))
        # component/launcher_v2.go:1310, addDefaultParams: the component's own defaults.
        for name, spec in component.get("inputDefinitions", {}).get("parameters", {}).items():
            if name not in inputs.parameter_values and "defaultValue" in spec:
                json_format.ParseDict(spec["defaultValue"], inputs.parameter_values[name])
        for name, spec in task.get("inputs", {}).get("artifacts", {}).items():
            source = spec["taskOutputArtifact"]
            artifact_id = self.records[source["producerTask"]].output_ids[
                source["outputArtifactKey"]
            ]
            # driver/resolve.go:1015, from ML Metadata: its id as its name, no type.
            inputs.artifacts[name].artifacts.append(self.cluster.metadata.read(artifact_id))
        return inputs

    def _outputs(self, name: str, component: Mapping) -> pipeline_spec_pb2.ExecutorInput.Outputs:
        outputs = pipeline_spec_pb2.ExecutorInput.Outputs()
        task_root = f"{self.run_root}/{name}/{uuid.uuid4()}"  # driver/driver.go:767
        definitions = dict(component.get("outputDefinitions", {}).get("artifacts", {}))
        definitions[_LOG_OUTPUT] = {"artifactType": {"schemaTitle": "system.Artifact"}}
        for output, spec in definitions.items():
            artifact = outputs.artifacts[output].artifacts.add(
                name=output, uri=f"{task_root}/{output}"
            )
            json_format.ParseDict(spec["artifactType"], artifact.type)
            if "metadata" in spec:
                artifact.metadata.CopyFrom(_struct(spec["metadata"]))
        local_root = local_path_for_uri(task_root)
        outputs.output_file = f"{local_root}/output_metadata.json"  # driver/driver.go:795-800
        return outputs

    def run_task(self, name: str, pod_disk: Path) -> TaskRecord:
        start = time.monotonic()
        task = self.spec["root"]["dag"]["tasks"][name]
        component = self.spec["components"][task["componentRef"]["name"]]
        label = component["executorLabel"]
        container = self.spec["deploymentSpec"]["executors"][label]["container"]
        executor_input = pipeline_spec_pb2.ExecutorInput(
            inputs=self._inputs(task, component), outputs=self._outputs(name, component)
        )
        try:
            staged = self._stage_inputs(executor_input, pod_disk)
        except LauncherError as e:
            raise TaskFailed(name, str(e)) from None
        for artifact_list in executor_input.outputs.artifacts.values():
            for artifact in artifact_list.artifacts:  # launcher_v2.go:1280-1307
                host = _on_pod_disk(pod_disk, local_path_for_uri(artifact.uri))
                host.parent.mkdir(parents=True, exist_ok=True)
        _on_pod_disk(pod_disk, executor_input.outputs.output_file).parent.mkdir(
            parents=True, exist_ok=True
        )
        # The image's /gcs, /minio and /s3 (its Dockerfile gives them to its user).
        chown_for_the_image(pod_disk)
        mounts, secret_variables, logs, succeeded = self._run_container(
            name, label, container, executor_input, pod_disk
        )
        try:
            recorded = self._upload_outputs(executor_input, pod_disk, succeeded)
        except LauncherError as e:
            raise TaskFailed(name, f"{logs}\n{e}") from None
        if not succeeded:
            log_id = recorded.get(_LOG_OUTPUT)
            log_uri = self.cluster.metadata.read(log_id).uri if log_id else None
            raise TaskFailed(name, logs, log_uri)
        outputs = {key: self.cluster.metadata.as_dict(i) for key, i in recorded.items()}
        return TaskRecord(
            executor_input, outputs, recorded, logs, *staged, tuple(mounts),
            tuple(secret_variables), time.monotonic() - start,
        )  # fmt: skip

    def _stage_inputs(self, executor_input, pod_disk: Path) -> tuple[tuple, float]:
        """downloadArtifacts (component/launcher_v2.go:927-1003): every input artifact of a
        known scheme, whole, after every input's bucket is parsed (fetchNonDefaultBuckets).

        Raises:
          LauncherError: a URI the launcher cannot parse, an object key with a '..'
            component, in its words.
        """
        start, staged = time.monotonic(), []
        check_input_buckets(executor_input.inputs, self.root)
        for name, artifact_list in executor_input.inputs.artifacts.items():
            for artifact in artifact_list.artifacts:
                flag = artifact.metadata.fields.get(WORKSPACE_FLAG)
                if flag is not None and flag.bool_value:
                    continue  # launcher_v2.go:952-958: in the workspace already
                local = local_path_for_uri(artifact.uri)
                if local is None:
                    continue  # launcher_v2.go:959-964: not a recognized storage URI
                input_key(name, artifact.uri, self.root)
                try:
                    written = self.cluster.stores.download(
                        artifact.uri, _on_pod_disk(pod_disk, local)
                    )
                except LauncherError as e:  # launcher_v2.go:974-976, 997-999: copyErr
                    raise LauncherError(
                        f"failed to download input artifact {name!r} from remote storage URI "
                        f"{artifact.uri!r}: {e}"
                    ) from None
                staged += [(f"/{p.relative_to(pod_disk).as_posix()}", n) for p, n in written]
        return tuple(staged), time.monotonic() - start

    def _run_container(self, name, label, container, executor_input, pod_disk: Path):
        config = self.executors_k8s.get(label, {})
        arguments = [*container.get("command", []), *container.get("args", [])]
        text = json_format.MessageToJson(executor_input, indent=None)
        for argument in arguments:
            if "{{$" in argument and argument != "{{$}}":
                raise ValueError(
                    f"{name}: placeholder {argument!r} is not one this harness follows"
                )
        arguments = [text if a == "{{$}}" else a for a in arguments]
        options = ["run", "--rm", "--network", "host"]
        for prefix in LOCAL_PREFIXES.values():
            folder = pod_disk / prefix.strip("/")
            folder.mkdir(exist_ok=True)
            options += ["-v", f"{folder}:{prefix.rstrip('/')}"]
        mounts = []
        for mount in config.get("pvcMount", []):
            claim = mount["pvcNameParameter"]["runtimeValue"]["constant"]
            if claim not in self.cluster.claims:
                raise TaskFailed(name, f"PersistentVolumeClaim {claim!r} not found (pod Pending)")
            options += ["-v", f"{self.cluster.claims[claim]}:{mount['mountPath']}"]
            mounts.append(f"{claim}:{mount['mountPath']}")
        environment = dict(self.cluster.cluster_environment)
        # compiler/argocompiler/common.go:42-56: every executor pod's name and uid, by fieldRef.
        pod = f"{self.spec['pipelineInfo']['name']}-{uuid.uuid4().hex[:5]}-system-container-impl"
        environment.update(KFP_POD_NAME=f"{pod}-{uuid.uuid4().int % 10**10}",
                           KFP_POD_UID=str(uuid.uuid4()))  # fmt: skip
        if self.cluster.kubernetes:
            options += self.cluster.kubernetes.pod_options()
        for variable in container.get("env", []):
            environment[variable["name"]] = variable["value"]
        secret_variables = []
        for secret in config.get("secretAsEnv", []):
            secret_name = secret["secretNameParameter"]["runtimeValue"]["constant"]
            if secret_name not in self.cluster.secrets:
                raise TaskFailed(
                    name, f"secret {secret_name!r} not found (CreateContainerConfigError)"
                )
            for pair in secret["keyToEnv"]:
                environment[pair["envVar"]] = self.cluster.secrets[secret_name][pair["secretKey"]]
                secret_variables.append(pair["envVar"])
        for key, value in environment.items():
            options += ["-e", f"{key}={value}"]
        ran = podman(*options, container["image"], *arguments)
        logs = ran.stdout + ran.stderr
        # The launcher's own log output (launcher_v2.go:632-655), uploaded with the others.
        log_uri = executor_input.outputs.artifacts[_LOG_OUTPUT].artifacts[0].uri
        log_file = _on_pod_disk(pod_disk, local_path_for_uri(log_uri))
        log_file.write_text(logs)
        return mounts, secret_variables, logs, ran.returncode == 0

    def _upload_outputs(self, executor_input, pod_disk: Path, succeeded: bool) -> dict[str, int]:
        """uploadOutputArtifacts (launcher_v2.go:778-855): each output merged with the
        executor output, uploaded under the pipeline root, and recorded in ML Metadata; after
        a failed command, the executor's logs alone (launcher_v2.go:449-456, 787-790).

        Returns:
          Each recorded output's ML Metadata id, by name.

        Raises:
          LauncherError: an upload outside the root's bucket, a value ML Metadata refuses.
        """
        written = pipeline_spec_pb2.ExecutorOutput()
        output_file = _on_pod_disk(pod_disk, executor_input.outputs.output_file)
        if succeeded and output_file.exists():  # launcher_v2.go:1213-1221: none is empty
            json_format.Parse(output_file.read_text(), written)
        recorded = {}
        for name, artifact_list in executor_input.outputs.artifacts.items():
            if not succeeded and name != _LOG_OUTPUT:
                continue
            artifact = pipeline_spec_pb2.RuntimeArtifact()
            artifact.CopyFrom(artifact_list.artifacts[0])
            if name != _LOG_OUTPUT and written.artifacts[name].artifacts:
                merge_runtime_artifacts(written.artifacts[name].artifacts[0], artifact)
            local = local_path_for_uri(artifact.uri)
            if local is None:  # launcher_v2.go:811-818: not uploaded, recorded as it is
                if name == _LOG_OUTPUT:
                    continue
            else:
                output_key(name, artifact.uri, self.root)
                if _on_pod_disk(pod_disk, local).exists():
                    self.cluster.stores.upload(_on_pod_disk(pod_disk, local), artifact.uri)
                elif name == _LOG_OUTPUT:  # launcher_v2.go:827-834
                    continue
            recorded[name] = self.cluster.metadata.record(name, artifact)
        return recorded


def _on_pod_disk(pod_disk: Path, local_path: str) -> Path:
    """Where a path of the pod's /gcs, /minio or /s3 lies on this machine."""
    return pod_disk / local_path.lstrip("/")


def run_as_cluster(
    package: Path,
    cluster: Cluster,
    pipeline_root: str,
    scratch: Path,
    arguments: Mapping[str, str] | None = None,
) -> dict[str, TaskRecord]:
    """Runs every task of a compiled pipeline as KFP's driver and launcher would in a cluster.

    Args:
      package: the compiled pipeline (PipelineSpec, optionally a PlatformSpec).
      cluster: the claims, secrets, variables and object stores of the test's cluster.
      pipeline_root: gs://, minio:// or s3:// URI the run's outputs go under.
      scratch: a folder for the pods' own disks, each removed when its task ends.
      arguments: the run's pipeline parameters; None: their defaults.

    Returns:
      Each task's record, by task name.

    Raises:
      TaskFailed: when a task's command fails; the tasks after it do not run.
    """
    run = _Run(package, cluster, pipeline_root, arguments or {})
    for name in _ordered_tasks(run.spec["root"]["dag"]):
        pod_disk = scratch / f"pod-{uuid.uuid4().hex[:8]}"
        pod_disk.mkdir(parents=True)
        try:
            run.records[name] = run.run_task(name, pod_disk)
        finally:
            shutil.rmtree(pod_disk, ignore_errors=True)
    return run.records
