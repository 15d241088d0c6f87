"""A task that fingerprints what the pipeline reads by path, so that KFP's cache follows the data.

KFP open source keys a task's cache on its input artifacts' ids, its parameters, its
image, command and arguments (backend/src/v2/cacheutils/cache.go:173-229) and ignores
TFX's ``lifecycle.preCacheCheck``, where Vertex AI runs the ExampleGen driver's
fingerprint of the input files. A task whose only inputs are paths (ExampleGen's
``input_base``, ImportSchemaGen's ``schema_file``, a module file) would then be a cache
hit after the files at those paths changed, and every task after it would reuse the old
results.

The compiled pipeline therefore starts with ``InputFingerprints``, never cached, which
gets each such task's path parameters and returns one fingerprint per task
(``fingerprint_task``): for ExampleGen, TFX's own (the span and version its driver
resolves, then the matching files' count, bytes and modification times); for a file,
its bytes' SHA-256. Each task gets its fingerprint as the parameter ``FINGERPRINT``, a
value in its cache key: unchanged files give the same key and a cache hit; a file
rewritten at the same path gives a new key, and the task and everything after it run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from tfrecord_pipelines.components.keys import (
    EXAMPLE_GEN_ID,
    INPUT_BASE_KEY,
    INPUT_CONFIG_KEY,
    MODULE_FILE_KEY,
    MODULE_PATH_KEY,
    RANGE_CONFIG_KEY,
    REQUESTED_SPAN_KEY,
)

TASK = "InputFingerprints"
# The parameter each fingerprinted task gets; its entry point drops it before TFX reads it.
FINGERPRINT = "input_fingerprint"
# The parameters whose files a task reads: ExampleGen's (the files its driver resolves) and
# any file read by path.
EXAMPLE_GEN_PARAMETERS = (INPUT_BASE_KEY, INPUT_CONFIG_KEY, RANGE_CONFIG_KEY, REQUESTED_SPAN_KEY)
FILE_PARAMETERS = ("schema_file", MODULE_FILE_KEY, MODULE_PATH_KEY)
# The pod's command: the executor input follows it (KFP's ``{{$}}``).
COMMAND = ["python", "-m", "tfrecord_pipelines.kubeflow.fingerprint_task"]
_SEPARATOR = "__"


def parameter_name(task: str, parameter: str) -> str:
    """The fingerprint task's input that carries ``task``'s ``parameter``."""
    return f"{task}{_SEPARATOR}{parameter}"


def split_parameter_name(name: str) -> tuple[str, str]:
    """The task and parameter an input of the fingerprint task carries."""
    task, _, parameter = name.partition(_SEPARATOR)
    return task, parameter


def _read_by_path(task: str, parameters: Mapping) -> tuple[str, ...]:
    """The parameters of ``task`` naming files it reads, as compiled; () if none."""
    names = (EXAMPLE_GEN_PARAMETERS if task == EXAMPLE_GEN_ID else ()) + FILE_PARAMETERS
    return tuple(n for n in names if n in parameters)


def with_input_fingerprints(spec: dict) -> None:
    """Adds the fingerprint task and hands each cached task that reads files by path its
    fingerprint, in place. A task KFP never caches is left as it is.

    Args:
      spec: the compiled PipelineSpec as a dict (the first YAML document).
    """
    tasks = spec["root"]["dag"]["tasks"]
    inputs, outputs, image = {}, {}, None
    for name, task in tasks.items():
        if not task.get("cachingOptions", {}).get("enableCache"):
            continue
        parameters = task.get("inputs", {}).get("parameters", {})
        read = _read_by_path(name, parameters)
        if not read:
            continue
        component = spec["components"][task["componentRef"]["name"]]
        definitions = component.setdefault("inputDefinitions", {}).setdefault("parameters", {})
        for parameter in read:
            inputs[parameter_name(name, parameter)] = (
                parameters[parameter],
                definitions[parameter]["parameterType"],
            )
        outputs[name] = {"parameterType": "STRING"}
        definitions[FINGERPRINT] = {"parameterType": "STRING"}
        parameters[FINGERPRINT] = {
            "taskOutputParameter": {"producerTask": TASK, "outputParameterKey": name}
        }
        task["dependentTasks"] = sorted({*task.get("dependentTasks", []), TASK})
        image = image or _image(spec, component)
    if not outputs:
        return
    _add_task(spec, inputs, outputs, image)


def _image(spec: dict, component: Mapping) -> str:
    return spec["deploymentSpec"]["executors"][component["executorLabel"]]["container"]["image"]


def _add_task(spec: dict, inputs: Mapping, outputs: Mapping, image: str) -> None:
    label = f"{TASK}_executor"
    spec["components"][TASK] = {
        "executorLabel": label,
        "inputDefinitions": {
            "parameters": {name: {"parameterType": kind} for name, (_, kind) in inputs.items()}
        },
        "outputDefinitions": {"parameters": dict(outputs)},
    }
    spec["deploymentSpec"]["executors"][label] = {
        "container": {"image": image, "command": list(COMMAND), "args": ["{{$}}"]}
    }
    spec["root"]["dag"]["tasks"][TASK] = {
        "taskInfo": {"name": TASK},
        "componentRef": {"name": TASK},
        "inputs": {
            "parameters": {name: copy.deepcopy(source) for name, (source, _) in inputs.items()}
        },
        # Never cached: what it reads changes between runs with the same parameters. Written
        # as KFP's compiler writes it (proto3 leaves a false enableCache out), so that the
        # spec kfp.Client sends is the file, field for field.
        "cachingOptions": {},
    }
