"""A user's own TFX pipeline that reuses ShardedExampleGen and make_dataset.

    python -m pipelines.penguins DATA_DIR PIPELINE_ROOT

The data is converted and described (its statistics) by tfrecord-pipelines'
ShardedExampleGen; TFX's own SchemaGen infers a schema from those
statistics; TFX's Trainer runs this project's
``components.reader.run_fn``, which reads the shards with ``make_dataset``.
"""

import os
import sys

from tfx import v1 as tfx

from tfrecord_pipelines.components.example_gen import ShardedExampleGen
from tfrecord_pipelines.components.example_gen.settings import ExampleGenSettings
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions


# --8<-- [start:pipeline]
def create_pipeline(data_dir: str, pipeline_root: str) -> tfx.dsl.Pipeline:
    """ShardedExampleGen -> SchemaGen -> Trainer (the user's run_fn)."""
    example_gen = ShardedExampleGen(
        data_dir, ExampleGenSettings(label_key="species", sharding=ShardingOptions(num_readers=4))
    )
    # ExampleGen's statistics, computed as it converts, feed SchemaGen directly.
    schema = tfx.components.SchemaGen(statistics=example_gen.outputs["statistics"])
    trainer = tfx.components.Trainer(
        run_fn="components.reader.run_fn",  # the user's own components package
        examples=example_gen.outputs["examples"],
        schema=schema.outputs["schema"],
        train_args=tfx.proto.TrainArgs(num_steps=1),
        eval_args=tfx.proto.EvalArgs(num_steps=1),
    )
    # --8<-- [end:pipeline]
    return tfx.dsl.Pipeline(
        pipeline_name="user-penguins",
        pipeline_root=pipeline_root,
        components=[example_gen, schema, trainer],
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            os.path.join(pipeline_root, "metadata.db")
        ),
    )


if __name__ == "__main__":
    tfx.orchestration.LocalDagRunner().run(create_pipeline(sys.argv[1], sys.argv[2]))
