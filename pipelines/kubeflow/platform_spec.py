"""The Kubernetes settings TFX's Kubeflow compiler cannot write: a PlatformSpec document.

KFP's backend reads node selectors, tolerations and volume mounts from a second
YAML document in the pipeline file, ``platforms.kubernetes.deploymentSpec.
executors[<executor label>]``, each value a kfp-kubernetes
``KubernetesExecutorConfig``; TFX's KubeflowV2DagRunner writes only the first.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from google.protobuf import json_format, struct_pb2
from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

# NVIDIA's GPU Feature Discovery (GPU operator) labels every GPU node so.
DEFAULT_GPU_NODE_SELECTOR = {"nvidia.com/gpu.present": "true"}
# GKE and AKS taint GPU node pools so; tolerating it lets the Trainer in.
DEFAULT_GPU_TOLERATION = "nvidia.com/gpu:NoSchedule"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A Kubernetes label key: an optional DNS-subdomain prefix and a name.
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_CLAIM_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclasses.dataclass(frozen=True)
class Toleration:
    """A pod toleration; ``value`` None tolerates any value of the taint (operator Exists)."""

    key: str
    effect: str = "NoSchedule"
    value: str | None = None

    def __post_init__(self):
        if not _LABEL_KEY.match(self.key):
            raise ValueError(f"Toleration key {self.key!r} is not a Kubernetes label key.")
        if self.effect not in _EFFECTS:
            raise ValueError(
                f"Toleration effect {self.effect!r} must be one of {', '.join(_EFFECTS)}."
            )

    @classmethod
    def parse(cls, text: str) -> Toleration:
        """Parses ``KEY[=VALUE]:EFFECT``, as ``kubectl taint`` writes a taint."""
        taint, sep, effect = text.rpartition(":")
        if not sep or not taint:
            raise ValueError(
                f"Toleration {text!r} must be KEY[=VALUE]:EFFECT, e.g. nvidia.com/gpu:NoSchedule."
            )
        key, eq, value = taint.partition("=")
        return cls(key=key, effect=effect, value=value if eq else None)

    def to_proto(self) -> k8s_pb2.Toleration:
        """Returns the kfp-kubernetes message."""
        if self.value is None:
            return k8s_pb2.Toleration(key=self.key, operator="Exists", effect=self.effect)
        return k8s_pb2.Toleration(
            key=self.key, operator="Equal", value=self.value, effect=self.effect
        )


@dataclasses.dataclass(frozen=True)
class VolumeMount:
    """An existing PersistentVolumeClaim mounted into a component's container."""

    claim: str
    mount_path: str

    def __post_init__(self):
        if not _CLAIM_NAME.match(self.claim) or len(self.claim) > 253:
            raise ValueError(f"Volume claim {self.claim!r} is not a Kubernetes object name.")
        if not self.mount_path.startswith("/"):
            raise ValueError(f"Mount path {self.mount_path!r} must be absolute.")

    @classmethod
    def parse(cls, text: str) -> VolumeMount:
        """Parses ``CLAIM:/mount/path``."""
        claim, sep, path = text.partition(":")
        if not sep:
            raise ValueError(f"Volume {text!r} must be CLAIM:/mount/path, e.g. my-data:/data.")
        return cls(claim=claim, mount_path=path)

    def to_proto(self) -> k8s_pb2.PvcMount:
        """Returns the kfp-kubernetes message, in the old and the new field as kfp writes it."""
        mount = k8s_pb2.PvcMount(constant=self.claim, mount_path=self.mount_path)
        mount.pvc_name_parameter.runtime_value.constant.string_value = self.claim
        return mount


@dataclasses.dataclass(frozen=True)
class SecretEnv:
    """A Secret's keys as environment variables of a component's container."""

    secret: str
    # (the Secret's key, the variable's name), in order.
    key_to_env: tuple[tuple[str, str], ...]

    def __post_init__(self):
        if not _CLAIM_NAME.match(self.secret) or len(self.secret) > 253:
            raise ValueError(f"Secret {self.secret!r} is not a Kubernetes object name.")

    def to_proto(self) -> k8s_pb2.SecretAsEnv:
        """Returns the kfp-kubernetes message, in the old and the new field as kfp writes it."""
        proto = k8s_pb2.SecretAsEnv(
            secret_name=self.secret,
            key_to_env=[
                k8s_pb2.SecretAsEnv.SecretKeyToEnvMap(secret_key=key, env_var=variable)
                for key, variable in self.key_to_env
            ],
        )
        proto.secret_name_parameter.runtime_value.constant.string_value = self.secret
        return proto


