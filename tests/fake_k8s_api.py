"""A stand-in of the Kubernetes API server's TFJob, TrainJob and pod endpoints, for contract
tests.

The Trainer's task talks to the API server through the ``kubernetes`` client; no
cluster runs here. ``FakeK8sApi`` answers the calls ``job_runner`` makes, over
HTTP, with the status codes and ``Status`` bodies the API server returns, and
refuses what the real one refuses:

- creating a TFJob or a TrainJob: one the CRD schema refuses is 422 Invalid, one the
  controller's validating webhook refuses is 403 (controller-runtime answers a
  validator's error as a denial), by ``tfjob_contract`` (kubeflow/trainer v1.9.4) and
  ``trainjob_contract`` (v2.3.0, against k8s/'s runtime: the TrainingRuntime in every
  namespace, and the ClusterTrainingRuntime); an existing name is
  409 AlreadyExists; otherwise 201 with the object, a uid and a resourceVersion added;
- reading one: 200, or 404 NotFound; each read moves the job one step along the
  story the test gives it (conditions, as the operator sets them), the last step
  staying;
- a TrainJob the API server takes but whose JobSet JobSet's webhook refuses
  (``trainjob_contract.jobset_webhook_errors``): 201, then never a condition, and the
  Trainer's Warning event on it (reason ``TrainJobResourcesCreationFailed``), as the
  Trainer leaves it (pkg/controller/trainjob_controller.go:107-119), its count raised
  at each read as the controller's retries raise it;
- listing events by ``involvedObject.name`` (``fieldSelector``): core/v1 Events, those a
  test or the rule above recorded (``warn``);
- a read of a job answered by a status a test gives instead (``hiccups``: the API
  server's 429 or 5xx);
- deleting one: 200 with a Success Status, or 404;
- reading a pod by name (the task's own, ``add_task_pod``): 200 with its service account
  and image pull secrets, or 404;
- authorizing each call as kube-apiserver's RBAC authorizer does, once a test gives the
  caller's rules (``grant``): a rule matches the request's verb, API group, resource
  (``pods/log`` for a subresource; ``*`` for any) and, when it names some, the object's
  name (kubernetes pkg/apis/rbac/v1/evaluation_helpers.go, VerbMatches, APIGroupMatches,
  ResourceMatches, ResourceNameMatches); none matching is
  403 Forbidden in the API server's words (apiserver's responsewriters/errors.go,
  forbiddenMessage, wrapped by apierrors.NewForbidden); a SelfSubjectAccessReview (every
  authenticated user may create one: the ``system:basic-user`` ClusterRole) answers the
  same question as ``status.allowed``;
- listing pods by the job's label (a TFJob's ``training.kubeflow.org/job-name``, each pod
  labelled with its ``replica-index`` as the operator labels them; a TrainJob's JobSet's
  ``jobset.sigs.k8s.io/jobset-name``, each pod annotated with its completion index as
  the Job controller annotates it) and reading a pod's log
  (``tailLines``, ``previous``, ``container``): the pods the test gives.

What the operator does between (pods, Services, ``TF_CONFIG``) is not imitated here:
a test gives the conditions and pods, or ``fake_tf_operator`` plays the operator with
real containers (``operator``: told of each job created and deleted).

Served as a cluster's pods reach the API server (``FakeK8sServer(..., in_cluster=...)``):
HTTPS with a CA of the test's own, and the service account's bearer token, refused
with 401 Unauthorized when missing or wrong, as kube-apiserver's authenticator does.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import ipaddress
import json
import re
import secrets
import ssl
import threading
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import yaml

from conftest import REPO_ROOT
from tfjob_contract import schema_errors, webhook_errors
from trainjob_contract import (
    cluster_runtime,
    jobset_webhook_errors,
    trainjob_schema_errors,
    trainjob_webhook_errors,
)

_JOBS = re.compile(
    r"^/apis/(kubeflow\.org/v1/namespaces/([^/]+)/tfjobs"
    r"|trainer\.kubeflow\.org/v1alpha1/namespaces/([^/]+)/trainjobs)(?:/([^/]+))?$"
)
_PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")
_EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
_LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")
_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
CONTRACTS = REPO_ROOT / "tests" / "contracts"
# A Kubeflow profile's default-editor's rules (kubeflow-edit), and standalone KFP's
# pipeline-runner's, as their manifests give them.
KUBEFLOW_EDIT_RULES = CONTRACTS / "kubeflow-edit-rules.yaml"
PIPELINE_RUNNER_ROLE = CONTRACTS / "kfp-pipeline-runner-role.yaml"
# The verb the authorizer checks for a method on one object; a GET of a collection is list.
_VERBS = {"POST": "create", "GET": "get", "DELETE": "delete"}
# k8s/'s TrainingRuntime, the one the cluster's namespaces hold.
RUNTIME = REPO_ROOT / "k8s" / "components" / "trainjob-runtime" / "runtime.yaml"


@functools.cache
def _runtime() -> dict:
    return yaml.safe_load(RUNTIME.read_text())


@dataclasses.dataclass(frozen=True)
class _Kind:
    """A kind of job as the API server and its controller take it: its checks (the CRD
    schema's, 422; the validating webhook's, 403), and its pods' job label and container."""

    kind: str
    webhook: str
    schema_errors: Callable[[dict], list[str]]
    webhook_errors: Callable[[dict], list[str]]
    job_label: str
    container: str


