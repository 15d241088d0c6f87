"""Runs the Trainer's training job from the Trainer's task: creates it, waits, reports,
deletes it.

As TFX's Vertex trainer runs its custom job from the task
(tfx/extensions/google_cloud_ai_platform/runner.py), the task creates the job
through the Kubernetes API (the ``kubernetes`` client's CustomObjectsApi: the
Kubeflow SDK needs a newer ``kubernetes`` than TFX allows), polls its conditions
until one is final, and ends as the job ends: the chief's log in the task's log
on success; on failure one line naming the failed replica and its exit code,
after that replica's last log lines. The job is deleted whatever the end,
including a timeout and a cancelled run (KFP stops the task's pod with SIGTERM;
the job's ownerReference to that pod covers a kill that leaves no time).

A job whose pods cannot start fails the task within minutes, not at the timeout: a
worker's pod the scheduler cannot place (no node with the GPUs, a claim not found),
whose image kubelet cannot pull, whose Secret or key is missing, or a pod, Service or
JobSet its controller cannot make (a quota, an admission refusal, named by the kind's
``creation_failures`` events). Each is retried by Kubernetes, so the task waits
``stuck_s`` (5 minutes) of the same cause before it fails, in one line naming it.

The states are the controller's conditions (a TFJob's: kubeflow/trainer v1.9.4,
pkg/apis/kubeflow.org/v1/common_types.go:132-160): the last condition whose
status is True. What differs between kinds of job is in their ``job_api.JobApi``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable

from tfrecord_pipelines.kubeflow import api_errors
from tfrecord_pipelines.kubeflow.training_job.job_api import JobApi

LOG_LINES = 20
# How long a cause that keeps the job's pods from starting may last before the task fails.
STUCK_S = 300.0
# A container kubelet cannot start, waiting for this reason (kubelet's images/types.go and
# kuberuntime_container.go), retried with a back-off, by the cause it stands for: a pull
# that keeps failing shows ErrImagePull and ImagePullBackOff in turn.
_WAITING = {
    "ErrImagePull": "image",
    "ImagePullBackOff": "image",
    "InvalidImageName": "image",
    "CreateContainerConfigError": "config",
    "CreateContainerError": "container",
}


# The API server's answers that a later call may not get (too many requests, its own
# errors), retried while they last less than ``stuck_s``.
_TRANSIENT = (429, 500, 502, 503, 504)


class JobFailed(RuntimeError):
    """The job failed, timed out or could not be created; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How the job ended: its final state, the seconds from creation, the chief's log."""

    state: str
    seconds: float
    chief_log: str


def state_of(job: dict) -> tuple[str, str]:
    """The job's state and its message: its last condition that is True ("" before any)."""
    current = ("", "")
    for condition in job.get("status", {}).get("conditions", []):
        if condition.get("status") == "True":
            current = (condition["type"], condition.get("message", ""))
    return current


def run(
    job: dict,
    *,
    api: JobApi,
    custom_objects,
    core,
    timeout_s: float,
    poll_s: float = 10.0,
    stuck_s: float = STUCK_S,
    log: Callable[[str], None] = print,
) -> Outcome:
    """Creates JOB, waits until it succeeds or fails, and deletes it.

    Args:
      job: the job (``tf_job.tf_job``).
      api: its kind's API (``tf_job.API``).
      custom_objects: a ``kubernetes.client.CustomObjectsApi``.
      core: a ``kubernetes.client.CoreV1Api``, for the workers' pods and logs.
      timeout_s: how long the job may take from its creation.
      poll_s: seconds between two reads of its conditions.
      stuck_s: how long one cause may keep its pods from starting before the task fails.
      log: where the job's progress and the chief's log go (the task's log).

    Returns:
      The final state, the seconds it took, and the chief's (worker 0's) log.

    Raises:
      JobFailed: the API refused the job or a read of it (or its own errors lasted
        STUCK_S), the job failed, its pods could not start for STUCK_S, or it did not end
        in time.
    """
    from kubernetes.client.exceptions import ApiException

    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    where = f"{api.kind} {namespace}/{name}"
    try:
        custom_objects.create_namespaced_custom_object(
            api.group, api.version, namespace, api.plural, job
        )
    except ApiException as e:
        raise JobFailed(f"{where} could not be created: {_reason(e)}") from None
    stuck = _Stuck(api, core, namespace, name, stuck_s)
    watch = _Watch(api, custom_objects, core, namespace, name, where, log, stuck)
    failing_since = None
    try:
        with _stopped_by_sigterm(api.kind):
            while True:
                try:
                    outcome = watch.step()
                except ApiException as e:
                    # The API server's own hiccups pass; a refusal, or a hiccup that lasts,
                    # ends the wait.
                    failing_since = failing_since or time.monotonic()
                    lasted = time.monotonic() - failing_since
                    if e.status not in _TRANSIENT or lasted >= stuck_s:
                        raise JobFailed(
                            f"{where} could not be watched: {_reason(e)}; deleted"
                        ) from None
                    time.sleep(poll_s)
                    continue
                failing_since = None
                if outcome:
                    return outcome
                if time.monotonic() - watch.start >= timeout_s:
                    raise JobFailed(
                        f"{where} did not finish in {timeout_s:.0f} s "
                        f"(last state: {watch.seen or 'not started'}); deleted"
                    )
                time.sleep(poll_s)
    finally:
        _delete(api, custom_objects, namespace, name, log)


