"""Warm start: a Trainer continues from the last blessed model's weights when they fit.

TFX hands the Trainer a ``base_model`` (``fn_args.base_model``, the model's
serving folder); what to do with it is left to run_fn. A daily run over a
window of spans trains on data the last model mostly saw already, so the
built-in run_fn starts from that model's weights and trains for the new
data's share of a fresh start's steps.

The weights fit only if the model's inputs mean the same: the same
transformed features with the same specs, and the same vocabularies (a
category's index is its row in the first layer; a label's index is its
output unit). Each model therefore leaves, beside its serving folder, its
weights and what they were trained on (``warm_start/``); the next Trainer
compares that with its own Transform output and says why it did not warm-start.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os

import tensorflow as tf
import tensorflow_transform as tft

from tfrecord_pipelines.components.storage import filesystem

# Beside the serving folder (Format-Serving) in the Model artifact.
WARM_START_FOLDER = "warm_start"
_WEIGHTS = "weights"
_INPUTS_FILE = "inputs.json"
# In the model run folder: whether this training warm-started, from what, and why (not).
WARM_START_REPORT = "warm_start.json"
# A warm start trains at least this many steps, even when nearly all data is old.
WARM_START_MIN_STEPS = 100


def model_inputs(
    tf_transform_output: tft.TFTransformOutput, model_settings: dict, train_files: list[str]
) -> dict:
    """What a model's weights depend on: the transformed features' specs, a digest of each
    vocabulary, the model's own settings; and the train files it read (for the next
    model's share of new data)."""
    assets = os.path.join(tf_transform_output.transform_savedmodel_dir, "assets")
    vocabularies = {}
    if filesystem.isdir(assets):
        for name in sorted(filesystem.listdir(assets)):
            with filesystem.open_file(os.path.join(assets, name), "rb") as f:
                vocabularies[name] = hashlib.sha256(f.read()).hexdigest()
    features = {
        name: repr(spec)
        for name, spec in sorted(tf_transform_output.transformed_feature_spec().items())
    }
    inputs = {
        "features": features,
        "vocabularies": vocabularies,
        "model": model_settings,
        "train_files": sorted(train_files),
    }
    # As a base model's inputs.json reads back: tuples become lists.
    return json.loads(json.dumps(inputs))


def save(model: tf.keras.Model, serving_model_dir: str, inputs: dict) -> None:
    """Keeps ``model``'s weights and ``inputs`` beside its serving folder for a warm start."""
    folder = _folder(serving_model_dir)
    model.save_weights(os.path.join(folder, _WEIGHTS))
    with filesystem.open_file(os.path.join(folder, _INPUTS_FILE), "w") as f:
        json.dump(inputs, f)


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """Whether a training starts from a base model, and why (not).

    Attributes:
      base_model: the base model's serving folder, or None when none was given.
      reason: why it warm-starts or trains from scratch, in a phrase.
      weights: the base model's weights (a checkpoint prefix) when they fit, else None.
      new_share: the share of the train records the base model did not train on.
    """

    base_model: str | None
    reason: str
    weights: str | None = None
    new_share: float = 1.0

    def steps(self, from_scratch: int) -> int:
        """Training steps for a plan of ``from_scratch`` steps: the new data's share of them
        when warm-starting (at least WARM_START_MIN_STEPS), else all of them."""
        if self.weights is None:
            return from_scratch
        return min(
            from_scratch, max(WARM_START_MIN_STEPS, math.ceil(from_scratch * self.new_share))
        )

    def without_weights(self, reason: str) -> WarmStart:
        """The same base model, trained from scratch after all, for ``reason``."""
        return dataclasses.replace(self, reason=reason, weights=None, new_share=1.0)


def _first_difference(base: dict, current: dict) -> str | None:
    """What differs between the base model's inputs and this training's, in a phrase."""
    for key, what in (("features", "feature"), ("vocabularies", "vocabulary")):
        old, new = base.get(key, {}), current[key]
        for name in sorted(set(old) | set(new)):
            if name not in old:
                return f"{what} {name!r} is new"
            if name not in new:
                return f"{what} {name!r} is gone"
            if old[name] != new[name]:
                return f"{what} {name!r} changed"
    for name, value in sorted(current["model"].items()):
        if base.get("model", {}).get(name) != value:
            return f"the model's {name} settings changed"
    return None


def read_base_inputs(base_model: str | None) -> dict | None:
    """What a base model recorded of its inputs (``model_inputs``), or None: no base model,
    or one that kept no weights to start from."""
    if not base_model:
        return None
    path = os.path.join(_folder(base_model), _INPUTS_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        return json.load(f)


def _folder(base_model: str) -> str:
    return os.path.join(os.path.dirname(base_model.rstrip("/")), WARM_START_FOLDER)


def plan(
    base_model: str | None,
    base: dict | None,
    current: dict,
    new_records: int,
    train_records: int,
) -> WarmStart:
    """Decides whether this training can start from ``base_model``'s weights.

    Args:
      base_model: ``fn_args.base_model`` (a serving folder), or None.
      base: what it recorded (``read_base_inputs``).
      current: this training's ``model_inputs``.
      new_records: train records in files the base model did not read
        (``new_train_files`` tells which).
      train_records: all train records.
    """
    if not base_model:
        return WarmStart(None, "no earlier blessed model")
    if base is None:
        return WarmStart(base_model, "the base model kept no weights to start from")
    difference = _first_difference(base, current)
    if difference:
        return WarmStart(base_model, f"from scratch: {difference} since the base model")
    share = new_records / train_records if train_records else 1.0
    return WarmStart(
        base_model,
        f"{100 * share:.1f}% of the train records are new to it",
        weights=os.path.join(_folder(base_model), _WEIGHTS),
        new_share=share,
    )


def new_train_files(base: dict | None, train_files: list[str]) -> list[str]:
    """The train file patterns the base model (its ``read_base_inputs``) did not read: all of
    them without one."""
    seen = set(base.get("train_files", [])) if base else set()
    return [p for p in train_files if p not in seen]


def load(model: tf.keras.Model, warm: WarmStart) -> WarmStart:
    """Loads the base model's weights into ``model`` (shared layers: the training model too).

    Returns ``warm``, or the same without weights and the reason when they do not fit.
    """
    if warm.weights is None:
        return warm
    try:
        model.load_weights(warm.weights).assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return warm.without_weights(
            f"from scratch: the base model's weights do not fit ({first_line})"
        )
    return warm


def write_report(model_run_dir: str, warm: WarmStart, steps: int, from_scratch: int) -> None:
    """Records in the model run folder whether the training warm-started, and its steps."""
    filesystem.make_folder(model_run_dir)
    report = {
        "base_model": warm.base_model,
        "warm_started": warm.weights is not None,
        "reason": warm.reason,
        "new_share": round(warm.new_share, 4),
        "steps": steps,
        "steps_from_scratch": from_scratch,
    }
    with filesystem.open_file(os.path.join(model_run_dir, WARM_START_REPORT), "w") as f:
        json.dump(report, f)


def read_report(model_run_dir: str) -> dict | None:
    """What ``write_report`` recorded, or None (a module file's run_fn, an older model)."""
    path = os.path.join(model_run_dir, WARM_START_REPORT)
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path) as f:
        return json.load(f)
