"""Where a Trainer execution backs up its training, so that a re-run after a crash resumes.

Keras's ``BackupAndRestore`` callback saves the model, the optimizer and the
epoch at each epoch's end and restores them when ``fit`` starts again; it
deletes the backup when training completes. TFX gives every execution new
output folders, so the backup lives beside them, in a folder named after
what the training depends on: the example and Transform artifacts, the step
counts, the base model and the custom_config (task, training options, code version). A
re-run with the same inputs after a kill finds the killed execution's
backup; any other training starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os

import tensorflow as tf

from tfrecord_pipelines.components.storage import filesystem

BACKUP_FOLDER = "backup"
# In the model run folder: how many steps came from an interrupted execution.
RESUME_REPORT = "resume.json"
# What BackupAndRestore's checkpoint calls the last epoch it saved (0-based).
_SAVED_EPOCH = "ckpt_saved_epoch/.ATTRIBUTES/VARIABLE_VALUE"
_CHIEF = "chief"


def backup_dir(fn_args) -> str:
    """The backup folder of a Trainer execution: ``<Trainer>/backup/<digest of its inputs>``."""
    depends_on = {
        "train_files": list(fn_args.train_files),
        "eval_files": list(fn_args.eval_files),
        "transform_output": fn_args.transform_output,
        "train_steps": fn_args.train_steps,
        "eval_steps": fn_args.eval_steps,
        "custom_config": fn_args.custom_config,
        "base_model": fn_args.base_model,
    }
    digest = hashlib.sha256(json.dumps(depends_on, sort_keys=True).encode()).hexdigest()
    # model_run_dir is <pipeline root>/<Trainer>/model_run/<execution id>.
    trainer_dir = os.path.dirname(os.path.dirname(fn_args.model_run_dir.rstrip("/")))
    return os.path.join(trainer_dir, BACKUP_FOLDER, digest[:16])


def epochs_done(backup: str) -> int:
    """Epochs a backup in ``backup`` holds (0 when there is none)."""
    checkpoint = tf.train.latest_checkpoint(os.path.join(backup, _CHIEF))
    if checkpoint is None:
        return 0
    return int(tf.train.load_variable(checkpoint, _SAVED_EPOCH)) + 1


def write_resume_report(model_run_dir: str, backup: str, resumed_steps: int) -> None:
    """Records in the model run folder the backup used and the steps it kept."""
    filesystem.make_folder(model_run_dir)
    with filesystem.open_file(os.path.join(model_run_dir, RESUME_REPORT), "w") as f:
        json.dump({"backup": backup, "resumed_steps": resumed_steps}, f)


def resumed_steps(model_run_dir: str) -> int:
    """Training steps a Trainer execution took over from an interrupted one (0: none)."""
    path = os.path.join(model_run_dir, RESUME_REPORT)
    if not filesystem.exists(path):
        return 0
    with filesystem.open_file(path) as f:
        return int(json.load(f)["resumed_steps"])
