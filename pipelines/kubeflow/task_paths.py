"""The local paths each task of a compiled pipeline is given, and the volumes that hold them.

A pod has only the volumes its PlatformSpec mounts, and the launcher stages only
its input artifacts. A path the task is given (a parameter, an argument of its
container, a value inside a parameter's JSON, such as the Pusher's serving folder
or the daily state) that no volume of its pod holds is a folder of the pod's own
disk: what the task writes there is lost when the pod ends, and what it reads is
not there. ``volumes_by_task`` mounts each pipeline-wide volume in every task that
uses a path under it; ``check_reachable`` refuses a path no volume holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

from tfrecord_pipelines.kubeflow.platform_spec import VolumeMount


def _strings(value) -> Iterator[str]:
    """Every string in a value, and in the JSON a string holds."""
    if isinstance(value, str):
        yield value
        if value[:1] in "{[":
            try:
                parsed = json.loads(value)
            except ValueError:
                return
            yield from _strings(parsed)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _as_path(text: str) -> str | None:
    """The absolute local path a string is, or ends in after ``--flag=``; else None."""
    candidate = text.partition("=")[2] if text.startswith("--") else text
    if candidate.startswith("/") and not candidate.startswith("//") and "\n" not in candidate:
        return candidate
    return None


def local_paths(pipeline_spec: Mapping) -> dict[str, list[str]]:
    """Each task's local paths, from its parameters' constants and its container's args.

    Args:
      pipeline_spec: the compiled PipelineSpec as a dict (the first YAML document).

    Returns:
      Task name -> the absolute local paths it is given, sorted, each once.
    """
    found = {}
    for name, task in pipeline_spec["root"]["dag"]["tasks"].items():
        component = pipeline_spec["components"][task["componentRef"]["name"]]
        executor = pipeline_spec["deploymentSpec"]["executors"][component["executorLabel"]]
        parameters = task.get("inputs", {}).get("parameters", {})
        constants = [
            p["runtimeValue"]["constant"] for p in parameters.values() if "runtimeValue" in p
        ]
        strings = [*_strings(constants), *_strings(executor["container"].get("args", []))]
        found[name] = sorted({path for s in strings if (path := _as_path(s))})
    return found


def is_under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


def volumes_by_task(
    pipeline_spec: Mapping, volumes: Sequence[VolumeMount]
) -> dict[str, tuple[VolumeMount, ...]]:
    """The pipeline-wide volumes each task needs: those holding a path it is given.

    Returns:
      Task name -> its volumes, in the order given; tasks that need none are left out.
    """
    needed = {}
    for task, paths in local_paths(pipeline_spec).items():
        mounted = tuple(v for v in volumes if any(is_under(p, v.mount_path) for p in paths))
        if mounted:
            needed[task] = mounted
    return needed


class UnreachablePathError(ValueError):
    """A task is given a local path that its pod cannot reach."""


def check_reachable(
    pipeline_spec: Mapping,
    volumes: Mapping[str, Sequence[VolumeMount]],
    in_image: Sequence[str],
) -> None:
    """Refuses a local path a task is given that no volume of its pod holds.

    Args:
      pipeline_spec: the compiled PipelineSpec as a dict (the first YAML document).
      volumes: each task's volumes, by task name.
      in_image: folders the image holds (the project, the bundled schemas).

    Raises:
      UnreachablePathError: in one line, naming the first such task and path.
    """
    for task, paths in local_paths(pipeline_spec).items():
        for path in paths:
            holders = [v.mount_path for v in volumes.get(task, ())] + list(in_image)
            if not any(is_under(path, folder) for folder in holders):
                image = (
                    f", or put it in the image under {' or '.join(in_image)}" if in_image else ""
                )
                raise UnreachablePathError(
                    f"{task} is given {path}, which no volume of its pod holds (a pod has only "
                    "the volumes its spec mounts): pass a bucket URI (gs://, s3://), mount a "
                    f"PersistentVolumeClaim holding it (--volume CLAIM:/MOUNT/PATH){image}"
                )