_KINDS = {
    "tfjobs": _Kind(
        "TFJob", "validating.tfjob.kubeflow.org", schema_errors, webhook_errors,
        "training.kubeflow.org/job-name", "tensorflow",
    ),
    "trainjobs": _Kind(
        "TrainJob", "validator.trainjob.trainer.kubeflow.org", trainjob_schema_errors,
        lambda job: trainjob_webhook_errors(job, _runtime(), cluster_runtime(_runtime())),
        "jobset.sigs.k8s.io/jobset-name", "node",
    ),
}  # fmt: skip
# Go's strconv.ParseBool, which the API server reads a boolean query parameter with.
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}


@dataclasses.dataclass
class FakePod:
    """A worker's pod: its name, its container's exit (None: running), its log lines."""

    name: str
    job: str
    exit_code: int | None = None
    index: int | None = None  # None: the number that ends its name (a TFJob's pods)
    kind: str = "tfjobs"
    restarted_after: int | None = None  # the exit code before a restart (lastState)
    log: str = ""
    previous_log: str = ""
    waiting: tuple[str, str] | None = None  # a container kubelet cannot start: reason, message
    unschedulable: str | None = None  # the scheduler's message for a pod it cannot place


def condition(kind: str, message: str = "") -> dict:
    return {"type": kind, "status": "True", "reason": f"TFJob{kind}", "message": message}


def story(*states: str) -> list[list[dict]]:
    """The conditions after each read, as the operator leaves them: the new state True, the
    ones before False."""
    steps, seen = [], []
    for state in states:
        seen = [{**c, "status": "False"} for c in seen] + [condition(state)]
        steps.append(seen)
    return steps


