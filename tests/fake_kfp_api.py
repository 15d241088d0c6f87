"""A fake of KFP's v2beta1 API server for contract tests.

``FakeKfpApi`` answers kfp.Client's REST calls (healthz, experiments, runs,
pipeline uploads) with the JSON the real server returns, and checks each
request the way the real API server does, with its HTTP status, as read in
kubeflow/pipelines ``backend/src/apiserver`` at 2.4.1 and 2.5.0:

- The template (``template/v2_template.go``, ``NewV2SpecTemplate``): the YAML
  document that parses strictly into a PipelineSpec with a name and a root is
  the spec; one that parses into a PlatformSpec with a ``kubernetes`` platform
  is the PlatformSpec; any other document is ignored without a word (so a
  PlatformSpec that does not parse is dropped, not refused). Schema 2.1.0 only;
  the name must contain a lower-case letter or digit (an unanchored regexp).
- Uploads (``server/pipeline_upload_server.go``): a file over 32 MiB
  (``common.MaxFileLength``) or of another format is 400; a template error or
  a pipeline name outside ``^[a-z0-9][a-z0-9-]{0,127}$``
  (``common.ValidatePipelineName``) is 500; an existing name is 409.
- Run creation (``resource/resource_manager.go`` ``CreateRun``): a template
  error is 500; the run's parameters must be the root's, typed as declared,
  with none extra (``validatePipelineJobInputs``, 400); then the Argo
  compiler's checks (``v2/compiler/visitor.go``, ``argocompiler``) and Argo's
  workflow validation, each 500: every component reference resolves, every
  executor label names an executor, every executor is a container or an
  importer (a TFX Resolver's is neither), every DAG task name is an Argo field
  name (``^[a-zA-Z0-9][-a-zA-Z0-9]*$``, with ``-driver`` at most 128).
- Recurring run creation (``server/api_converter.go`` ``toModelJob``, then
  ``CreateJob``): a name, a max concurrency of 1 to 10, a cron that robfig/cron
  v1.2.0's ``cron.Parse`` accepts (``parse_robfig_cron``: six fields, seconds
  first, or five without the day of the week, or a descriptor), each 400; then
  the spec and parameters are checked as a run's.
- The experiment and pipeline version exist; multi-user calls carry a namespace.

It also checks this project's contract: a run's pipeline root, when given, is
an object store URI that KFP's launcher opens (none: the namespace's
kfp-launcher default). Zip and tarball uploads, which kfp.Client does not send
here, are refused rather than unpacked. A failed check answers like the server
and is recorded in ``FakeKfpApi.rejections``, so tests see both what the client
sent and what the server said. ``FakeKfpServer`` serves one on a free local port.
"""

from __future__ import annotations

import dataclasses
import email.parser
import email.policy
import http.server
import json
import re
import threading
import urllib.parse
import uuid
from typing import Any

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

API = "/apis/v2beta1"
_CREATED_AT = "2025-01-02T03:04:05Z"
# common.MaxFileLength: the largest pipeline file an upload may carry.
MAX_FILE_LENGTH = 32 << 20
_PIPELINE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,127}$")  # common.ValidatePipelineName
_SPEC_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # NewV2SpecTemplate, unanchored
_ARGO_FIELD_NAME = re.compile(r"^[a-zA-Z0-9][-a-zA-Z0-9]*$")  # Argo's workflow field names
_ARGO_FIELD_MAX = 128
# validatePipelineJobInputs: parameter type -> accepted JSON types, and its complaint.
_PARAMETER_KINDS = {
    "NUMBER_DOUBLE": ((int, float), "double or integer, but the parameter value is not of number"),
    "NUMBER_INTEGER": ((int, float), "double or integer, but the parameter value is not of number"),
    "STRING": ((str,), "string, but the input parameter is not of string"),
    "BOOLEAN": ((bool,), "bool, but the input parameter is not of bool"),
    "LIST": ((list,), "list, but the input parameter is not of list"),
    "STRUCT": ((dict,), "struct, but the input parameter is not of struct"),
}


@dataclasses.dataclass
class Call:
    """One request the fake server received."""

    method: str
    path: str
    query: dict[str, str]
    authorization: str | None
    body: Any


