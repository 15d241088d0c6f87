"""What the Trainer's pod asks Kubernetes for when the pipeline runs on Kubeflow."""

from __future__ import annotations

import dataclasses

from kfp.pipeline_spec import pipeline_spec_pb2
from kubernetes.utils import parse_quantity

ResourceSpec = pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec
# KFP's driver uses the accelerator type literally as the Kubernetes resource name.
NVIDIA_GPU = "nvidia.com/gpu"


@dataclasses.dataclass(frozen=True)
class TrainerResources:
    """The Trainer container's accelerator, CPU and memory limits.

    Attributes:
      gpus: accelerators to request; 0 trains on CPU.
      accelerator: the Kubernetes extended resource name of the accelerator
        (the NVIDIA device plugin's ``nvidia.com/gpu``).
      cpu: CPU limit as a Kubernetes quantity ("8", "7500m"); None leaves it
        to the namespace's defaults. The tf.data pipeline parses on these
        cores: too few and the GPU waits (see the run's input stall).
      memory: memory limit as a Kubernetes quantity ("32Gi"); must hold the
        in-memory cache when the Trainer caches the train split.
    """

    gpus: int = 1
    accelerator: str = NVIDIA_GPU
    cpu: str | None = None
    memory: str | None = None

    def __post_init__(self):
        if self.gpus < 0:
            raise ValueError(f"gpus must be 0 or more, got {self.gpus}.")
        if not self.accelerator:
            raise ValueError("accelerator must name a Kubernetes resource, e.g. nvidia.com/gpu.")
        for field in ("cpu", "memory"):
            value = getattr(self, field)
            if value is None:
                continue
            try:
                quantity = parse_quantity(value)
            except ValueError:
                quantity = 0
            if quantity <= 0:
                raise ValueError(
                    f"Trainer {field} {value!r} is not a positive Kubernetes quantity "
                    f"(e.g. {'8 or 7500m' if field == 'cpu' else '32Gi'})."
                )

    def to_resource_spec(self) -> ResourceSpec:
        """Returns the PipelineSpec ResourceSpec for ``with_platform_config``.

        Both the string fields newer KFP backends read and the numeric ones
        older backends read are set, as kfp's own compiler does.
        """
        spec = ResourceSpec()
        if self.cpu:
            spec.resource_cpu_limit = self.cpu
            spec.cpu_limit = float(parse_quantity(self.cpu))
        if self.memory:
            spec.resource_memory_limit = self.memory
            spec.memory_limit = float(parse_quantity(self.memory)) / 1e9  # GB, as kfp writes it
        if self.gpus:
            spec.accelerator.type = spec.accelerator.resource_type = self.accelerator
            spec.accelerator.count = self.gpus
            spec.accelerator.resource_count = str(self.gpus)
        return spec

    def limits(self) -> dict[str, str]:
        """A container's ``resources.limits``: its accelerators, CPU and memory, as set."""
        limits = {}
        if self.gpus:
            limits[self.accelerator] = str(self.gpus)
        if self.cpu:
            limits["cpu"] = self.cpu
        if self.memory:
            limits["memory"] = self.memory
        return limits
