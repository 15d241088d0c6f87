"""What an input artifact holds on disk, held to what its input expects.

KFP's schema titles outside ``system.`` and ``google.`` are refused (kfp 2.13's
``type_utils.validate_schema_title``), so half the components' artifacts are
``system.Artifact``, which KFP wires from and into anything: statistics into
the Trainer's examples compile and run. Before the executor runs, the entry
point looks at each input's folder, laid out as TFX's components write it,
and refuses in one line an input that holds another kind than it expects.
A folder of no kind it knows is left to the executor: a user's own layout may
still be one the executor reads.
"""

from __future__ import annotations

import os

from tfrecord_pipelines.components.keys import SPLIT_FOLDER_PREFIX
from tfrecord_pipelines.components.storage import filesystem

EXAMPLES = "examples"
STATISTICS = "statistics"
ANOMALIES = "anomalies"
SCHEMA = "a schema"
TRANSFORM_GRAPH = "a transform graph"
MODEL = "a model"
BLESSING = "a model blessing"

# The kind each TFX artifact type holds, by the type's name; types not here are not checked.
EXPECTED = {
    "Examples": EXAMPLES,
    "ExampleStatistics": STATISTICS,
    "ExampleAnomalies": ANOMALIES,
    "Schema": SCHEMA,
    "TransformGraph": TRANSFORM_GRAPH,
    "Model": MODEL,
    "ModelBlessing": BLESSING,
}


def _names(path: str) -> set[str]:
    return set(filesystem.listdir(path)) if filesystem.isdir(path) else set()


def kind_of(path: str) -> str | None:
    """The kind of artifact folder ``path`` holds, by the files TFX's components write in
    it; None for a layout none of them writes (or nothing)."""
    from tensorflow_transform import TFTransformOutput
    from tfx.components.evaluator import constants as evaluator_constants
    from tfx.components.example_validator import executor as example_validator
    from tfx.components.schema_gen import executor as schema_gen
    from tfx.components.statistics_gen import executor as statistics_gen
    from tfx.utils import path_constants

    names = _names(path)
    if names & {evaluator_constants.BLESSED_FILE_NAME, evaluator_constants.NOT_BLESSED_FILE_NAME}:
        return BLESSING
    if schema_gen.DEFAULT_FILE_NAME in names:
        return SCHEMA
    if TFTransformOutput.TRANSFORM_FN_DIR in names:
        return TRANSFORM_GRAPH
    if names & {path_constants.SERVING_MODEL_DIR, "saved_model.pb"}:
        return MODEL
    splits = sorted(n for n in names if n.startswith(SPLIT_FOLDER_PREFIX))
    if not splits:
        return None
    inside = _names(os.path.join(path, splits[0]))
    if statistics_gen.DEFAULT_FILE_NAME in inside:
        return STATISTICS
    if example_validator.DEFAULT_FILE_NAME in inside:
        return ANOMALIES
    return EXAMPLES if inside else None


def check_input(name: str, type_name: str, uri: str, path: str) -> None:
    """Refuses input ``name`` (of TFX type ``type_name``, at ``uri``, read at ``path``)
    when its folder holds another kind of artifact than the type's.

    Raises:
      ValueError: one line naming the input, what it expects and what it was given.
    """
    expected = EXPECTED.get(type_name)
    if expected is None:
        return
    found = kind_of(path)
    if found is not None and found != expected:
        raise ValueError(
            f"Input {name!r} expects {expected}, but {uri} holds {found}: "
            "check what the pipeline wires into it."
        )