@dataclasses.dataclass
class _Watch:
    """The task's reads of its job while it waits: the state last seen, since when."""

    api: JobApi
    custom_objects: object
    core: object
    namespace: str
    name: str
    where: str
    log: Callable[[str], None]
    stuck: _Stuck
    start: float = dataclasses.field(default_factory=time.monotonic)
    seen: str | None = None

    def step(self) -> Outcome | None:
        """One read of the job: its Outcome once it succeeded, else None (its state logged
        when it changed).

        Raises:
          JobFailed: it failed, or its pods have not started for ``stuck_s``.
        """
        api, core, namespace, name = self.api, self.core, self.namespace, self.name
        current = self.custom_objects.get_namespaced_custom_object(
            api.group, api.version, namespace, api.plural, name
        )
        state, message = state_of(current)
        if state != self.seen:
            self.log(f"{self.where}: {state or 'waiting for its controller'}. {message}".rstrip())
            self.seen = state
        if state == api.succeeded:
            chief = _chief_log(api, core, namespace, name)
            self.log(f"{self.where}: the chief's log (worker 0):\n{chief}")
            return Outcome(state, time.monotonic() - self.start, chief)
        if state == "Failed":
            raise JobFailed(_failure(api, core, namespace, name, self.where, message, self.log))
        cause = self.stuck.cause()
        if cause:
            raise JobFailed(f"{self.where} cannot start: {cause}; deleted")
        return None


def check_access(api: JobApi, authorization, namespace: str, account: str) -> None:
    """Asks the API server whether the task may make every call of ``api.task_access`` in
    NAMESPACE (a SelfSubjectAccessReview each, as ``kubectl auth can-i``), before any job
    exists: a refusal in the middle of the wait would leave workers training for nothing.

    Args:
      api: the kind's API.
      authorization: a ``kubernetes.client.AuthorizationV1Api``.
      namespace: the task's namespace.
      account: the task pod's service account, for the message.

    Raises:
      JobFailed: one line naming every call refused and the Role that grants them.
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    refused = []
    for verb, group, resource in api.task_access():
        plural, _, subresource = resource.partition("/")
        attributes = client.V1ResourceAttributes(
            namespace=namespace, verb=verb, group=group, resource=plural,
            subresource=subresource or None,
        )  # fmt: skip
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
        )
        try:
            answer = authorization.create_self_subject_access_review(review)
        except ApiException as e:
            raise JobFailed(f"the task cannot ask what it may do: {_reason(e)}") from None
        if not answer.status.allowed:
            refused.append(f"{verb} {resource}{f'.{group}' if group else ''}")
    if refused:
        raise JobFailed(
            f"the task's service account {namespace}/{account} may not "
            f"{', '.join(refused)} in namespace {namespace}: bind it the Role in "
            f"{api.role_file}; no {api.kind} was made"
        )


class _Stuck:
    """What keeps the job's pods from starting, once the same cause has lasted STUCK_S."""

    def __init__(self, api: JobApi, core, namespace: str, name: str, stuck_s: float) -> None:
        self.api, self.core, self.namespace, self.name = api, core, namespace, name
        self.stuck_s = stuck_s
        # Each cause's key -> (when first seen, its first occurrence's mark).
        self._seen: dict[tuple, tuple[float, object]] = {}

    def cause(self) -> str | None:
        """The first cause seen for STUCK_S and still there, in one line; else None."""
        now, current = time.monotonic(), {}
        for key, mark, words in self._causes():
            current[key] = (mark, words)
            self._seen.setdefault(key, (now, mark))
        for key in list(self._seen):
            if key not in current:
                del self._seen[key]
        for key, (first, first_mark) in self._seen.items():
            mark, words = current[key]
            # An event counts only while its controller keeps recording it (a later mark).
            if now - first >= self.stuck_s and (key[0] != "event" or mark != first_mark):
                return f"{words} (for {now - first:.0f} s)"
        return None

    def _causes(self):
        for pod in _pods(self.api, self.core, self.namespace, self.name):
            status, pod_name = pod.status, pod.metadata.name
            for condition in status.conditions or []:
                if (condition.type, condition.status, condition.reason) == (
                    "PodScheduled", "False", "Unschedulable",
                ):  # fmt: skip
                    yield (
                        ("pod", pod_name, "Unschedulable"),
                        None,
                        (f"{pod_name} Unschedulable: {_one_line(condition.message)}"),
                    )
            containers = status.init_container_statuses or []
            for container in [*containers, *(status.container_statuses or [])]:
                waiting = container.state and container.state.waiting
                if waiting and waiting.reason in _WAITING:
                    yield (
                        ("pod", pod_name, _WAITING[waiting.reason]),
                        None,
                        (f"{pod_name} {waiting.reason}: {_one_line(waiting.message)}"),
                    )
        for pattern, reasons in self.api.creation_failures:
            involved = pattern.format(name=self.name)
            events = self.core.list_namespaced_event(
                self.namespace, field_selector=f"involvedObject.name={involved}"
            ).items
            for event in events:
                if event.type == "Warning" and event.reason in reasons:
                    mark = (event.count, str(event.last_timestamp), str(event.series))
                    yield (
                        ("event", involved, event.reason, event.metadata.name),
                        mark,
                        (f"{involved} {event.reason}: {_one_line(event.message)}"),
                    )


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _pods(api: JobApi, core, namespace: str, name: str) -> list:
    """The job's pods, by worker index (then name)."""
    pods = core.list_namespaced_pod(namespace, label_selector=api.pod_selector(name)).items

    def order(pod):
        index = api.worker_index(pod.metadata)
        return (index is None, index or 0, pod.metadata.name)

    return sorted(pods, key=order)