class FakeKfpApi:
    """In-memory KFP v2beta1 API server state and request checks.

    Args:
      multi_user: answer healthz as a multi-user deployment and require a
        namespace on experiment calls.
      failures: ``"METHOD /path"`` to the HTTP status answered there.
      login_page: answer every request with an HTML login page (a gateway
        that redirects unauthenticated clients).
    """

    def __init__(
        self,
        *,
        multi_user: bool = False,
        failures: dict[str, int] | None = None,
        login_page: bool = False,
    ) -> None:
        self.multi_user = multi_user
        self.failures = failures or {}
        self.login_page = login_page
        self.calls: list[Call] = []
        self.rejections: list[str] = []
        self.experiments: dict[str, dict] = {}
        self.pipelines: dict[str, dict] = {}
        self.versions: dict[str, dict] = {}
        self.runs: list[dict] = []
        self.recurring_runs: list[dict] = []
        self.received_specs: list[tuple[dict, dict]] = []
        # What the server keeps of each uploaded version's file, by version id.
        self.templates: dict[str, _Template] = {}

    def add_experiment(self, name: str, namespace: str = "") -> str:
        """Stores an experiment as if created earlier; returns its experiment_id."""
        experiment_id = str(uuid.uuid4())
        self.experiments[experiment_id] = {
            "experiment_id": experiment_id,
            "display_name": name,
            "namespace": namespace,
            "created_at": _CREATED_AT,
            "storage_state": "AVAILABLE",
        }
        return experiment_id

    def routes(self) -> list[str]:
        """The ``"METHOD /path"`` of every request received, in order."""
        return [f"{c.method} {c.path}" for c in self.calls]

    def handle(self, call: Call, files: dict[str, tuple[str, bytes]]) -> tuple[int, Any]:
        """Returns (status, JSON body) for one request."""
        self.calls.append(call)
        route = f"{call.method} {call.path}"
        if route in self.failures:
            return self.failures[route], _status(13, "internal error: database is locked")
        try:
            return self._dispatch(call, files)
        except _Rejected as e:
            self.rejections.append(str(e))
            return e.status, _upload_error(str(e)) if e.upload else _status(e.code, str(e))

    def _dispatch(self, call: Call, files: dict[str, tuple[str, bytes]]) -> tuple[int, Any]:
        route = f"{call.method} {call.path}"
        if route == f"GET {API}/healthz":
            return 200, {"commit_sha": "abc123", "tag_name": "2.4.0", "multi_user": self.multi_user}
        if route == f"GET {API}/experiments":
            namespace = self._namespace(call.query.get("namespace"), "ListExperiments")
            name = _filtered_name(call.query.get("filter"))
            found = [
                e
                for e in self.experiments.values()
                if e["display_name"] == name
                and (not self.multi_user or e["namespace"] == namespace)
            ]
            return 200, {"experiments": found, "total_size": len(found)} if found else {}
        if route == f"POST {API}/experiments":
            return 200, self._create_experiment(call.body)
        if route == f"POST {API}/runs":
            return 200, self._create_run(call.body)
        if route == f"POST {API}/recurringruns":
            return 200, self._create_recurring_run(call.body)
        if route == f"GET {API}/pipelines":
            name = _filtered_name(call.query.get("filter"))
            found = [p for p in self.pipelines.values() if p["display_name"] == name]
            return 200, {"pipelines": found, "total_size": len(found)} if found else {}
        if route == f"POST {API}/pipelines/upload":
            return 200, self._upload(call.query, files, pipeline_id=None)
        if route == f"POST {API}/pipelines/upload_version":
            return 200, self._upload(call.query, files, pipeline_id=call.query.get("pipelineid"))
        prefix, _, rest = call.path.partition(f"{API}/pipelines/")
        if call.method == "GET" and not prefix and rest.endswith("/versions"):
            pipeline_id = rest.removesuffix("/versions")
            versions = [v for v in self.versions.values() if v["pipeline_id"] == pipeline_id]
            # Newest first, as asked with sort_by=created_at desc.
            versions.reverse()
            size = int(call.query.get("page_size", 10))
            return 200, {"pipeline_versions": versions[:size], "total_size": len(versions)}
        raise _Rejected(f"no route {route}", status=404, code=5)

    def _namespace(self, namespace: str | None, method: str) -> str:
        if self.multi_user and not namespace:
            raise _Rejected(f"{method} requires a namespace in multi-user mode")
        return namespace or ""

    def _create_experiment(self, body: dict) -> dict:
        name = body.get("display_name")
        if not name:
            raise _Rejected("Experiment must have a non-empty name")
        namespace = self._namespace(body.get("namespace"), "CreateExperiment")
        if any(
            e["display_name"] == name and e["namespace"] == namespace
            for e in self.experiments.values()
        ):
            raise _Rejected(f"experiment {name!r} already exists", status=409, code=6)
        return self.experiments[self.add_experiment(name, namespace)]

    def _create_run(self, body: dict) -> dict:
        if not body.get("display_name"):
            raise _Rejected("The run name is empty. Please specify a valid name")
        if body.get("experiment_id") not in self.experiments:
            raise _Rejected(f"experiment {body.get('experiment_id')!r} not found", 404, 5)
        template = self._template_of(body)
        runtime = body.get("runtime_config") or {}
        _check_parameters(template.spec, runtime.get("parameters") or {})
        _check_argo_compile(template.spec)
        root = runtime.get("pipeline_root")
        if root is not None and not root.startswith(("gs://", "s3://", "minio://")):
            raise _Rejected(f"contract: pipeline root {root!r} is not an object store URI")
        run_id = str(uuid.uuid4())
        run = {
            **body,
            "run_id": run_id,
            "created_at": _CREATED_AT,
            "scheduled_at": "1970-01-01T00:00:00Z",
            "finished_at": "1970-01-01T00:00:00Z",
            "state": "PENDING",
            "storage_state": "AVAILABLE",
        }
        self.runs.append(run)
        return run

    def _create_recurring_run(self, body: dict) -> dict:
        """CreateRecurringRun: toModelJob's checks, then what CreateJob checks of a run's spec."""
        if not body.get("display_name"):
            raise _Rejected("Recurring run name is empty. Please specify a valid name")
        if body.get("experiment_id") not in self.experiments:
            raise _Rejected(f"experiment {body.get('experiment_id')!r} not found", 404, 5)
        concurrency = int(body.get("max_concurrency") or 0)
        if not 1 <= concurrency <= 10:
            raise _Rejected(
                "Max concurrency of a recurring run must be at least 1 and at most 10. Received "
                f"{concurrency}"
            )
        cron = (body.get("trigger") or {}).get("cron_schedule", {}).get("cron")
        if cron is not None:
            try:
                parse_robfig_cron(cron)
            except ValueError as e:
                raise _Rejected(
                    "Schedule cron is not a supported format(https://godoc.org/github.com/robfig/"
                    f"cron). Error: {e}"
                ) from None
        template = self._template_of(body)
        runtime = body.get("runtime_config") or {}
        _check_parameters(template.spec, runtime.get("parameters") or {})
        _check_argo_compile(template.spec)
        recurring = {
            **body,
            "recurring_run_id": str(uuid.uuid4()),
            "created_at": _CREATED_AT,
            "status": "ENABLED" if body.get("mode") == "ENABLE" else "DISABLED",
        }
        self.recurring_runs.append(recurring)
        return recurring

    def _template_of(self, body: dict) -> _Template:
        """The spec a run or recurring run names: inline, or an uploaded version's."""
        reference = body.get("pipeline_version_reference")
        if ("pipeline_spec" in body) == (reference is not None):
            raise _Rejected("give either pipeline_spec or pipeline_version_reference")
        if reference is not None:
            version = self.versions.get(reference.get("pipeline_version_id"))
            if version is None or version["pipeline_id"] != reference.get("pipeline_id"):
                raise _Rejected(f"pipeline version {reference} not found", 404, 5)
            return self.templates[reference["pipeline_version_id"]]
        template = _run_template(body["pipeline_spec"])
        self.received_specs.append((template.spec, template.platform))
        return template

    def _upload(
        self, query: dict[str, str], files: dict[str, tuple[str, bytes]], pipeline_id: str | None
    ) -> dict:
        if "uploadfile" not in files:
            raise _Rejected("Failed to read pipeline from file: no such file", upload=True)
        filename, content = files["uploadfile"]
        if len(content) > MAX_FILE_LENGTH:
            raise _Rejected(
                "Failed to read a pipeline spec file: Error read pipeline file: File size too "
                f"large. Maximum supported size: {MAX_FILE_LENGTH}",
                upload=True,
            )
        if not filename.endswith((".yaml", ".yml", ".json")):
            raise _Rejected(
                "Failed to read a pipeline spec file: Unexpected pipeline file format. Support "
                ".zip, .tar.gz, .json or YAML",
                upload=True,
            )
        try:
            template = _template(list(yaml.safe_load_all(content)))
            name = template.spec["pipelineInfo"]["name"]
            if not _PIPELINE_NAME.match(name):
                raise _Rejected(
                    "pipeline's name must contain only lowercase alphanumeric characters or '-' "
                    "and must start with alphanumeric characters"
                )
        except _Rejected as e:
            raise _Rejected(
                f"Failed to create a pipeline and a pipeline version: {e}", 500, 13, upload=True
            ) from e
        display_name = query.get("name") or filename
        version = {
            "pipeline_version_id": str(uuid.uuid4()),
            "display_name": display_name,
            "created_at": _CREATED_AT,
            "pipeline_spec": template.spec,
        }
        self.templates[version["pipeline_version_id"]] = template
        if pipeline_id is None:
            if any(p["display_name"] == display_name for p in self.pipelines.values()):
                raise _Rejected(
                    f"pipeline {display_name!r} already exists", status=409, code=6, upload=True
                )
            pipeline_id = str(uuid.uuid4())
            self.pipelines[pipeline_id] = {
                "pipeline_id": pipeline_id,
                "display_name": display_name,
                "namespace": query.get("namespace", ""),
                "created_at": _CREATED_AT,
            }
            self.versions[version["pipeline_version_id"]] = {**version, "pipeline_id": pipeline_id}
            return self.pipelines[pipeline_id]
        if pipeline_id not in self.pipelines:
            raise _Rejected(f"pipeline {pipeline_id!r} not found", 404, 5, upload=True)
        self.versions[version["pipeline_version_id"]] = {**version, "pipeline_id": pipeline_id}
        return self.versions[version["pipeline_version_id"]]