class FakeK8sApi:
    """The state behind the endpoints, and what the client asked."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], dict] = {}
        self.stories: dict[str, list[list[dict]]] = {}
        self.pods: list[FakePod] = []
        self.requests: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.rejections: list[tuple[int, str]] = []
        # The pods the tasks run in, by (namespace, name); each job's controller's events.
        self.task_pods: dict[tuple[str, str], dict] = {}
        self.events: dict[str, list[dict]] = {}
        # The events a controller keeps recording again (its retries), by event name.
        self.retried: set[str] = set()
        self.read = threading.Event()
        # Told of each job created (namespace, job) and deleted (namespace, name).
        self.operator = None
        # The caller's user name and the rules of the Roles bound to it; None: every call
        # is allowed (authorization not modelled).
        self.user = "system:serviceaccount:team-a:default"
        self.rules: list[dict] | None = None
        # Status codes the next reads of a job get instead of the job (the server's errors).
        self.hiccups: list[int] = []

    def grant(self, user: str, rules: list[dict]) -> None:
        """From now on, calls are authorized for USER by RULES (a Role's ``rules``)."""
        self.user, self.rules = user, rules

    def allows(self, verb: str, group: str, resource: str, name: str = "") -> bool:
        """Whether the caller's rules allow VERB on RESOURCE (``pods/log``) of API GROUP, the
        object NAME ("": none, as a list or a create names none)."""
        if self.rules is None:
            return True
        subresource = resource.partition("/")[2]
        return any(
            ("*" in rule.get("verbs", []) or verb in rule.get("verbs", []))
            and ("*" in rule.get("apiGroups", []) or group in rule.get("apiGroups", []))
            and any(
                allowed in ("*", resource) or (subresource and allowed == f"*/{subresource}")
                for allowed in rule.get("resources", [])
            )
            and (not rule.get("resourceNames") or name in rule["resourceNames"])
            for rule in self.rules
        )

    def _review(self, body: bytes) -> tuple[int, object]:
        review = json.loads(body)
        asked = review.get("spec", {}).get("resourceAttributes", {})
        resource = asked.get("resource", "")
        if asked.get("subresource"):
            resource = f"{resource}/{asked['subresource']}"
        allowed = self.allows(
            asked.get("verb", ""), asked.get("group", ""), resource, asked.get("name", "")
        )
        return 201, {**review, "status": {"allowed": allowed}}

    def _forbidden(self, method: str, path: str) -> tuple[int, object] | None:
        """A 403 for a call the caller's rules do not allow, as the API server words it."""
        call = request_attributes(method, path)
        if self.allows(call.verb, call.group, call.resource, call.name):
            return None
        plural = call.resource.partition("/")[0]
        what = f"{plural}.{call.group}" if call.group else plural
        return _status(
            403,
            "Forbidden",
            f"{what}{f' {json.dumps(call.name)}' if call.name else ''} is forbidden: User "
            f'"{self.user}" cannot {call.verb} resource "{call.resource}" in API group '
            f'"{call.group}" in the namespace "{call.namespace}"',
        )

    def handle(self, method: str, path: str, query: dict, body: bytes) -> tuple[int, object]:
        if path == _ACCESS_REVIEWS and method == "POST":
            return self._review(body)
        self.requests.append((method, path))
        refused = self._forbidden(method, path)
        if refused:
            return refused
        jobs, pods, log = _JOBS.match(path), _PODS.match(path), _LOG.match(path)
        pod, events = _POD.match(path), _EVENTS.match(path)
        if events and method == "GET":
            selector = query.get("fieldSelector", [""])[0]
            involved = selector.removeprefix("involvedObject.name=")
            return 200, {"kind": "EventList", "apiVersion": "v1",
                         "items": list(self.events.get(involved, []))}  # fmt: skip
        if pod and method == "GET":
            found = self.task_pods.get((pod.group(1), pod.group(2)))
            if found is None:
                return _status(404, "NotFound", f'pods "{pod.group(2)}" not found')
            return 200, found
        if jobs:
            plural = "tfjobs" if jobs.group(2) else "trainjobs"
            namespace, name = jobs.group(2) or jobs.group(3), jobs.group(4)
            resource = f"{plural}.{jobs.group(1).split('/')[0]}"
        if jobs and method == "POST" and not name:
            return self._create(plural, namespace, json.loads(body))
        if jobs and name:
            key = (namespace, name)
            if key not in self.jobs:
                return _status(404, "NotFound", f'{resource} "{key[1]}" not found')
            if method == "GET" and self.hiccups:
                code = self.hiccups.pop(0)
                return _status(code, http.HTTPStatus(code).phrase.replace(" ", ""), "try later")
            if method == "GET":
                self.read.set()
                for involved, events in self.events.items():  # the controllers' retries
                    for event in events:
                        retried = event["metadata"]["name"] in self.retried
                        if involved.startswith(key[1]) and retried:
                            event["count"] += 1
                return 200, self._advance(key)
            if method == "DELETE":
                del self.jobs[key]
                self.deleted.append(key[1])
                if self.operator is not None:
                    self.operator.deleted(*key)
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        if pods and method == "GET":
            label, _, value = query.get("labelSelector", [""])[0].partition("=")
            return 200, {
                "kind": "PodList",
                "apiVersion": "v1",
                "items": [
                    _pod(p)
                    for p in self.pods
                    if _KINDS[p.kind].job_label == label and p.job == value
                ],
            }
        if log and method == "GET":
            [pod] = [p for p in self.pods if p.name == log.group(2)] or [None]
            if pod is None:
                return _status(404, "NotFound", f'pods "{log.group(2)}" not found')
            container = _KINDS[pod.kind].container
            if query.get("container", [container])[0] != container:
                return _status(400, "BadRequest", "container not valid for pod")
            previous = query.get("previous", ["false"])[0] in _GO_TRUE
            text = pod.previous_log if previous else pod.log
            tail = query.get("tailLines")
            lines = text.splitlines(keepends=True)
            return 200, "".join(lines[-int(tail[0]) :] if tail else lines)
        return _status(404, "NotFound", f"the server could not find {method} {path}")

    def _create(self, plural: str, namespace: str, job: dict) -> tuple[int, object]:
        name = job.get("metadata", {}).get("name", "")
        kind = _KINDS[plural]
        group = job.get("apiVersion", "").split("/")[0]
        errors = kind.schema_errors(job)
        if errors:
            return self._reject(
                422, "Invalid", f'{kind.kind}.{group} "{name}" is invalid: {errors}'
            )
        denials = kind.webhook_errors(job)
        if denials:
            return self._reject(
                403,
                "Forbidden",
                f'admission webhook "{kind.webhook}" denied the request: [{", ".join(denials)}]',
            )
        if (namespace, name) in self.jobs:
            return self._reject(409, "AlreadyExists", f'{plural}.{group} "{name}" already exists')
        created = json.loads(json.dumps(job))
        created["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", generation=1)
        created["status"] = {}
        self.jobs[(namespace, name)] = created
        refused = jobset_webhook_errors(created, _runtime()) if plural == "trainjobs" else []
        if refused:
            message = (
                "TrainJob resources reconciliation failed: admission webhook "
                f'"vjobset.kb.io" denied the request: {", ".join(refused)}'
            )
            self.warn(namespace, name, "TrainJobResourcesCreationFailed", message)
            return 201, created
        if self.operator is not None:
            self.operator.created(namespace, json.loads(json.dumps(created)))
        return 201, created

    def add_task_pod(
        self, namespace: str, name: str, uid: str, service_account: str, pull_secrets=()
    ) -> None:
        """A task's pod, as the API server holds it once KFP's driver has made it."""
        self.task_pods[(namespace, name)] = {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "spec": {
                "serviceAccountName": service_account,
                "imagePullSecrets": [{"name": s} for s in pull_secrets],
                "containers": [{"name": "main", "image": "task"}],
            },
        }

    def warn(
        self, namespace: str, involved: str, reason: str, message: str, retried: bool = True
    ) -> dict:
        """Records a controller's Warning event on object INVOLVED, counted again at each read
        of the job it concerns while RETRIED (its controller failing again); returns it."""
        event = {
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"{involved}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {"name": involved, "namespace": namespace},
            "type": "Warning", "reason": reason, "message": message, "count": 1,
        }  # fmt: skip
        self.events.setdefault(involved, []).append(event)
        if retried:
            self.retried.add(event["metadata"]["name"])
        return event

    def set_conditions(self, namespace: str, name: str, conditions: list[dict]) -> None:
        """The operator's update of a job's status (the job may be gone)."""
        job = self.jobs.get((namespace, name))
        if job is not None:
            job["status"] = {"conditions": conditions}

    def _reject(self, code: int, reason: str, message: str) -> tuple[int, object]:
        self.rejections.append((code, message))
        return _status(code, reason, message)

    def _advance(self, key: tuple[str, str]) -> dict:
        steps = self.stories.get(key[1], [])
        job = self.jobs[key]
        if steps:
            job["status"] = {"conditions": steps.pop(0) if len(steps) > 1 else steps[0]}
        return job


class Call(NamedTuple):
    """What kube-apiserver's authorizer checks of a call (its RequestInfoFactory's
    attributes): the API group, the resource (``pods/log`` for a subresource), the verb,
    and the namespace and object's name."""

    group: str
    resource: str
    verb: str
    namespace: str
    name: str


def role_rules(path: Path) -> list[dict]:
    """The rules of the Role in file PATH."""
    [role] = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "Role"]
    return role["rules"]