@dataclasses.dataclass(frozen=True)
class TaskPlacement:
    """Where one component's pod may run and what it mounts.

    Attributes:
      node_selector: node labels the pod requires (e.g. the GPU node pool's).
      tolerations: taints the pod tolerates (GPU node pools are usually tainted so
        that only pods asking for GPUs land there).
      volumes: PersistentVolumeClaims to mount.
      secret_env: Secrets whose keys the container gets as variables.
    """

    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    volumes: tuple[VolumeMount, ...] = ()
    secret_env: tuple[SecretEnv, ...] = ()

    def __post_init__(self):
        for key in self.node_selector:
            if not _LABEL_KEY.match(key):
                raise ValueError(f"Node selector key {key!r} is not a Kubernetes label key.")

    def is_empty(self) -> bool:
        """True when the placement changes nothing about the pod."""
        return not (self.node_selector or self.tolerations or self.volumes or self.secret_env)

    def to_proto(self) -> k8s_pb2.KubernetesExecutorConfig:
        """Returns the executor's KubernetesExecutorConfig."""
        config = k8s_pb2.KubernetesExecutorConfig()
        if self.node_selector:
            config.node_selector.labels.update(self.node_selector)
        config.tolerations.extend(t.to_proto() for t in self.tolerations)
        config.pvc_mount.extend(v.to_proto() for v in self.volumes)
        config.secret_as_env.extend(s.to_proto() for s in self.secret_env)
        return config


def parse_node_selector(items: list[str]) -> dict[str, str]:
    """Parses repeated ``KEY=VALUE`` command-line values into a node selector."""
    selector = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(
                f"Node selector {item!r} must be KEY=VALUE, e.g. nvidia.com/gpu.present=true."
            )
        selector[key] = value
    return selector


def executor_label(pipeline_spec: Mapping, component_id: str) -> str:
    """Returns the executor label of a component's task in a compiled PipelineSpec dict.

    Raises:
      ValueError: if the pipeline has no such task.
    """
    tasks = pipeline_spec["root"]["dag"]["tasks"]
    if component_id not in tasks:
        raise ValueError(f"The pipeline has no task {component_id!r}: {sorted(tasks)}.")
    component = tasks[component_id]["componentRef"]["name"]
    return pipeline_spec["components"][component]["executorLabel"]


def platform_spec(
    pipeline_spec: Mapping, placements: Mapping[str, TaskPlacement]
) -> pipeline_spec_pb2.PlatformSpec:
    """Builds the PlatformSpec for the given components' placements.

    Args:
      pipeline_spec: the compiled PipelineSpec as a dict (the first YAML document).
      placements: placement by component id; empty placements are left out.

    Returns:
      The PlatformSpec whose kubernetes executors are keyed by executor label.
    """
    spec = pipeline_spec_pb2.PlatformSpec()
    for component_id, placement in placements.items():
        if placement.is_empty():
            continue
        config = struct_pb2.Struct()
        config.update(json_format.MessageToDict(placement.to_proto()))
        executors = spec.platforms["kubernetes"].deployment_spec.executors
        executors[executor_label(pipeline_spec, component_id)].CopyFrom(config)
    return spec


class PlatformSpecError(ValueError):
    """A PlatformSpec document KFP's backend would ignore or read differently."""


def _first_line(error: Exception) -> str:
    """protobuf's parse errors go on to list the message's fields on further lines."""
    return str(error).splitlines()[0]


def _claim_as_backend_2_4(mount: k8s_pb2.PvcMount) -> str:
    """The claim backend 2.4.x mounts: its proto has no pvcNameParameter, only `constant`."""
    return mount.constant


def _claim_as_backend_2_5(mount: k8s_pb2.PvcMount, executor: str) -> str:
    """The claim backend 2.5.x mounts: pvcNameParameter first, else the deprecated `constant`."""
    if not mount.HasField("pvc_name_parameter"):
        return mount.constant
    parameter = mount.pvc_name_parameter
    constant = parameter.runtime_value.constant
    if parameter.WhichOneof("kind") != "runtime_value" or not constant.HasField("string_value"):
        raise PlatformSpecError(
            f"PlatformSpec executor {executor!r}: a PVC named by a parameter "
            f"({json_format.MessageToJson(parameter, indent=None)}) cannot be checked here; "
            "name the claim as a constant."
        )
    return parameter.runtime_value.constant.string_value


def _secret_env(proto: k8s_pb2.SecretAsEnv, executor: str) -> SecretEnv:
    """The Secret backends 2.4.x (``secretName``) and 2.5.x (``secretNameParameter`` first)
    both read, as PVC mounts are read."""
    new = proto.secret_name
    if proto.HasField("secret_name_parameter"):
        constant = proto.secret_name_parameter.runtime_value.constant
        new = constant.string_value if constant.HasField("string_value") else ""
    if new != proto.secret_name or not new:
        raise PlatformSpecError(
            f"PlatformSpec executor {executor!r}: a secret as variables names "
            f"{proto.secret_name!r} for backend 2.4 and {new!r} for 2.5; both need the same "
            "constant name."
        )
    return SecretEnv(new, tuple((m.secret_key, m.env_var) for m in proto.key_to_env))


def _toleration(proto: k8s_pb2.Toleration, executor: str) -> Toleration:
    if proto.HasField("toleration_json"):
        raise PlatformSpecError(
            f"PlatformSpec executor {executor!r}: toleration {proto.key!r} uses tolerationJson, "
            "which backend 2.5 reads and 2.4 ignores; write key, operator, value and effect."
        )
    if proto.operator not in ("Exists", "Equal"):
        raise PlatformSpecError(
            f"PlatformSpec executor {executor!r}: toleration operator {proto.operator!r} "
            "must be Exists or Equal."
        )
    return Toleration(
        key=proto.key,
        effect=proto.effect,
        value=proto.value if proto.operator == "Equal" else None,
    )


