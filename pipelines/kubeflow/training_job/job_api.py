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
# What a controller appends to the job's name for a worker's pod and host name, for up to
# 999 workers: a TFJob's ``-worker-<index>``, a TrainJob's ``-node-0-<index>``.
_WORKER_SUFFIX = max(len("-worker-999"), len("-node-0-999"))
MAX_NAME = DNS_1035_MAX - _WORKER_SUFFIX
MAX_WORKERS = 999
DEFAULT_BACKOFF_LIMIT = 3
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGER = "tfrecord-pipelines"


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
    """

    kind: str
    group: str
    version: str
    plural: str
    container: str
    succeeded: str
    job_label: str
    index_key: str

    @property
    def api_version(self) -> str:
        """The object's ``apiVersion``."""
        return f"{self.group}/{self.version}"

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


def job_name(pod_name: str) -> str:
    """A job name for the task's pod: DNS-1035, short enough for the workers' names.

    The pod's name when it already is one; otherwise its letters, digits and dashes, cut
    to length, and a digest of the whole, so that two tasks' jobs never share a name.
    """
    if not pod_name:
        raise ValueError("the task's pod name is empty: the job's name comes from it")
    if _DNS_1035.fullmatch(pod_name) and len(pod_name) <= MAX_NAME:
        return pod_name
    digest = hashlib.sha256(pod_name.encode()).hexdigest()[:10]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", pod_name.lower())
    head = re.sub(r"^[^a-z]+", "", cleaned)[: MAX_NAME - len(digest) - 1].rstrip("-")
    return f"{head or 'trainer'}-{digest}"


def check_job(
    kind: str,
    name: str | None,
    workers: int,
    image: str,
    command: Sequence[str],
    backoff_limit: int = 0,
) -> None:
    """Refuses, in one line, what the controller or Kubernetes would refuse of a job of KIND
    (NAME None: not known yet, as in a compiled template; BACKOFF_LIMIT: a kind that takes
    one).

    Raises:
      ValueError: the value named.
    """
    if name is not None and (not _DNS_1035.fullmatch(name) or len(name) > MAX_NAME):
        raise ValueError(
            f"{kind} name {name!r} must be a DNS-1035 label of at most {MAX_NAME} characters "
            f"(its workers' pods and host names add up to {_WORKER_SUFFIX} characters to it)"
        )
    if not 2 <= workers <= MAX_WORKERS:
        raise ValueError(
            f"a {kind} runs 2 to {MAX_WORKERS} trainer workers, got {workers} "
            "(one worker trains in the task's own pod)"
        )
    if backoff_limit < 0:
        raise ValueError(f"backoff_limit must be 0 or more, got {backoff_limit}")
    if not image or not command:
        raise ValueError("the workers need the task's image and a command")
