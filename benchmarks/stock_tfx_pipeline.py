"""The anchor of benchmarks/pipeline_scale.py: a stock TFX pipeline on the same CSV.

CsvExampleGen, StatisticsGen, SchemaGen, Transform with TFX's defaults
(materialized transformed examples, pre- and post-transform statistics),
Trainer on the transformed examples (stock_tfx_module.py: the project's
model and preprocessing, TFX's dataset factory), Evaluator on CsvExampleGen's
examples, through LocalDagRunner with the same DirectRunner mode as the
project's local runs. Each executor's wall and CPU time is metered as in a
project run. Prints one JSON line: the costs and the Trainer's input stall.

    .venv/bin/python benchmarks/stock_tfx_pipeline.py --data DIR --label label \\
        --output DIR --train-steps N --batch-size B
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))


def _pipeline(
    data: str, label: str, root: str, train_steps: int, batch_size: int, num_classes: int
):
    from tfx import v1 as tfx

    from tfrecord_pipelines.components.task import Task
    from tfrecord_pipelines.definition.config import EvaluationOptions, EvaluationThresholds
    from tfrecord_pipelines.definition.evaluation import make_eval_config
    from tfrecord_pipelines.local.beam_args import local_beam_args

    task = Task(label=label)
    module = os.path.join(_HERE, "stock_tfx_module.py")
    example_gen = tfx.components.CsvExampleGen(input_base=data)
    statistics_gen = tfx.components.StatisticsGen(examples=example_gen.outputs["examples"])
    schema_gen = tfx.components.SchemaGen(
        statistics=statistics_gen.outputs["statistics"], infer_feature_shape=True
    )
    transform = tfx.components.Transform(
        examples=example_gen.outputs["examples"],
        schema=schema_gen.outputs["schema"],
        module_file=module,
        custom_config=task.to_custom_config(),
    )
    trainer = tfx.components.Trainer(
        module_file=module,
        examples=transform.outputs["transformed_examples"],
        transform_graph=transform.outputs["transform_graph"],
        schema=schema_gen.outputs["schema"],
        train_args=tfx.proto.TrainArgs(num_steps=train_steps),
        eval_args=tfx.proto.EvalArgs(num_steps=20),
        custom_config={**task.to_custom_config(), "batch_size": batch_size},
    )
    evaluator = tfx.components.Evaluator(
        examples=example_gen.outputs["examples"],
        model=trainer.outputs["model"],
        # The project's metrics (per-class AUC, the confusion matrix) on TFX's eval split.
        eval_config=make_eval_config(
            task, EvaluationThresholds(), EvaluationOptions(num_classes=num_classes)
        ),
    )
    return tfx.dsl.Pipeline(
        pipeline_name="stock-tfx",
        pipeline_root=os.path.join(root, "pipeline_root"),
        components=[example_gen, statistics_gen, schema_gen, transform, trainer, evaluator],
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            os.path.join(root, "metadata.sqlite")
        ),
        beam_pipeline_args=local_beam_args(),
        enable_cache=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--train-steps", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--num-classes", type=int, default=2)
    args = parser.parse_args()

    import tensorflow_model_analysis as tfma
    from tfx import v1 as tfx

    from tfrecord_pipelines.components.evaluator.metric_values import overall_metric_values
    from tfrecord_pipelines.components.trainer.input_stall import last_epoch_share
    from tfrecord_pipelines.local.component_costs import metered_executors
    from tfrecord_pipelines.local.run_record import node_ids_by_execution, open_store

    pipeline = _pipeline(
        args.data, args.label, args.output, args.train_steps, args.batch_size, args.num_classes
    )
    with metered_executors() as costs:
        tfx.orchestration.LocalDagRunner().run(pipeline)
    node_ids = node_ids_by_execution(
        open_store(os.path.join(args.output, "metadata.sqlite")), "stock-tfx"
    )
    model_runs = os.path.join(args.output, "pipeline_root", "Trainer", "model_run")
    stall = last_epoch_share(os.path.join(model_runs, os.listdir(model_runs)[0]))
    evaluations = os.path.join(args.output, "pipeline_root", "Evaluator", "evaluation")
    metrics = overall_metric_values(os.path.join(evaluations, os.listdir(evaluations)[0]))
    print(
        json.dumps(
            {
                "costs": {
                    node_ids[execution_id]: [cost.wall_seconds, cost.cpu_seconds]
                    for execution_id, cost in costs.items()
                },
                "input_stall": stall,
                "accuracy": metrics["sparse_categorical_accuracy"][tfma.CANDIDATE_KEY],
                "eval_rows": metrics["example_count"][tfma.CANDIDATE_KEY],
            }
        )
    )


if __name__ == "__main__":
    main()
