"""A fake of KFP's v2beta1 API server for contract tests.

``FakeKfpApi`` answers kfp.Client's REST calls (healthz, experiments, runs,
pipeline uploads) with the JSON the real server returns, and checks each
request the way the real API server does (backend/src/apiserver: the pipeline
spec parses strictly into a PipelineSpec of schema 2.1.0 with a name and a
root, the PlatformSpec document parses, required parameters are given, the
experiment and pipeline version exist, multi-user calls carry a namespace),
plus this project's contract: a run's pipeline root, when given, is an object
store URI that KFP's launcher opens (none: the namespace's kfp-launcher
default). A failed check answers 400 like the server and is recorded in
``FakeKfpApi.rejections``, so tests see both what the client sent and what the
server would have said. ``FakeKfpServer`` serves one on a free local port.
"""

from __future__ import annotations

import dataclasses
import email.parser
import email.policy
import http.server
import json
import threading
import urllib.parse
import uuid
from typing import Any

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

API = "/apis/v2beta1"
_CREATED_AT = "2025-01-02T03:04:05Z"


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
        self.received_specs: list[tuple[dict, dict]] = []

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
            return e.status, _status(e.code, str(e))

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
            raise _Rejected("run must have a non-empty display_name")
        if body.get("experiment_id") not in self.experiments:
            raise _Rejected(f"experiment {body.get('experiment_id')!r} not found", 404, 5)
        reference = body.get("pipeline_version_reference")
        if ("pipeline_spec" in body) == (reference is not None):
            raise _Rejected("give either pipeline_spec or pipeline_version_reference")
        if reference is not None:
            version = self.versions.get(reference.get("pipeline_version_id"))
            if version is None or version["pipeline_id"] != reference.get("pipeline_id"):
                raise _Rejected(f"pipeline version {reference} not found", 404, 5)
            spec = version["pipeline_spec"]
        else:
            wrapped = body["pipeline_spec"]
            # kfp.Client wraps the spec when the YAML has a PlatformSpec document.
            if "pipeline_spec" in wrapped:
                spec = _check_pipeline_spec(wrapped["pipeline_spec"])
                platform = _check_platform_spec(wrapped.get("platform_spec", {}))
            else:
                spec, platform = _check_pipeline_spec(wrapped), {}
            self.received_specs.append((spec, platform))
        runtime = body.get("runtime_config") or {}
        _check_parameters(spec, runtime.get("parameters") or {})
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

    def _upload(
        self, query: dict[str, str], files: dict[str, tuple[str, bytes]], pipeline_id: str | None
    ) -> dict:
        if "uploadfile" not in files:
            raise _Rejected("multipart field uploadfile is missing")
        filename, content = files["uploadfile"]
        if not filename.endswith((".yaml", ".yml")):
            raise _Rejected(f"unexpected file {filename!r}: want .yaml or .yml")
        docs = list(yaml.safe_load_all(content))
        spec = _check_pipeline_spec(docs[0])
        for doc in docs[1:]:
            _check_platform_spec(doc)
        name = query.get("name") or filename
        version = {
            "pipeline_version_id": str(uuid.uuid4()),
            "display_name": name,
            "created_at": _CREATED_AT,
            "pipeline_spec": spec,
        }
        if pipeline_id is None:
            if any(p["display_name"] == name for p in self.pipelines.values()):
                raise _Rejected(f"pipeline {name!r} already exists", status=409, code=6)
            pipeline_id = str(uuid.uuid4())
            self.pipelines[pipeline_id] = {
                "pipeline_id": pipeline_id,
                "display_name": name,
                "namespace": query.get("namespace", ""),
                "created_at": _CREATED_AT,
            }
            self.versions[version["pipeline_version_id"]] = {**version, "pipeline_id": pipeline_id}
            return self.pipelines[pipeline_id]
        if pipeline_id not in self.pipelines:
            raise _Rejected(f"pipeline {pipeline_id!r} not found", 404, 5)
        self.versions[version["pipeline_version_id"]] = {**version, "pipeline_id": pipeline_id}
        return self.versions[version["pipeline_version_id"]]


class _Rejected(Exception):
    def __init__(self, message: str, status: int = 400, code: int = 3) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _status(code: int, message: str) -> dict:
    """The server's google.rpc.Status error body (with its legacy fields)."""
    return {"error_message": message, "code": code, "message": message, "details": []}


def _filtered_name(encoded: str | None) -> str | None:
    """The display_name of kfp.Client's EQUALS filter."""
    if not encoded:
        return None
    (predicate,) = json.loads(encoded)["predicates"]
    if predicate.get("key") != "display_name" or predicate.get("operation") not in (1, "EQUALS"):
        raise _Rejected(f"unsupported filter {encoded}")
    return predicate.get("stringValue", predicate.get("string_value"))


def _check_pipeline_spec(spec: dict) -> dict:
    message = pipeline_spec_pb2.PipelineSpec()
    try:
        json_format.ParseDict(spec, message)
    except json_format.ParseError as e:
        raise _Rejected(f"invalid v2 pipeline spec: {e}") from e
    if message.schema_version != "2.1.0":
        raise _Rejected(
            f"KFP only supports schema version 2.1.0, but the pipeline spec has version "
            f"{message.schema_version}"
        )
    if not message.pipeline_info.name:
        raise _Rejected("invalid v2 pipeline spec: name is empty")
    if not message.HasField("root"):
        raise _Rejected("invalid v2 pipeline spec: root component is empty")
    return spec


def _check_platform_spec(platform: dict) -> dict:
    try:
        json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())
    except json_format.ParseError as e:
        raise _Rejected(f"cannot unmarshal platform specific configs: {e}") from e
    return platform


def _check_parameters(spec: dict, given: dict) -> None:
    message = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    for name, parameter in message.root.input_definitions.parameters.items():
        if (
            name not in given
            and not parameter.is_optional
            and not parameter.HasField("default_value")
        ):
            raise _Rejected(
                f"parameter {name} is not optional, yet has neither default value nor user "
                "provided value"
            )


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