def _placement(config: k8s_pb2.KubernetesExecutorConfig, executor: str) -> TaskPlacement:
    """What backends 2.4.x and 2.5.x both make of one executor's config.

    Raises:
      PlatformSpecError: where the two would read it differently.
    """
    if config.node_selector.HasField("node_selector_json"):
        raise PlatformSpecError(
            f"PlatformSpec executor {executor!r}: nodeSelectorJson is read by backend 2.5 "
            "and ignored by 2.4; write the labels."
        )
    volumes = []
    for mount in config.pvc_mount:
        old, new = _claim_as_backend_2_4(mount), _claim_as_backend_2_5(mount, executor)
        if old != new or not new or not mount.mount_path:
            raise PlatformSpecError(
                f"PlatformSpec executor {executor!r}: PVC mount at {mount.mount_path!r} names "
                f"claim {old!r} for backend 2.4 and {new!r} for 2.5; both need the same claim "
                "and a mount path."
            )
        volumes.append(VolumeMount(claim=new, mount_path=mount.mount_path))
    secrets = tuple(_secret_env(s, executor) for s in config.secret_as_env)
    try:
        return TaskPlacement(
            node_selector=dict(config.node_selector.labels),
            tolerations=tuple(_toleration(t, executor) for t in config.tolerations),
            volumes=tuple(volumes),
            secret_env=secrets,
        )
    except ValueError as e:
        raise PlatformSpecError(f"PlatformSpec executor {executor!r}: {e}") from e


def read_back(pipeline_spec: Mapping, document: Mapping) -> dict[str, TaskPlacement]:
    """Reads a PlatformSpec document as KFP's backend does, refusing what it would drop.

    The API server keeps the document only if it parses into a PlatformSpec and
    has a ``kubernetes`` platform (``IsPlatformSpecWithKubernetesConfig``); any
    other document is ignored without a word. The compiler applies an
    executor's config only to components with that executor label, and the
    driver parses each config leniently (unknown fields dropped). So a typo,
    a wrong label or a field one backend version reads and the other does not
    would lose a node selector, a toleration or a volume silently; each is an
    error here.

    Args:
      pipeline_spec: the compiled PipelineSpec as a dict (the first YAML document).
      document: the PlatformSpec document as a dict.

    Returns:
      The placement each executor gets on backends 2.4.x and 2.5.x, by executor label.

    Raises:
      PlatformSpecError: naming what the backend would ignore or read differently.
    """
    spec = pipeline_spec_pb2.PlatformSpec()
    try:
        json_format.ParseDict(document, spec)
    except json_format.ParseError as e:
        raise PlatformSpecError(
            f"The PlatformSpec document does not parse, so KFP would ignore it: {_first_line(e)}"
        ) from e
    if "kubernetes" not in spec.platforms:
        raise PlatformSpecError(
            "The PlatformSpec document has no 'kubernetes' platform, so KFP would ignore it."
        )
    labels = {c.get("executorLabel") for c in pipeline_spec.get("components", {}).values()}
    placements = {}
    for executor, config in spec.platforms["kubernetes"].deployment_spec.executors.items():
        if executor not in labels:
            raise PlatformSpecError(
                f"PlatformSpec executor {executor!r} is no component's executor label "
                f"({', '.join(sorted(filter(None, labels)))}), so KFP would apply it to nothing."
            )
        parsed = k8s_pb2.KubernetesExecutorConfig()
        try:
            json_format.ParseDict(json_format.MessageToDict(config), parsed)
        except json_format.ParseError as e:
            raise PlatformSpecError(
                f"PlatformSpec executor {executor!r} is not a KubernetesExecutorConfig; KFP's "
                f"driver would drop what it does not know: {_first_line(e)}"
            ) from e
        placements[executor] = _placement(parsed, executor)
    return placements


def checked_document(pipeline_spec: Mapping, placements: Mapping[str, TaskPlacement]) -> dict:
    """The PlatformSpec document for placements, read back as KFP's backend reads it.

    Args:
      pipeline_spec: the compiled PipelineSpec as a dict (the first YAML document).
      placements: placement by component id; empty placements are left out.

    Returns:
      The document as a dict; empty when no placement changes anything.

    Raises:
      PlatformSpecError: if backend 2.4.x or 2.5.x would not apply exactly these
        placements (which would be a bug in this module).
    """
    document = json_format.MessageToDict(platform_spec(pipeline_spec, placements))
    if not document:
        return document
    wanted = {
        executor_label(pipeline_spec, component_id): placement
        for component_id, placement in placements.items()
        if not placement.is_empty()
    }
    applied = read_back(pipeline_spec, document)
    if applied != wanted:
        raise PlatformSpecError(
            f"The PlatformSpec would place the executors as {applied}, not as asked: {wanted}."
        )
    return document
