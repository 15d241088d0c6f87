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
class TaskPlacement:
    """Where one component's pod may run and what it mounts.

    Attributes:
      node_selector: node labels the pod requires (e.g. the GPU node pool's).
      tolerations: taints the pod tolerates (GPU node pools are usually tainted so
        that only pods asking for GPUs land there).
      volumes: PersistentVolumeClaims to mount.
    """

    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    volumes: tuple[VolumeMount, ...] = ()

    def __post_init__(self):
        for key in self.node_selector:
            if not _LABEL_KEY.match(key):
                raise ValueError(f"Node selector key {key!r} is not a Kubernetes label key.")

    def is_empty(self) -> bool:
        """True when the placement changes nothing about the pod."""
        return not (self.node_selector or self.tolerations or self.volumes)

    def to_proto(self) -> k8s_pb2.KubernetesExecutorConfig:
        """Returns the executor's KubernetesExecutorConfig."""
        config = k8s_pb2.KubernetesExecutorConfig()
        if self.node_selector:
            config.node_selector.labels.update(self.node_selector)
        config.tolerations.extend(t.to_proto() for t in self.tolerations)
        config.pvc_mount.extend(v.to_proto() for v in self.volumes)
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