def request_attributes(method: str, path: str) -> Call:
    """The authorizer's attributes of a METHOD call to a namespaced PATH (a GET of a
    collection is ``list``; a create names no object)."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    namespace_at = 3 if parts[0] == "api" else 4
    rest = parts[namespace_at + 1 :]
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    verb = _VERBS[method] if name or method != "GET" else "list"
    return Call(group, resource, verb, parts[namespace_at], name)


def _status(code: int, reason: str, message: str) -> tuple[int, dict]:
    return code, {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _pod(pod: FakePod) -> dict:
    def terminated(code):
        return {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed"}}

    status = {
        "name": _KINDS[pod.kind].container,
        "image": "image",
        "imageID": "image-id",
        "ready": pod.exit_code is None,
        "restartCount": 0 if pod.restarted_after is None else 1,
        "state": terminated(pod.exit_code) if pod.exit_code is not None else {"running": {}},
    }
    if pod.restarted_after is not None:
        status["lastState"] = terminated(pod.restarted_after)
    if pod.waiting is not None:
        status["state"] = {"waiting": {"reason": pod.waiting[0], "message": pod.waiting[1]}}
        status["ready"] = False
    # A TFJob's worker's pod is <job>-worker-<index> (pkg/core/utils.go:30).
    index = str(pod.index if pod.index is not None else pod.name.rpartition("-")[2])
    metadata = {"name": pod.name, "labels": {_KINDS[pod.kind].job_label: pod.job}}
    if pod.kind == "tfjobs":
        metadata["labels"]["training.kubeflow.org/replica-index"] = index
    else:
        metadata["annotations"] = {"batch.kubernetes.io/job-completion-index": index}
    pending = pod.waiting is not None or pod.unschedulable is not None
    result = {
        "metadata": metadata,
        "status": {
            "phase": "Pending" if pending else "Failed" if pod.exit_code else "Running",
            "containerStatuses": [] if pod.unschedulable is not None else [status],
        },
    }
    if pod.unschedulable is not None:
        result["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": pod.unschedulable}
        ]  # fmt: skip
    return result


@dataclasses.dataclass(frozen=True)
class ServiceAccount:
    """What Kubernetes mounts in a pod at /var/run/secrets/kubernetes.io/serviceaccount: the
    namespace, a token and the API server's CA (a folder here, ``write_service_account``)."""

    folder: Path
    namespace: str
    token: str
    certificate: Path
    key: Path


