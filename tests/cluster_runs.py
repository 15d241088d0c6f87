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
- Its output parameters read from the executor output, else from
  ``/tmp/kfp/outputs/{name}`` (launcher_v2.go:484-515, driver/driver.go:785-789), and
  handed to a later task's ``taskOutputParameter``.
- KFP's cache (``kfp_cache``): a task with ``enableCache`` is looked up by the key
  cache.go builds; a hit does not run and hands on the cached execution's artifacts and
  parameters; a miss that succeeds makes an entry. ``Cluster.cache`` lives across runs.

Wherever the launcher fails a task, the harness fails it with the launcher's words
(``launcher_rules``): an input or output URI it cannot parse, an input object whose key
has a ``..`` component, an upload outside the run's own folder ``{root}/{pipeline}/{run}``
(the launcher's default bucket, launcher_v2.go:256-257 from metadata/client.go:294-303,
420), a store's refusal of an upload or a download (launcher_v2.go:834, 974-999), an
output parameter it cannot read, a metadata value ML Metadata cannot take. Outputs are
recorded into a real ML Metadata store and read back for the next task as the
driver reads them. A failed command's ``executor-logs`` are still uploaded, and
nothing else (launcher_v2.go:449-456, 786-790).

Stand-ins, each named: podman runs a pod's container (``--network host``, for the
object stores on 127.0.0.1); the PVC is a folder of this machine; ML Metadata runs in
memory; every pod also gets ``cluster_environment``, which points the clients at the
emulators, as a cluster's network routes them to the real service, and
``Cluster.services``' names as the cluster's DNS resolves them. The launcher opens each
bucket with the session its rules give it (``launcher_sessions``: the kfp-launcher
ConfigMap's provider or the release's default for the root's bucket, the pod's
environment for any other), each store with the keys it takes. Tasks start as Argo
starts them (``argo_schedule``): every task whose dependencies succeeded at once, each
pod on a node of its own, and a DAG in which two tasks that can run at once mount one
ReadWriteOnce claim is refused. Placement (node selectors, tolerations, resources) is
the cluster's and is not imitated. Placeholders other than ``{{$}}`` are refused: none
of the project's pipelines uses one. Every pod gets ``KFP_POD_NAME`` and ``KFP_POD_UID`` as KFP's
compiler gives them (compiler/argocompiler/common.go:42-56); with ``Cluster.kubernetes``,
the API server's Service variables and the service account's files as Kubernetes
gives every pod (``fake_k8s_api``; ``fake_tf_operator`` runs the TFJobs a task creates).
"""

from __future__ import annotations

import dataclasses
import shutil
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from pathlib import Path

import yaml
from argo_schedule import run_dag
from cluster_pods import LOCAL_PREFIXES, InClusterApi, local_path_for_uri, on_pod_disk
from cluster_tasks import TaskFailed, TaskRecord
from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from kfp_cache import Cache, CachedExecution, enabled, fingerprint
from launcher_rules import (
    WORKSPACE_FLAG,
    BucketConfig,
    LauncherError,
    MetadataStore,
    check_input_buckets,
    collect_output_parameters,
    input_key,
    merge_runtime_artifacts,
    output_key,
)
from launcher_sessions import S3Access, as_recorded, root_session, s3_access, session_for
from launcher_stores import ObjectStores

from component_image import chown_for_the_image, podman

# driver/driver.go:785-789: where a task writes an output parameter the executor output omits.
PARAMETER_FOLDER = "/tmp/kfp/outputs"
_LOG_OUTPUT = "executor-logs"


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
    # KFP's cache (the API server's entries), across the cluster's runs; None: the runs are
    # created with caching off, as KFP's "cache disabled" setting does.
    cache: Cache | None = dataclasses.field(default_factory=Cache)
    # The claims whose volumes many nodes may mount at once; every other is ReadWriteOnce, as
    # k8s/'s serving claim is.
    read_write_many: frozenset[str] = frozenset()
    # The run's namespace's kfp-launcher ConfigMap (its data), if any; the KFP release, whose
    # launcher has its own endpoint for a minio:// root (launcher_sessions.RELEASE_ENDPOINTS).
    launcher_config: Mapping[str, str] | None = None
    release: str = "2.16"
    # The cluster's network: a service's host:port (or AWS's host) -> a server on 127.0.0.1.
    # Pods resolve the host to the server's address (podman --add-host), on its own port.
    services: Mapping[str, str] = dataclasses.field(default_factory=dict)
    namespace: str = "kubeflow-user-example-com"
    # The API server every pod reaches as its in-cluster configuration does, if any.
    kubernetes: InClusterApi | None = None


def _struct(data: Mapping) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(data))
    return struct


class _Run:
    """One run of a compiled pipeline: the driver's and launcher's work for each task."""

    def __init__(
        self, package: Path, cluster: Cluster, pipeline_root: str, arguments: Mapping, run_id: str
    ):
        documents = list(yaml.safe_load_all(package.read_text()))
        self.spec = documents[0]
        platform = documents[1] if len(documents) > 1 else {}
        self.executors_k8s = (
            platform.get("platforms", {}).get("kubernetes", {}).get("deploymentSpec", {})
            .get("executors", {})
        )  # fmt: skip
        self.cluster = cluster
        self.pipeline = self.spec["pipelineInfo"]["name"]
        # metadata/client.go:420: the run's root under the pipeline root, which the launcher
        # opens as its default bucket (launcher_v2.go:256-257, from the run's context,
        # metadata/client.go:294-303): every output is uploaded under it.
        self.run_root = f"{pipeline_root.rstrip('/')}/{self.pipeline}/{run_id}"
        self.root = BucketConfig.of_pipeline_root(self.run_root)
        # config/env.go:118-160: the run's session for its root, recorded on every output.
        self.session = root_session(pipeline_root, cluster.launcher_config, cluster.release)
        self.session_info = as_recorded(self.session)
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
        elif "taskOutputParameter" in spec:  # driver/resolve.go: the producer's output
            source = spec["taskOutputParameter"]
            value.CopyFrom(self.records[source["producerTask"]].parameters[
                source["outputParameterKey"]])  # fmt: skip
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
        for output in component.get("outputDefinitions", {}).get("parameters", {}):
            outputs.parameters[output].output_file = f"{PARAMETER_FOLDER}/{output}"  # :785-789
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
        key = self._cache_key(name, task, component, container, executor_input)
        if key is not None:
            cached = self.cluster.cache.look_up(self.pipeline, self.cluster.namespace, name, key)
            if cached is not None:  # driver/container.go:217-240: the launcher never starts
                outputs = {
                    k: self.cluster.metadata.as_dict(i) for k, i in cached.output_ids.items()
                }
                return TaskRecord(
                    executor_input, outputs, dict(cached.output_ids), "", (), 0.0, (), (),
                    time.monotonic() - start, dict(cached.parameters), cached=True,
                )  # fmt: skip
        environment, secret_variables = self._pod_environment(name, label, container)
        try:
            staged = self._stage_inputs(executor_input, pod_disk, environment)
        except LauncherError as e:
            raise TaskFailed(name, str(e)) from None
        for artifact_list in executor_input.outputs.artifacts.values():
            for artifact in artifact_list.artifacts:  # launcher_v2.go:1280-1307
                host = on_pod_disk(pod_disk, local_path_for_uri(artifact.uri))
                host.parent.mkdir(parents=True, exist_ok=True)
        on_pod_disk(pod_disk, executor_input.outputs.output_file).parent.mkdir(
            parents=True, exist_ok=True
        )
        on_pod_disk(pod_disk, PARAMETER_FOLDER).mkdir(parents=True, exist_ok=True)
        # The image's /gcs, /minio and /s3 (its Dockerfile gives them to its user).
        chown_for_the_image(pod_disk)
        mounts, logs, succeeded = self._run_container(
            name, label, container, executor_input, pod_disk, environment
        )
        try:
            parameters = {}
            if succeeded:
                parameters = collect_output_parameters(
                    executor_input, component, lambda path: on_pod_disk(pod_disk, path)
                )
            recorded = self._upload_outputs(executor_input, pod_disk, succeeded, environment)
        except LauncherError as e:
            raise TaskFailed(name, f"{logs}\n{e}") from None
        if not succeeded:
            log_id = recorded.get(_LOG_OUTPUT)
            log_uri = self.cluster.metadata.read(log_id).uri if log_id else None
            raise TaskFailed(name, logs, log_uri)
        if key is not None:  # launcher_v2.go:299-317: a task that looked up and missed
            self.cluster.cache.add(
                self.pipeline, self.cluster.namespace, key, CachedExecution(recorded, parameters)
            )
        outputs = {key: self.cluster.metadata.as_dict(i) for key, i in recorded.items()}
        return TaskRecord(
            executor_input, outputs, recorded, logs, *staged, tuple(mounts),
            tuple(secret_variables), time.monotonic() - start, parameters,
        )  # fmt: skip

    def _access(self, uri: str, environment: Mapping[str, str]) -> S3Access | None:
        """The session the launcher opens the URI's bucket with (``launcher_sessions``); None
        for gs://, whose emulator takes no keys.

        Raises:
          LauncherError: a Secret or a store the session names that the cluster lacks.
        """
        if uri.startswith("gs://"):
            return None
        session = session_for(uri, self.root, self.session)
        cluster = self.cluster
        return s3_access(session, cluster.secrets, environment, cluster.services)

    def claims_of(self, name: str) -> list[str]:
        """The claims the task's pod mounts (its PlatformSpec's pvcMount)."""
        component = self.spec["components"][
            self.spec["root"]["dag"]["tasks"][name]["componentRef"]["name"]
        ]
        config = self.executors_k8s.get(component["executorLabel"], {})
        return [
            m["pvcNameParameter"]["runtimeValue"]["constant"] for m in config.get("pvcMount", [])
        ]

    def _cache_key(self, name, task, component, container, executor_input) -> str | None:
        """The task's fingerprint when the driver looks it up (driver/cache.go:132-147), else
        None: caching off for the task, or for the run."""
        if self.cluster.cache is None or not enabled(task):
            return None
        claims = self.claims_of(name)
        types = {
            name: spec["parameterType"]
            for name, spec in component.get("outputDefinitions", {}).get("parameters", {}).items()
        }
        return fingerprint(task, container, executor_input, types, claims)

    def _stage_inputs(self, executor_input, pod_disk: Path, environment) -> tuple[tuple, float]:
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
                        artifact.uri, on_pod_disk(pod_disk, local),
                        self._access(artifact.uri, environment),
                    )  # fmt: skip
                except LauncherError as e:  # launcher_v2.go:974-976, 997-999: copyErr
                    raise LauncherError(
                        f"failed to download input artifact {name!r} from remote storage URI "
                        f"{artifact.uri!r}: {e}"
                    ) from None
                staged += [(f"/{p.relative_to(pod_disk).as_posix()}", n) for p, n in written]
        return tuple(staged), time.monotonic() - start

    def _pod_environment(self, name: str, label: str, container: Mapping) -> tuple[dict, list]:
        """The pod's variables (the cluster's, KFP's, the container's and its Secrets'), and
        the names of those from Secrets.

        Raises:
          TaskFailed: a Secret the cluster does not hold (the pod never starts).
        """
        config = self.executors_k8s.get(label, {})
        environment = dict(self.cluster.cluster_environment)
        # compiler/argocompiler/common.go:42-56: every executor pod's name and uid, by fieldRef.
        pod = f"{self.spec['pipelineInfo']['name']}-{uuid.uuid4().hex[:5]}-system-container-impl"
        environment.update(KFP_POD_NAME=f"{pod}-{uuid.uuid4().int % 10**10}",
                           KFP_POD_UID=str(uuid.uuid4()))  # fmt: skip
        kubernetes = self.cluster.kubernetes
        if kubernetes is not None:
            namespace = (kubernetes.service_account / "namespace").read_text().strip()
            kubernetes.pod_created(
                namespace, environment["KFP_POD_NAME"], environment["KFP_POD_UID"]
            )
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
        return environment, secret_variables

    def _run_container(self, name, label, container, executor_input, pod_disk, environment):
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
        options += ["-v", f"{on_pod_disk(pod_disk, PARAMETER_FOLDER)}:{PARAMETER_FOLDER}"]
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
        if self.cluster.kubernetes:
            options += self.cluster.kubernetes.pod_options()
        for host, url in self.cluster.services.items():  # the cluster's DNS
            options += ["--add-host", f"{host.split(':')[0]}:{urllib.parse.urlsplit(url).hostname}"]
        for key, value in environment.items():
            options += ["-e", f"{key}={value}"]
        ran = podman(*options, container["image"], *arguments)
        logs = ran.stdout + ran.stderr
        # The launcher's own log output (launcher_v2.go:632-655), uploaded with the others.
        log_uri = executor_input.outputs.artifacts[_LOG_OUTPUT].artifacts[0].uri
        log_file = on_pod_disk(pod_disk, local_path_for_uri(log_uri))
        log_file.write_text(logs)
        return mounts, logs, ran.returncode == 0

    def _upload_outputs(
        self, executor_input, pod_disk: Path, succeeded: bool, environment
    ) -> dict[str, int]:
        """uploadOutputArtifacts (launcher_v2.go:778-855): each output merged with the
        executor output, uploaded under the pipeline root, and recorded in ML Metadata; after
        a failed command, the executor's logs alone (launcher_v2.go:449-456, 787-790).

        Returns:
          Each recorded output's ML Metadata id, by name.

        Raises:
          LauncherError: an upload outside the root's bucket, a value ML Metadata refuses.
        """
        written = pipeline_spec_pb2.ExecutorOutput()
        output_file = on_pod_disk(pod_disk, executor_input.outputs.output_file)
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
                try:
                    self.cluster.stores.upload(
                        on_pod_disk(pod_disk, local), artifact.uri,
                        self._access(artifact.uri, environment),
                    )  # fmt: skip
                except FileNotFoundError:  # launcher_v2.go:824-834: no file is no error
                    if name == _LOG_OUTPUT:
                        continue
                except LauncherError as e:  # launcher_v2.go:834
                    raise LauncherError(
                        f"failed to upload output artifact {name!r} to remote storage URI "
                        f"{artifact.uri!r}: {e}"
                    ) from None
            recorded[name] = self.cluster.metadata.record(name, artifact, self.session_info)
        return recorded


def run_as_cluster(
    package: Path,
    cluster: Cluster,
    pipeline_root: str,
    scratch: Path,
    arguments: Mapping[str, str] | None = None,
    run_id: str | None = None,
) -> dict[str, TaskRecord]:
    """Runs every task of a compiled pipeline as KFP's driver and launcher would in a cluster.

    Args:
      package: the compiled pipeline (PipelineSpec, optionally a PlatformSpec).
      cluster: the claims, secrets, variables and object stores of the test's cluster.
      pipeline_root: gs://, minio:// or s3:// URI the run's outputs go under.
      scratch: a folder for the pods' own disks, each removed when its task ends.
      arguments: the run's pipeline parameters; None: their defaults.
      run_id: the run's id, its folder's name under the pipeline's; None: a new uuid, as
        the API server gives.

    Returns:
      Each task's record, by task name.

    Raises:
      TaskFailed: when a task's command fails; the tasks after it do not run, those
        running then run to their end (``argo_schedule``).
      MultiAttachError: two tasks that can run at once mount one ReadWriteOnce claim.
    """
    run = _Run(package, cluster, pipeline_root, arguments or {}, run_id or uuid.uuid4().hex)

    def start(name: str) -> TaskRecord:
        pod_disk = scratch / f"pod-{uuid.uuid4().hex[:8]}"
        pod_disk.mkdir(parents=True)
        try:
            record = run.run_task(name, pod_disk)
        finally:
            shutil.rmtree(pod_disk, ignore_errors=True)
        run.records[name] = record
        return record

    tasks = run.spec["root"]["dag"]["tasks"]
    run_dag(tasks, start, run.claims_of, cluster.read_write_many)
    return run.records
