"""Runs a compiled pipeline's whole DAG with kfp.local, changed only where KFP open source differs.

kfp.local (kfp 2.13) loads the compiled YAML as a component, orders its tasks,
builds each task's ExecutorInput, substitutes the placeholders of the
container's command and args, and reads each executor output back into the
next task's inputs. One of its behaviours differs from the open-source
backend the pipeline is compiled for, and only that one is swapped here:
input artifact types. kfp.local types an upstream artifact by its schema
title (``system.Artifact`` for TFX's types). The backend's driver reads
upstream outputs back from ML Metadata without their type:
``GetOutputArtifactsByExecutionId`` sets ``Schema: ""`` and
``OutputArtifact.ToRuntimeArtifact`` copies it into ``type.instanceSchema``
(backend ``src/v2/metadata/client.go``, 2.4.1 and 2.5.0).

Everything else is kfp.local's own: its ``DockerRunner`` runs each task's
command and args in the image the spec names, as the launcher runs them in
the pod once it has substituted the placeholders (backend
``src/v2/component/launcher_v2.go``, ``Execute``), with the pipeline root
mounted at its own path. Its task handler is only watched, to record what
each task did.

Known limits of kfp.local that the compiled pipeline does not meet: it ignores
the PlatformSpec, has no object store, ML Metadata or caching, and names a
task's folder after its component name less the first 5 characters (it
expects ``comp-``). The watched handler records each task's ExecutorInput, exit status
and executor output file, for the tests to check what the launcher would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from unittest import mock

from kfp import components, dsl, local
from kfp.local import docker_task_handler, executor_input_utils, status
from kfp.pipeline_spec import pipeline_spec_pb2

_INVOCATION_FLAG = "--json_serialized_invocation_args"
_EXECUTOR_INPUT_FLAG = "--executor_input"


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """One task as the launcher saw it: its input, exit status and output file's text."""

    executor_input: pipeline_spec_pb2.ExecutorInput
    returncode: int
    executor_output_text: str | None
    # What the task printed (kfp.local relays its container's logs).
    logs: str


def _executor_input(full_command: list[str]) -> pipeline_spec_pb2.ExecutorInput:
    """The ExecutorInput kfp.local substituted for ``{{$}}`` in the command: after TFX's flag,
    after a lightweight component's ``--executor_input``, else the last argument (the
    project's KFP components)."""
    from google.protobuf import json_format

    flags = [f for f in (_INVOCATION_FLAG, _EXECUTOR_INPUT_FLAG) if f in full_command]
    value = full_command[full_command.index(flags[0]) + 1] if flags else full_command[-1]
    return json_format.Parse(value, pipeline_spec_pb2.ExecutorInput())


def _untyped_artifact_list(artifact: dsl.Artifact) -> pipeline_spec_pb2.ArtifactList:
    """An upstream artifact as the backend's driver hands it over: no type."""
    return pipeline_spec_pb2.ArtifactList(
        artifacts=[
            pipeline_spec_pb2.RuntimeArtifact(
                name=artifact.name,
                type=pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=""),
                uri=artifact.uri,
                metadata=executor_input_utils.dict_to_protobuf_struct(artifact.metadata),
            )
        ]
    )


class _Tee(io.StringIO):
    """Keeps what is written and passes it on."""

    def __init__(self, passed_to) -> None:
        super().__init__()
        self._passed_to = passed_to

    def write(self, text: str) -> int:
        self._passed_to.write(text)
        return super().write(text)


def _watched_docker_handler(records: dict[str, TaskRecord]) -> type:
    class WatchedDockerTaskHandler(docker_task_handler.DockerTaskHandler):
        """kfp.local's own DockerTaskHandler, its result recorded."""

        def run(self) -> status.Status:
            logs = _Tee(sys.stdout)
            with contextlib.redirect_stdout(logs):
                result = super().run()
            executor_input = _executor_input(list(self.full_command))
            output_file = Path(executor_input.outputs.output_file)
            records[output_file.parent.name] = TaskRecord(  # kfp.local's task folder
                executor_input,
                0 if result == status.Status.SUCCESS else 1,
                output_file.read_text() if output_file.exists() else None,
                logs.getvalue(),
            )
            return result

    return WatchedDockerTaskHandler