def write_service_account(folder: Path, namespace: str) -> ServiceAccount:
    """A self-signed certificate for 127.0.0.1 (the API server's, and its own CA),
    a random token, and the namespace, in FOLDER's files as a pod finds them."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    (folder / "ca.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file = folder.parent / f"{folder.name}.key"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    token = secrets.token_urlsafe(32)
    (folder / "token").write_text(token)
    (folder / "namespace").write_text(namespace)
    for path in folder.iterdir():
        path.chmod(0o644)
    return ServiceAccount(folder, namespace, token, folder / "ca.crt", key_file)


class FakeK8sServer:
    """Serves a FakeK8sApi on 127.0.0.1 at ``url`` until ``close``: over HTTP, or, given
    IN_CLUSTER, over HTTPS with its certificate, taking only its token."""

    def __init__(self, api: FakeK8sApi, in_cluster: ServiceAccount | None = None) -> None:
        token = in_cluster.token if in_cluster else None

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                # kube-apiserver's bearer token authenticator: the scheme in any case
                # (strings.EqualFold), then the token exactly.
                scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
                if token is not None and (scheme.lower() != "bearer" or given != token):
                    self._send(401, _status(401, "Unauthorized", "Unauthorized")[1])
                    return
                length = int(self.headers.get("Content-Length") or 0)
                code, body = api.handle(
                    self.command, parsed.path, urllib.parse.parse_qs(parsed.query),
                    self.rfile.read(length),
                )  # fmt: skip
                self._send(code, body)

            def _send(self, code: int, body) -> None:
                text = body if isinstance(body, str) else json.dumps(body)
                self.send_response(code)
                self.send_header(
                    "Content-Type", "text/plain" if isinstance(body, str) else "application/json"
                )
                self.send_header("Content-Length", str(len(text.encode())))
                self.end_headers()
                self.wfile.write(text.encode())

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if in_cluster:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(in_cluster.certificate, in_cluster.key)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
