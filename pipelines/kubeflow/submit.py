"""Creates a Kubeflow Pipelines run from a compiled YAML (``python -m tfrecord_pipelines submit``).

Everything that talks to the server, authentication included, goes through
``kfp.Client``; this module picks the experiment, the run's name, pipeline root
and service account, and turns the server's failures into one-line
``SubmitError`` messages that name the host and the step that failed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import io
import json
import logging
import os
import warnings
from collections.abc import Iterator
from typing import Any

from tfrecord_pipelines.kubeflow import api_errors
from tfrecord_pipelines.kubeflow.package import (
    check_pipeline_root,
    check_platform_spec,
    pipeline_name,
)

# The Kubernetes service account the runs' pods use; k8s/ creates it with the
# rights the components need (reading the data, writing the pipeline root).
DEFAULT_SERVICE_ACCOUNT = "tfrecord-pipelines-runner"
# The API's URL when --host is not given; kfp.Client reads the same variable.
HOST_ENV = "KF_PIPELINES_ENDPOINT"
# The pipeline root when --pipeline-root is not given.
PIPELINE_ROOT_ENV = "KFP_PIPELINE_ROOT"
# A bearer token when --existing-token is not given (keeps it out of `ps`).
TOKEN_ENV = "KFP_TOKEN"


class SubmitError(RuntimeError):
    """The Kubeflow Pipelines server could not be reached or refused a request."""


@dataclasses.dataclass(frozen=True)
class KfpConnection:
    """Where the Kubeflow Pipelines API is and how to authenticate to it.

    Every field is handed to ``kfp.Client`` as is, so the SDK's own
    authentication applies: besides these, it reads the IAP variables
    ``KF_PIPELINES_IAP_OAUTH2_CLIENT_ID`` and friends, and a namespace saved
    in ``~/.config/kfp/context.json``.

    Attributes:
      host: the API's base URL, e.g. ``http://localhost:8080`` after
        ``kubectl port-forward -n kubeflow svc/ml-pipeline-ui 8080:80``, or
        ``https://kubeflow.example.com/pipeline`` behind Kubeflow's gateway.
      namespace: the Kubeflow profile namespace the experiment and run belong
        to (multi-user deployments); None on a standalone (single-user) KFP.
      existing_token: a bearer token sent with every request, e.g. from
        ``kubectl create token``.
      cookies: a ``Cookie`` header value, e.g. ``authservice_session=...`` of
        a Dex or oauth2-proxy login.
      ssl_ca_cert: a CA bundle file that signs the server's certificate.
      verify_ssl: False skips TLS certificate checks (test clusters only).
    """

    host: str
    namespace: str | None = None
    existing_token: str | None = None
    cookies: str | None = None
    ssl_ca_cert: str | None = None
    verify_ssl: bool = True

    def __post_init__(self) -> None:
        if not self.host.startswith(("http://", "https://")):
            raise ValueError(
                f"Kubeflow Pipelines host {self.host!r} must be a URL starting with http:// or "
                "https://, e.g. http://localhost:8080."
            )
        object.__setattr__(self, "host", self.host.rstrip("/"))
        if self.ssl_ca_cert and not os.path.isfile(self.ssl_ca_cert):
            raise ValueError(f"CA certificate file {self.ssl_ca_cert!r} does not exist.")


@dataclasses.dataclass(frozen=True)
class SubmittedRun:
    """A run the server accepted.

    Attributes:
      run_id: the run's id.
      run_name: its display name.
      url: the run's page in the KFP UI.
      experiment_id: the id of the experiment it belongs to.
      experiment: that experiment's name.
      experiment_url: the experiment's page in the KFP UI.
      pipeline_root: the root the run was given; None: the namespace's default.
      pipeline_version_url: the uploaded version's page; None without upload.
    """

    run_id: str
    run_name: str
    url: str
    experiment_id: str
    experiment: str
    experiment_url: str
    pipeline_root: str | None = None
    pipeline_version_url: str | None = None


def submit_run(
    package_path: str,
    *,
    connection: KfpConnection,
    pipeline_root: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    service_account: str | None = DEFAULT_SERVICE_ACCOUNT,
    upload: bool = False,
    enable_caching: bool | None = None,
) -> SubmittedRun:
    """Creates a run of a compiled pipeline in an experiment, creating that if needed.

    Args:
      package_path: the compiled KFP v2 YAML; its PlatformSpec document, if
        any, travels with the spec.
      connection: the server and credentials.
      pipeline_root: where the run writes its artifacts; None: the
        ``defaultPipelineRoot`` of the ``kfp-launcher`` ConfigMap in the run's
        namespace (k8s/ creates it), else KFP's own default (its MinIO).
      experiment: the experiment's name; None: the pipeline's name.
      run_name: the run's display name; None: ``<pipeline name> <UTC time>``.
      service_account: the Kubernetes service account of the run's pods;
        None or empty: the server's default (``pipeline-runner``).
      upload: also upload the package as a new version of the pipeline named
        after it (creating the pipeline the first time); the run then
        refers to that version.
      enable_caching: True or False overrides every task's caching in the
        package for this run (not with ``upload``: the version keeps its
        own); None keeps the package's.

    Returns:
      The run's ids and UI links.

    Raises:
      ValueError: if the package or pipeline root is unusable, or KFP would
        ignore part of the package's PlatformSpec.
      SubmitError: if the server cannot be reached or refuses a request.
    """
    name = pipeline_name(package_path)
    run_name = run_name or f"{name} {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"
    client, host, experiment, experiment_id, shared, version_url = _target(
        package_path, connection, pipeline_root, experiment, run_name, upload,
        service_account, enable_caching,
    )  # fmt: skip
    with _server_errors(host, f"creating run {run_name!r}"):
        run = client.run_pipeline(
            experiment_id=experiment_id,
            job_name=run_name,
            params={},
            **shared,
        )
    run_id = _required(run.run_id, "run_id", host)
    return SubmittedRun(
        run_id=run_id,
        run_name=run_name,
        url=f"{host}/#/runs/details/{run_id}",
        experiment_id=experiment_id,
        experiment=experiment,
        experiment_url=f"{host}/#/experiments/details/{experiment_id}",
        pipeline_root=pipeline_root,
        pipeline_version_url=version_url,
    )


def _target(
    package_path: str,
    connection: KfpConnection,
    pipeline_root: str | None,
    experiment: str | None,
    version_name: str,
    upload: bool,
    service_account: str | None,
    enable_caching: bool | None,
) -> tuple:
    """Checks the package, connects, finds or creates the experiment and, with ``upload``,
    the pipeline version; returns (client, host, experiment, its id, the arguments a run
    and a recurring run take alike from kfp.Client, the version's page or None)."""
    if pipeline_root is not None:
        check_pipeline_root(pipeline_root)
    name = pipeline_name(package_path)
    check_platform_spec(package_path)
    experiment = experiment or name
    host = connection.host
    client = _connect(connection)
    with _server_errors(host, "checking the server's health"):
        health = client.get_kfp_healthz()
    namespace = connection.namespace or client.get_user_namespace() or None
    if health.multi_user and not namespace:
        raise SubmitError(
            f"{host} is a multi-user Kubeflow deployment: give the namespace of your Kubeflow "
            "profile (--namespace)."
        )
    with _server_errors(host, f"getting or creating experiment {experiment!r}"):
        found = client.create_experiment(name=experiment, namespace=namespace)
    experiment_id = _required(found.experiment_id, "experiment_id", host)
    source: dict[str, Any] = {"pipeline_package_path": package_path}
    version_url = None
    if upload:
        pipeline_id, version_id = _upload(client, package_path, name, version_name, namespace, host)
        source = {"pipeline_id": pipeline_id, "version_id": version_id}
        version_url = f"{host}/#/pipelines/details/{pipeline_id}/version/{version_id}"
    shared = {
        **source,
        "pipeline_root": pipeline_root,
        "service_account": service_account or None,
        # An uploaded version keeps its own caching.
        "enable_caching": None if upload else enable_caching,
    }
    return client, host, experiment, experiment_id, shared, version_url


@dataclasses.dataclass(frozen=True)
class ScheduledRuns:
    """A recurring run the server accepted.

    Attributes:
      recurring_run_id: its id.
      name: its display name.
      url: its page in the KFP UI.
      schedule: its cron expression (KFP's: six fields, seconds first).
      parameters: what each scheduled run gets (the span, for data in spans).
      experiment: the experiment its runs belong to.
      experiment_url: the experiment's page in the KFP UI.
      pipeline_version_url: the uploaded version's page; None without upload.
    """

    recurring_run_id: str
    name: str
    url: str
    schedule: str
    parameters: dict[str, str]
    experiment: str
    experiment_url: str
    pipeline_version_url: str | None = None


def schedule_runs(
    package_path: str,
    *,
    connection: KfpConnection,
    schedule: str,
    pipeline_root: str | None = None,
    experiment: str | None = None,
    name: str | None = None,
    service_account: str | None = DEFAULT_SERVICE_ACCOUNT,
    upload: bool = False,
    enable_caching: bool | None = None,
) -> ScheduledRuns:
    """Creates a recurring run of a compiled pipeline (``kfp.Client.create_recurring_run``).

    Each run converts the span of its scheduled time (``schedule.scheduled_parameters``).
    Arguments as ``submit_run``'s, and:

    Args:
      schedule: KFP's cron expression (``schedule.check_cron``).
      name: the recurring run's display name; None: ``<pipeline name> on <schedule>``.

    Raises:
      ValueError: if the schedule, package or pipeline root is unusable.
      SubmitError: if the server cannot be reached or refuses a request.
    """
    from tfrecord_pipelines.kubeflow.schedule import check_cron, scheduled_parameters

    schedule = check_cron(schedule)
    parameters = scheduled_parameters(package_path)
    name = name or f"{pipeline_name(package_path)} on {schedule}"
    client, host, experiment, experiment_id, shared, version_url = _target(
        package_path, connection, pipeline_root, experiment, name, upload,
        service_account, enable_caching,
    )  # fmt: skip
    with _server_errors(host, f"creating recurring run {name!r}"):
        created = client.create_recurring_run(
            experiment_id=experiment_id,
            job_name=name,
            cron_expression=schedule,
            max_concurrency=1,
            params=parameters,
            **shared,
        )
    recurring_run_id = _required(created.recurring_run_id, "recurring_run_id", host)
    return ScheduledRuns(
        recurring_run_id=recurring_run_id,
        name=name,
        url=f"{host}/#/recurringrun/details/{recurring_run_id}",
        schedule=schedule,
        parameters=parameters,
        experiment=experiment,
        experiment_url=f"{host}/#/experiments/details/{experiment_id}",
        pipeline_version_url=version_url,
    )


def _connect(connection: KfpConnection) -> Any:
    import kfp

    class _Client(kfp.Client):
        """kfp.Client whose health check fails at once instead of retrying 5 times 5 s apart."""

        _healthz = None

        def get_kfp_healthz(self, sleep_duration: int = 5) -> Any:
            if self._healthz is None:
                self._healthz = self.healthzs.healthz_service_get_healthz()
            return self._healthz

    kwargs = {"namespace": connection.namespace} if connection.namespace else {}
    with (
        _server_errors(connection.host, "checking the server's health"),
        warnings.catch_warnings(),
    ):
        # "This client only works with Kubeflow Pipeline v2.0.0-beta.2 and later versions."
        warnings.simplefilter("ignore", FutureWarning)
        return _Client(
            host=connection.host,
            existing_token=connection.existing_token,
            cookies=connection.cookies,
            ssl_ca_cert=connection.ssl_ca_cert,
            verify_ssl=connection.verify_ssl,
            **kwargs,
        )


def _upload(
    client: Any,
    package_path: str,
    name: str,
    version_name: str,
    namespace: str | None,
    host: str,
) -> tuple[str, str]:
    """Uploads the package as a new version of pipeline ``name``; returns both ids."""
    with _server_errors(host, f"looking up pipeline {name!r}"):
        predicate = {"operation": "EQUALS", "key": "display_name", "stringValue": name}
        kwargs = {"namespace": namespace} if namespace else {}
        found = client.pipelines.pipeline_service_list_pipelines(
            filter=json.dumps({"predicates": [predicate]}), **kwargs
        )
    if found.pipelines:
        pipeline_id = _required(found.pipelines[0].pipeline_id, "pipeline_id", host)
        with _server_errors(host, f"uploading a version of pipeline {name!r}"):
            version = client.upload_pipeline_version(
                package_path, pipeline_version_name=version_name, pipeline_id=pipeline_id
            )
    else:
        with _server_errors(host, f"uploading pipeline {name!r}"):
            pipeline = client.upload_pipeline(package_path, pipeline_name=name, namespace=namespace)
        pipeline_id = _required(pipeline.pipeline_id, "pipeline_id", host)
        # The first upload becomes the pipeline's only version.
        with _server_errors(host, f"listing the versions of pipeline {name!r}"):
            versions = client.list_pipeline_versions(
                pipeline_id, page_size=1, sort_by="created_at desc"
            ).pipeline_versions
        if not versions:
            raise SubmitError(f"{host} lists no version of the pipeline {name!r} it just created.")
        version = versions[0]
    return pipeline_id, _required(version.pipeline_version_id, "pipeline_version_id", host)


def _required(value: str | None, field: str, host: str) -> str:
    if not value:
        raise SubmitError(
            f"{host} answered without {field}: is it the Kubeflow Pipelines API, and not a "
            "login page (pass --existing-token or --cookies)?"
        )
    return value


@contextlib.contextmanager
def _server_errors(host: str, action: str) -> Iterator[None]:
    """Turns the client's transport and HTTP errors into one-line SubmitErrors.

    It also keeps kfp.Client's "... details: URL" prints and urllib3's retry
    warnings off the terminal: the caller reports the outcome.
    """
    import kfp_server_api
    import urllib3

    # kfp_server_api's Configuration resets the "urllib3" logger: quiet its child.
    urllib3_logger = logging.getLogger("urllib3.connectionpool")
    level = urllib3_logger.level
    urllib3_logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    except kfp_server_api.ApiException as e:
        raise SubmitError(f"{action} failed at {host}: {_http_error(e)}") from e
    except urllib3.exceptions.HTTPError as e:
        reason = str(getattr(e, "reason", None) or e).split(">: ", 1)[-1]
        raise SubmitError(f"{action} failed: cannot reach {host}: {reason}") from e
    finally:
        urllib3_logger.setLevel(level)


def _http_error(e: Any) -> str:
    """``HTTP 500 Internal Server Error: <the server's message>`` on one line."""
    head = f"HTTP {e.status} {e.reason}" if e.status else str(e.reason)
    message = api_errors.message_of(e)
    hint = " (pass --existing-token or --cookies)" if e.status in (401, 403) else ""
    return f"{head}: {message}{hint}" if message else f"{head}{hint}"
