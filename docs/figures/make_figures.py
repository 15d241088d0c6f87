"""Draws the docs' pictures from a finished local run, with the run report's own charts.

    .venv/bin/python docs/figures/make_figures.py OUTPUT NAME

OUTPUT is a ``run --output`` folder and NAME the pipeline in it. Writes
``docs/images/shard-sizes.svg`` (each shard file of the latest conversion,
split by split, against the plan's target) and ``docs/images/input-stall.svg``
(the latest training's input stall per epoch against the input-bound line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

IMAGES = Path(__file__).resolve().parents[1] / "images"


def _latest(folder: Path) -> Path:
    runs = [p for p in folder.glob("*") if p.name.isdigit()]
    if not runs:
        sys.exit(f"error: no artifact in {folder}: run the pipeline first")
    return max(runs, key=lambda p: int(p.name))


def main() -> None:
    """Writes both pictures and prints their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("name")
    args = parser.parse_args()
    root = args.output / "pipeline_root" / args.name
    if not root.is_dir():
        sys.exit(f"error: {root} does not exist: run the pipeline with --output {args.output}")

    from tfrecord_pipelines.report import charts
    from tfrecord_pipelines.report.training import read_training

    examples = _latest(root / "ShardedExampleGen" / "examples")
    plan = json.loads((examples / "shard_plan.json").read_text())
    training = read_training(str(_latest(root / "Trainer" / "model_run")))
    pictures = {
        "shard-sizes.svg": charts.shard_sizes(plan),
        "input-stall.svg": training.charts["input_stall"],
    }
    for name, svg in pictures.items():
        (IMAGES / name).write_text(svg)
        print(IMAGES / name)


if __name__ == "__main__":
    main()