@contextlib.contextmanager
def _as_kfp_open_source(records: dict[str, TaskRecord]) -> Iterator[None]:
    with (
        mock.patch.object(
            docker_task_handler, "DockerTaskHandler", _watched_docker_handler(records)
        ),
        mock.patch.object(
            executor_input_utils, "dsl_artifact_to_artifact_list", _untyped_artifact_list
        ),
    ):
        yield


@contextlib.contextmanager
def _pods(environment: dict[str, str] | None) -> Iterator[None]:
    """Each task's container, as a pod: given ``environment`` and the host's network, as a pod
    gets its environment from its spec and reaches the cluster's object store (here: a server
    on 127.0.0.1), when ``environment`` is given; and gone when the run ends, as a finished
    pod's container goes. kfp.local's DockerRunner has no setting for either, and leaves
    every task's container behind (a suite's run left 24)."""
    from docker.errors import NotFound
    from docker.models.containers import ContainerCollection

    run, created = ContainerCollection.run, []

    def run_as_a_pod(self, *args, **kwargs):
        if environment:
            kwargs.update(environment=environment, network_mode="host")
        container = run(self, *args, **kwargs)
        created.append(container)
        return container

    try:
        with mock.patch.object(ContainerCollection, "run", run_as_a_pod):
            yield
    finally:
        for container in created:
            with contextlib.suppress(NotFound):  # already gone: nothing to remove
                container.remove(force=True)


def run_compiled_pipeline(
    package: Path,
    pipeline_root: Path,
    arguments: dict[str, str] | None = None,
    environment: dict[str, str] | None = None,
) -> dict[str, TaskRecord]:
    """Runs every task of a compiled KFP v2 YAML in its image through kfp.local's orchestration.

    Args:
      package: the compiled pipeline (PipelineSpec, optionally a PlatformSpec).
      pipeline_root: the local folder task outputs go under.
      arguments: the run's pipeline parameters (a run's, or a recurring run's
        schedule's); None: their defaults.
      environment: variables every task's container gets, which then also
        shares the host's network (``_pods``); None: neither.

    Returns:
      Each task's record, keyed by its component name in the spec.

    Raises:
      RuntimeError: kfp.local's own error when a task fails.
    """
    pipeline = components.load_component_from_file(str(package))
    folders = {
        executor_input_utils.get_local_task_resource_name(name): name
        for name in pipeline.pipeline_spec.components
    }
    local.init(
        runner=local.DockerRunner(),  # the Docker API at $DOCKER_HOST
        pipeline_root=str(pipeline_root),
        raise_on_error=True,
    )
    records: dict[str, TaskRecord] = {}
    with _as_kfp_open_source(records), _pods(environment):
        pipeline(**(arguments or {}))
    return {folders[folder]: record for folder, record in records.items()}


def with_tasks_only(package: Path, tasks: Iterable[str], output: Path) -> Path:
    """Writes a copy of a compiled pipeline whose DAG holds only ``tasks`` and the tasks they
    depend on, each as compiled (its component, container, arguments); returns ``output``.

    For a run that checks a few tasks of a pipeline whose whole DAG another run checks.
    """
    import yaml

    documents = list(yaml.safe_load_all(package.read_text()))
    dag = documents[0]["root"]["dag"]
    kept, todo = set(), list(tasks)
    while todo:
        name = todo.pop()
        if name not in kept:
            kept.add(name)
            todo += dag["tasks"][name].get("dependentTasks", [])
    dag["tasks"] = {name: task for name, task in dag["tasks"].items() if name in kept}
    output.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return output
