"""What the compiled pipeline fixes of the Trainer's training job, and the job made from it.

``compile --trainer-workers N`` (N > 1) puts a ``WorkerTemplate`` in the Trainer's
custom_config (``trainer_job_spec``); the Trainer's task adds the job's name,
namespace, owner and the workers' command when it runs (``job_trainer``), and
the template's kind of job builds the object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from tfrecord_pipelines.kubeflow.training_job import tf_job, train_job
from tfrecord_pipelines.kubeflow.training_job.job_api import (
    DEFAULT_BACKOFF_LIMIT,
    JobApi,
    check_job,
)
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources


@dataclasses.dataclass(frozen=True)
class _Kind:
    """A kind of job: its API, the function that builds one, and the template's fields only
    this kind takes (beside those every kind takes)."""

    api: JobApi
    build: Callable[..., dict]
    own_fields: tuple[str, ...]


# The kinds of job the task can create, by kind.
KINDS = {
    tf_job.API.kind: _Kind(tf_job.API, tf_job.tf_job, ("backoff_limit",)),
    train_job.API.kind: _Kind(train_job.API, train_job.train_job, ("runtime", "runtime_kind")),
}
DEFAULT_KIND = tf_job.API.kind
# How long the task waits for the job from its creation, unless compiled otherwise: a day.
DEFAULT_TIMEOUT_S = 24 * 3600
# The entry point's flag that makes a process one of the job's workers (``kfp_executor``).
WORKER_FLAG = "tfjob_worker"
# The Trainer's custom_config entry that holds the compiled WorkerTemplate.
CUSTOM_CONFIG_KEY = "worker_job"


@dataclasses.dataclass(frozen=True)
class WorkerTemplate:
    """What the compiled pipeline fixes of the Trainer's job.

    Attributes:
      workers: how many workers, 2 or more.
      image: the Trainer's image.
      resources: each worker's accelerators, CPU and memory (the Trainer pod's).
      env: the workers' variables: the Trainer container's, a Secret's key as a
        ``secretKeyRef`` (never its value).
      volumes: the claims the Trainer's pod mounts, as pod volumes.
      volume_mounts: where the container mounts them.
      node_selector: the Trainer's node pool.
      tolerations: the taints the Trainer's pod tolerates.
      backoff_limit: faults of every worker the job survives.
      timeout_s: how long the task waits for the job.
      kind: the kind of job (one of ``KINDS``).
      runtime: a TrainJob's runtime (a TFJob has none).
      runtime_kind: its kind: TrainingRuntime (in the namespace) or ClusterTrainingRuntime.
    """

    workers: int
    image: str
    resources: TrainerResources = TrainerResources()
    env: tuple[Mapping, ...] = ()
    volumes: tuple[Mapping, ...] = ()
    volume_mounts: tuple[Mapping, ...] = ()
    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tolerations: tuple[Mapping, ...] = ()
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    timeout_s: float = DEFAULT_TIMEOUT_S
    kind: str = DEFAULT_KIND
    runtime: str = train_job.DEFAULT_RUNTIME
    runtime_kind: str = train_job.RUNTIME_KIND

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(
                f"unknown kind of training job {self.kind!r}: one of {', '.join(sorted(KINDS))}"
            )
        check_job(self.api, None, self.workers, self.image, ["-"], self.backoff_limit)
        train_job.check_runtime_kind(self.runtime_kind)
        if self.timeout_s <= 0:
            raise ValueError(f"the {self.kind}'s timeout must be positive, got {self.timeout_s} s")

    @property
    def api(self) -> JobApi:
        """The API of the template's kind of job."""
        return KINDS[self.kind].api

    def to_custom_config(self) -> dict:
        """The JSON-serializable custom_config entry (``CUSTOM_CONFIG_KEY``)."""
        fields = dataclasses.asdict(self)
        fields["resources"] = dataclasses.asdict(self.resources)
        return {CUSTOM_CONFIG_KEY: fields}

    @classmethod
    def from_custom_config(cls, custom_config: Mapping | None) -> WorkerTemplate | None:
        """The template in the Trainer's custom_config; None: one worker, no job."""
        fields = (custom_config or {}).get(CUSTOM_CONFIG_KEY)
        if not fields:
            return None
        fields = dict(fields)
        fields["resources"] = TrainerResources(**fields["resources"])
        for name in ("env", "volumes", "volume_mounts", "tolerations"):
            fields[name] = tuple(fields.get(name, ()))
        return cls(**fields)

    def job(
        self,
        *,
        name: str,
        namespace: str,
        command: Sequence[str],
        owner=None,
        service_account: str | None = None,
        image_pull_secrets: Sequence[str] = (),
    ) -> dict:
        """The job of this template for the task's pod, of the template's kind, its workers
        running as SERVICE_ACCOUNT with IMAGE_PULL_SECRETS (the task pod's)."""
        kind = KINDS[self.kind]
        return kind.build(
            name=name,
            namespace=namespace,
            image=self.image,
            command=command,
            workers=self.workers,
            resources=self.resources,
            owner=owner,
            env=self.env,
            volumes=self.volumes,
            volume_mounts=self.volume_mounts,
            node_selector=self.node_selector,
            tolerations=self.tolerations,
            service_account=service_account,
            image_pull_secrets=image_pull_secrets,
            **{field: getattr(self, field) for field in kind.own_fields},
        )
