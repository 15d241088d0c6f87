"""A plain KFP pipeline that mixes this project's components with a component of its own.

ShardedExampleGen converts a CSV folder into TFRecord shards; the user's
lightweight component reads the shards with ``make_dataset`` and logs how many
records each split holds; the project's Transform, Trainer, Evaluator and
Pusher train, judge and publish the model. Only kfp is needed to build and
compile it:

    python examples/kfp_reuse/pipeline.py --output kfp_reuse.yaml

The components come from the YAML specs in ``kfp_components/`` (or
``--specs``), as ``kfp.components.load_component_from_file`` loads them.
"""

import argparse
import pathlib

from kfp import compiler, components, dsl
from kfp.dsl import Artifact, Dataset, Input, Metrics, Output

SPECS = pathlib.Path(__file__).resolve().parents[2] / "kfp_components"
# The user's component runs in the project's image: it has TensorFlow, kfp and make_dataset.
IMAGE = "ghcr.io/tfrecord-pipelines/tfrecord-pipelines:0.1.0"


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def count_records(
    examples: Input[Dataset], schema: Input[Artifact], counts: Output[Metrics]
) -> int:
    """Reads every split's shards with make_dataset and logs its records; returns train's."""
    import json

    from tfrecord_pipelines.components.trainer import feature_spec_from_schema, make_dataset

    spec = feature_spec_from_schema(f"{schema.path}/schema.pbtxt")
    found = {}
    for split in json.loads(examples.metadata["split_names"]):
        shards = f"{examples.path}/Split-{split}/*"
        batches = make_dataset(shards, spec, 256, training=False, num_epochs=1)
        found[split] = sum(int(next(iter(batch.values())).shape[0]) for batch in batches)
        counts.log_metric(f"{split} records", found[split])
    print(f"records by split: {found}")
    return found["train"]


def load(specs: pathlib.Path, name: str):
    """One of the project's components, from its YAML spec."""
    return components.load_component_from_file(str(specs / f"{name}.yaml"))


def build(specs: pathlib.Path = SPECS):
    """The pipeline, with the project's components loaded from ``specs``."""
    example_gen, schema_gen, transform, trainer, evaluator, pusher = (
        load(specs, name)
        for name in (
            "sharded_example_gen",
            "schema_gen",
            "transform",
            "trainer",
            "evaluator",
            "pusher",
        )
    )

    @dsl.pipeline(name="kfp-reuse")
    def kfp_reuse(
        data: str,
        label: str,
        serving_dir: str,
        train_steps: int = 0,
        positive_class: str = "",
        num_classes: int = 0,
    ):
        shards = example_gen(input_base=data, label=label)
        schema = schema_gen(statistics=shards.outputs["statistics"])
        count_records(examples=shards.outputs["examples"], schema=schema.outputs["schema"])
        graph = transform(
            examples=shards.outputs["examples"],
            schema=schema.outputs["schema"],
            statistics=shards.outputs["statistics"],
        )
        model = trainer(
            examples=shards.outputs["examples"],
            schema=schema.outputs["schema"],
            transform_graph=graph.outputs["transform_graph"],
            train_steps=train_steps,
        )
        # Two classes and a positive class: the Evaluator draws their ROC curve too.
        verdict = evaluator(
            examples=shards.outputs["examples"],
            model=model.outputs["model"],
            positive_class=positive_class,
            num_classes=num_classes,
        )
        pusher(
            model=model.outputs["model"],
            model_blessing=verdict.outputs["blessing"],
            serving_dir=serving_dir,
        )

    return kfp_reuse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="kfp_reuse.yaml", help="the compiled pipeline")
    parser.add_argument("--specs", type=pathlib.Path, default=SPECS, help="the component specs")
    args = parser.parse_args()
    compiler.Compiler().compile(build(args.specs), args.output)
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