def _chief_log(api: JobApi, core, namespace: str, name: str) -> str:
    """Worker 0's whole log."""
    for pod in _pods(api, core, namespace, name):
        if api.worker_index(pod.metadata) == 0:
            return _log(api, core, namespace, pod.metadata.name, tail=None)
    return "(no log: worker 0's pod is gone)"


def _failure(api: JobApi, core, namespace: str, name: str, where: str, message: str, log) -> str:
    """The failed replica, its exit code and last log line; its last lines go to LOG."""
    for pod in _pods(api, core, namespace, name):
        for status in pod.status.container_statuses or []:
            for terminated, previous in (
                (status.state and status.state.terminated, False),
                (status.last_state and status.last_state.terminated, True),
            ):
                if terminated and terminated.exit_code:
                    lines = _log(api, core, namespace, pod.metadata.name, LOG_LINES, previous)
                    log(f"{where}: the last lines of {pod.metadata.name}:\n{lines}")
                    last = next((s for s in reversed(lines.splitlines()) if s.strip()), "")
                    return f"{where} failed: {pod.metadata.name} exited {terminated.exit_code}" + (
                        f": {last.strip()}" if last else ""
                    )
    return f"{where} failed: {message or 'no replica left an exit code'}"


def _log(
    api: JobApi, core, namespace: str, pod: str, tail: int | None, previous: bool = False
) -> str:
    from kubernetes.client.exceptions import ApiException

    try:
        return core.read_namespaced_pod_log(
            pod, namespace, container=api.container, tail_lines=tail, previous=previous
        )
    except ApiException as e:
        return f"(no log: {_reason(e)})"


def _delete(api: JobApi, custom_objects, namespace: str, name: str, log) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        custom_objects.delete_namespaced_custom_object(
            api.group, api.version, namespace, api.plural, name, propagation_policy="Background"
        )
    except ApiException as e:
        if e.status != 404:
            log(f"{api.kind} {namespace}/{name} could not be deleted: {_reason(e)}")


def _reason(error) -> str:
    """The API server's message for ERROR on one line, else its status and reason."""
    return api_errors.message_of(error) or f"{error.status} {error.reason}"


@contextlib.contextmanager
def _stopped_by_sigterm(kind: str):
    """SIGTERM (KFP stopping the task's pod) ends the wait as an exception would: the job
    is deleted on the way out. Only the main thread can take signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise JobFailed(f"the task was stopped (SIGTERM); the {kind} is deleted")

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
