"""The label's class names, and which class id is the positive one of two.

The Transform output orders a label's vocabulary by token fingerprint, so
which id a class gets is known only once Transform ran. The EvalConfig is
written before, with ``POSITIVE_CLASS_ID`` wherever it binarizes the
positive class; the Evaluator reads the model's label vocabulary (an asset
of the serving model), puts the positive class's id there, and writes the
class names beside the evaluation (``LABEL_CLASSES_FILE``) so that the
report and the summary name classes by value.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

from tfrecord_pipelines.components.storage import filesystem

POSITIVE_CLASS_ID = 1
LABEL_CLASSES_FILE = "label_classes.json"


def read_vocabulary(model_path: str, vocabulary_file: str) -> list[str]:
    """The model's label vocabulary, in class-id order (from its serving model's assets)."""
    path = os.path.join(model_path, "assets", vocabulary_file)
    if not filesystem.exists(path):
        raise ValueError(f"The model has no label vocabulary {vocabulary_file!r} at {path}.")
    with filesystem.open_file(path) as f:
        return [line.rstrip("\n") for line in f]


def positive_class_id(classes: list[str], positive_class: str) -> int:
    """The class id of ``positive_class`` in the vocabulary.

    Raises:
      ValueError: if the vocabulary does not hold it.
    """
    if positive_class not in classes:
        raise ValueError(
            f"The positive class {positive_class!r} is not a value the model learned; "
            f"its label vocabulary has {', '.join(map(repr, classes))}."
        )
    return classes.index(positive_class)


def with_positive_class(eval_config, class_id: int):
    """A copy of the EvalConfig binarizing ``class_id`` where it binarized ``POSITIVE_CLASS_ID``."""
    config = type(eval_config)()
    config.CopyFrom(eval_config)
    for spec in config.metrics_specs:
        ids = spec.binarize.class_ids.values
        if list(ids) == [POSITIVE_CLASS_ID] and not spec.HasField("aggregate"):
            ids[:] = [class_id]
    return config


def write(evaluation_dir: str, classes: list[str], positive_class: str | None) -> None:
    """Writes the class names (by id) and the positive class beside an evaluation."""
    with filesystem.open_file(os.path.join(evaluation_dir, LABEL_CLASSES_FILE), "w") as f:
        json.dump({"classes": classes, "positive_class": positive_class}, f)


def read(evaluation_dir: str) -> tuple[list[str], str | None] | None:
    """(class names by id, positive class) written beside an evaluation; None if none were."""
    path = os.path.join(evaluation_dir, LABEL_CLASSES_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        found = json.load(f)
    return found["classes"], found["positive_class"]


_CLASS_ID = re.compile(r"\(class (\d+)\)$")


def display_name(name: str, classes: Sequence[str]) -> str:
    """A metric's name with its class id replaced by the class's name: ``auc (yes)``."""
    match = _CLASS_ID.search(name)
    if not match or int(match.group(1)) >= len(classes):
        return name
    return name[: match.start()] + f"({classes[int(match.group(1))]})"
