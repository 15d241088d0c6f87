"""What the Trainer's task needs to know of a training job's Kubernetes API.

One value per kind of job the task can create (``tf_job.API``): where its objects live,
the condition that means it succeeded, the container whose log is the workers', and the
label and the key that name a worker's pod and its index. ``job_runner`` reads nothing
else of a kind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence

# A Kubernetes name that must be a DNS-1035 label (apimachinery's NameIsDNS1035Label).
_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_1035_MAX = 63
MAX_WORKERS = 999
# Faults of every worker a job survives, unless compiled otherwise.
DEFAULT_BACKOFF_LIMIT = 3
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGER = "tfrecord-pipelines"
# Istio's injector adds no proxy to a pod whose template says so, as KFP's own pods say
# (kubeflow/pipelines backend/src/apiserver/template/v2_template.go:416-417). In a Kubeflow
# profile's namespace a worker's pod with the proxy never ends: the proxy never exits.
NO_SIDECAR = {"sidecar.istio.io/inject": "false"}


@dataclasses.dataclass(frozen=True)
class JobApi:
    """A training job's API, as its controller serves it.

    Attributes:
      kind: the object's kind, e.g. ``TFJob``.
      group: its API group.
      version: its API version.
      plural: its resource name in the API's paths.
      container: the workers' container, whose log the task reads.
      succeeded: the condition type of a job whose workers all succeeded.
      job_label: the label the controller puts on the job's pods, valued the job's name.
      index_key: the pod's label or annotation that holds its worker index (0: the chief).
      longest_pod_name: the name of the last worker's pod, with ``{name}`` the job's and
        ``{last}`` the last index, as the controller's admission checks it.
      role_file: k8s/'s Role for the task's service account, which grants ``task_access``.
      creation_failures: the objects (``{name}``: the job's name) whose Warning events of
        these reasons say a controller cannot make the job's pods or their owners.
    """

    kind: str
    group: str
    version: str
    plural: str
    container: str
    succeeded: str
    job_label: str
    index_key: str
    longest_pod_name: str
    role_file: str
    creation_failures: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def api_version(self) -> str:
        """The object's ``apiVersion``."""
        return f"{self.group}/{self.version}"

    def max_name(self, workers: int) -> int:
        """The longest job name whose workers' pod names fit a DNS-1035 label."""
        return DNS_1035_MAX - len(self.longest_pod_name.format(name="", last=workers - 1))

    def task_access(self) -> tuple[tuple[str, str, str], ...]:
        """What the task's calls need, as RBAC names it: (verb, API group, resource), a
        subresource as ``pods/log``. Creating, reading and deleting the job; reading its own
        pod; listing the job's pods, reading their logs, and listing their events."""
        job = tuple((verb, self.group, self.plural) for verb in ("create", "get", "delete"))
        pods = (("get", "", "pods"), ("list", "", "pods"), ("get", "", "pods/log"))
        return (*job, *pods, ("list", "", "events"))

    def pod_selector(self, name: str) -> str:
        """The label selector of job NAME's pods."""
        return f"{self.job_label}={name}"

    def worker_index(self, metadata) -> int | None:
        """A pod's worker index from its metadata (the kubernetes client's V1ObjectMeta)."""
        for values in (metadata.labels, metadata.annotations):
            value = (values or {}).get(self.index_key)
            if value is not None and str(value).isdigit():
                return int(value)
        return None


def job_name(pod_name: str, max_length: int) -> str:
    """A job name for the task's pod: DNS-1035, at most MAX_LENGTH characters (``max_name``).

    The pod's name when it already is one; otherwise its letters, digits and dashes, cut
    to length, and a digest of the whole, so that two tasks' jobs never share a name.
    """
    if not pod_name:
        raise ValueError("the task's pod name is empty: the job's name comes from it")
    if _DNS_1035.fullmatch(pod_name) and len(pod_name) <= max_length:
        return pod_name
    digest = hashlib.sha256(pod_name.encode()).hexdigest()[:10]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", pod_name.lower())
    head = re.sub(r"^[^a-z]+", "", cleaned)[: max_length - len(digest) - 1].rstrip("-")
    return f"{head or 'trainer'}-{digest}"


def check_job(
    api: JobApi,
    name: str | None,
    workers: int,
    image: str,
    command: Sequence[str],
    backoff_limit: int = 0,
) -> None:
    """Refuses, in one line, what the controller or Kubernetes would refuse of a job of API's
    kind (NAME None: not known yet, as in a compiled template).

    Raises:
      ValueError: the value named.
    """
    if not 2 <= workers <= MAX_WORKERS:
        raise ValueError(
            f"a {api.kind} runs 2 to {MAX_WORKERS} trainer workers, got {workers} "
            "(one worker trains in the task's own pod)"
        )
    if name is not None and (not _DNS_1035.fullmatch(name) or len(name) > api.max_name(workers)):
        longest = api.longest_pod_name.format(name=name, last=workers - 1)
        raise ValueError(
            f"{api.kind} name {name!r} must be a DNS-1035 label of at most "
            f"{api.max_name(workers)} characters for {workers} workers: its last worker's "
            f"pod would be {longest!r}, over {DNS_1035_MAX}"
        )
    if backoff_limit < 0:
        raise ValueError(f"backoff_limit must be 0 or more, got {backoff_limit}")
    if not image or not command:
        raise ValueError("the workers need the task's image and a command")


def summed_backoff_limit(faults: int, workers: int) -> int:
    """A backoff limit counted over all workers' restarts that survives FAULTS faults of every
    worker (0: the first fails the job).

    The Training Operator fails a job once the restarts of its running pods, summed over
    its workers, reach the limit (kubeflow/trainer v1.9.4 pkg/core/job.go:95-133,
    PastBackoffLimit; a limit of 0 fails it at the first). One fault under
    MultiWorkerMirroredStrategy aborts every worker's collectives: all WORKERS restart.
    """
    return faults * workers + 1 if faults else 0
