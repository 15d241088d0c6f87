"""The user's Trainer module: reads ShardedExampleGen's shards with make_dataset."""

import json
import os

from tfrecord_pipelines.components.trainer import (
    InputOptions,
    feature_spec_from_schema,
    make_dataset,
)


# --8<-- [start:run_fn]
def run_fn(fn_args):  # TFX Trainer entry point
    """Reads every split once and writes what it read to ``read.json`` in the model run folder."""
    spec = feature_spec_from_schema(fn_args.schema_path)
    read = {"features": sorted(spec)}
    for split, files in (("train", fn_args.train_files), ("eval", fn_args.eval_files)):
        dataset = make_dataset(
            files,
            spec,
            batch_size=16,
            training=False,
            label_key="species",
            num_epochs=1,
            options=InputOptions(compression="GZIP"),
        )
        read[split] = sum(int(labels.shape[0]) for _, labels in dataset)
    os.makedirs(fn_args.model_run_dir, exist_ok=True)
    os.makedirs(fn_args.serving_model_dir, exist_ok=True)
    with open(os.path.join(fn_args.model_run_dir, "read.json"), "w") as f:
        json.dump(read, f)


# --8<-- [end:run_fn]