class _Rejected(Exception):
    def __init__(
        self, message: str, status: int = 400, code: int = 3, *, upload: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.upload = upload


def _status(code: int, message: str) -> dict:
    """The server's google.rpc.Status error body (with its legacy fields)."""
    return {"error_message": message, "code": code, "message": message, "details": []}


def _upload_error(message: str) -> dict:
    """The upload handler's error body (writeErrorToResponse: a v1beta1 Error)."""
    return {"error_message": message, "error_details": message}


def _filtered_name(encoded: str | None) -> str | None:
    """The display_name of kfp.Client's EQUALS filter."""
    if not encoded:
        return None
    (predicate,) = json.loads(encoded)["predicates"]
    if predicate.get("key") != "display_name" or predicate.get("operation") not in (1, "EQUALS"):
        raise _Rejected(f"unsupported filter {encoded}")
    return predicate.get("stringValue", predicate.get("string_value"))


@dataclasses.dataclass(frozen=True)
class _Template:
    """What NewV2SpecTemplate keeps of a pipeline file."""

    spec: dict
    platform: dict  # {} when no document was a Kubernetes PlatformSpec
    ignored: tuple[dict, ...]  # documents that were neither


def _parses(document: dict, message) -> bool:
    try:
        json_format.ParseDict(document, message)
    except json_format.ParseError:
        return False
    return True


def _is_pipeline_spec(document: dict) -> bool:
    spec = pipeline_spec_pb2.PipelineSpec()
    return _parses(document, spec) and bool(spec.pipeline_info.name) and spec.HasField("root")


def _is_kubernetes_platform_spec(document: dict) -> bool:
    platform = pipeline_spec_pb2.PlatformSpec()
    return _parses(document, platform) and "kubernetes" in platform.platforms


def _template(documents: list) -> _Template:
    """NewV2SpecTemplate: picks the PipelineSpec and PlatformSpec; other documents are ignored."""
    spec, platform, ignored = None, None, []
    for document in documents:
        if document is None:
            continue
        if isinstance(document, dict) and _is_pipeline_spec(document):
            if spec is not None:
                raise _Rejected("Invalid input error: multiple pipeline specs provided", 500, 13)
            version = document.get("schemaVersion")
            if version != "2.1.0":
                raise _Rejected(
                    "KFP only supports schema version 2.1.0, but the pipeline spec has version "
                    f"{version}"
                )
            if not _SPEC_NAME.search(document["pipelineInfo"]["name"]):
                raise _Rejected(
                    "invalid v2 pipeline spec: name should consist of lower case alphanumeric "
                    "characters, '-' or '.', and must start and end with an alphanumeric character"
                )
            spec = document
        elif isinstance(document, dict) and _is_kubernetes_platform_spec(document):
            if platform is not None:
                raise _Rejected("Invalid input error: multiple platform specs provided")
            platform = document
        else:
            ignored.append(document)
    if spec is None:
        raise _Rejected("Invalid input error: no pipeline spec is provided")
    return _Template(spec, platform or {}, tuple(ignored))


def _run_template(wrapped: dict) -> _Template:
    """A run's inline spec: pipelineSpecStructToYamlString, then the template; errors are 500."""
    documents = (
        [wrapped["pipeline_spec"], wrapped.get("platform_spec")]
        if "pipeline_spec" in wrapped
        else [wrapped]
    )
    try:
        return _template(documents)
    except _Rejected as e:
        raise _Rejected(
            f"Failed to create a run due to error fetching manifest: {e}", 500, 13
        ) from e


# robfig/cron v1.2.0 (parser.go), which KFP's API server parses schedules with.
_CRON_FIELDS = (("second", 0, 59), ("minute", 0, 59), ("hour", 0, 23), ("dom", 1, 31),
                ("month", 1, 12), ("dow", 0, 6))  # fmt: skip
_CRON_NAMES = {
    "month": {m: i + 1 for i, m in enumerate(
        "jan feb mar apr may jun jul aug sep oct nov dec".split())},
    "dow": {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())},
}  # fmt: skip
_CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                     "@hourly")  # fmt: skip
_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def parse_robfig_cron(spec: str) -> None:
    """``cron.Parse`` of robfig/cron v1: raises ValueError with its message, or returns.

    Six fields, seconds first, the day of the week optional (five fields are
    seconds to months), or a descriptor, or ``@every DURATION``.
    """
    if spec.startswith("@"):
        if spec in _CRON_DESCRIPTORS:
            return
        if spec.startswith("@every "):
            if not _GO_DURATION.match(spec[len("@every ") :].strip()):
                raise ValueError(f"Failed to parse duration {spec}")
            return
        raise ValueError(f"Unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) == 5:
        fields.append("*")
    if len(fields) != 6:
        raise ValueError(f"Expected 5 to 6 fields, found {len(fields)}: {spec}")
    for text, (name, low, high) in zip(fields, _CRON_FIELDS, strict=True):
        for part in text.split(","):
            _parse_cron_range(part, low, high, _CRON_NAMES.get(name, {}))


def _parse_cron_range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    bounds = range_and_step[0].split("-")
    if bounds[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_number(bounds[0], names)
        end = _cron_number(bounds[1], names) if len(bounds) == 2 else start
        if len(bounds) > 2:
            raise ValueError(f"Too many hyphens: {expr}")
    if len(range_and_step) > 2:
        raise ValueError(f"Too many slashes: {expr}")
    if len(range_and_step) == 2 and _cron_number(range_and_step[1], {}) <= 0:
        raise ValueError(f"Step of range should be a positive number: {expr}")
    if start < low:
        raise ValueError(f"Beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ValueError(f"End of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ValueError(f"Beginning of range ({start}) beyond end of range ({end}): {expr}")


def _cron_number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"-?\d+", text):
        raise ValueError(f"Failed to parse int from {text}")
    return int(text)


def _check_parameters(spec: dict, given: dict) -> None:
    """validatePipelineJobInputs: the root's parameters, typed as declared, none extra."""
    message = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    declared = message.root.input_definitions.parameters
    for name, parameter in declared.items():
        if name not in given:
            if not parameter.is_optional and not parameter.HasField("default_value"):
                raise _Rejected(
                    f"parameter {name} is not optional, yet has neither default value nor user "
                    "provided value"
                )
            continue
        kind = pipeline_spec_pb2.ParameterType.ParameterTypeEnum.Name(parameter.parameter_type)
        if kind not in _PARAMETER_KINDS:
            raise _Rejected(f"input parameter {name} requires type {kind}, invalid here")
        accepted, complaint = _PARAMETER_KINDS[kind]
        value = given[name]
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise _Rejected(f"input parameter {name} requires type {complaint} value type")
    extra = sorted(set(given) - set(declared))
    if extra:
        raise _Rejected(f"parameter(s) provided are not required by pipeline: {', '.join(extra)}")


def _check_argo_compile(spec: dict) -> None:
    """The Argo compiler's walk of the DAG and Argo's task-name rule; every failure is 500."""
    components = spec.get("components", {})
    executors = spec.get("deploymentSpec", {}).get("executors", {})

    def visit(name: str, component: dict) -> None:
        label = component.get("executorLabel")
        if label:
            executor = executors.get(label)
            if executor is None:
                raise _Rejected(
                    f"Failed to compile job: error processing component name={name!r}: "
                    f"executor(label={label!r}) not found in deployment config",
                    500,
                    13,
                )
            if "container" not in executor and "importer" not in executor:
                raise _Rejected(
                    f"Failed to compile job: error processing component name={name!r}: "
                    f"executor(label={label!r}): non-container and non-importer executor not "
                    "implemented",
                    500,
                    13,
                )
            return
        for task_name, task in sorted(component.get("dag", {}).get("tasks", {}).items()):
            driver = f"{task_name}-driver"
            if not _ARGO_FIELD_NAME.match(task_name) or len(driver) > _ARGO_FIELD_MAX:
                raise _Rejected(
                    f"Failed to validate workflow: templates.{name}.tasks.{task_name} name must "
                    "consist of alpha-numeric characters or '-', and must start with an "
                    f"alpha-numeric character, at most {_ARGO_FIELD_MAX} with '-driver'",
                    500,
                    13,
                )
            reference = task.get("componentRef", {}).get("name", "")
            if reference not in components:
                raise _Rejected(
                    f"Failed to compile job: error processing component name={name!r}: "
                    f"cannot find component ref name={reference!r}",
                    500,
                    13,
                )
            visit(reference, components[reference])

    visit("root", spec.get("root", {}))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeKfpServer

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def _answer(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content_type = self.headers.get("Content-Type", "")
        body, files = None, {}
        if content_type.startswith("multipart/form-data"):
            files = _multipart_files(content_type, raw)
        elif raw:
            body = json.loads(raw)
        call = Call(self.command, url.path, query, self.headers.get("Authorization"), body)
        api = self.server.api
        if api.login_page:
            api.calls.append(call)
            self._send(200, b"<html><body>Sign in</body></html>", "text/html")
            return
        status, answer = api.handle(call, files)
        self._send(status, json.dumps(answer).encode(), "application/json")

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class FakeKfpServer(http.server.ThreadingHTTPServer):
    """Serves a ``FakeKfpApi`` on a free local port.

    Args:
      api: the state and checks that answer each request.
    """

    daemon_threads = True

    def __init__(self, api: FakeKfpApi) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api

    @property
    def url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> str:
        """Serves requests on a daemon thread.

        Returns:
          The server's base URL.
        """
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self.url

    def stop(self) -> None:
        """Stops serving and closes the listening socket."""
        self.shutdown()
        self.server_close()


def _multipart_files(content_type: str, raw: bytes) -> dict[str, tuple[str, bytes]]:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    return {
        part.get_param("name", header="content-disposition"): (
            part.get_filename(),
            part.get_payload(decode=True),
        )
        for part in message.iter_parts()
    }
