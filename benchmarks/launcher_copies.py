"""What KFP's launcher copies into each task's pod, at two data sizes 10x apart.

Runs each compiled pipeline through the project's cluster-like harness
(``tests/cluster_runs.py``: each task in its own container of the component image,
its input artifacts staged from the pipeline root as KFP's launcher stages them) on
KFP's defaults: the pipeline root in MinIO (moto, checking keys), the serving folder
(and the daily state) on the serving claim. The daily pipeline (``compile --window
2``) runs three days at ``--rows`` rows a day, the one-shot pipeline one day; then
both again at 10x the rows, in fresh stores. Prints, for the last run of each size,
every task's files and bytes copied in and the copy's seconds, and the ratio of the
two sizes' bytes: a task whose copy grows with the rows shows about 10x. The shard
bytes ExampleGen wrote into the store are printed beside, for scale. Not a test.

    .venv/bin/python benchmarks/launcher_copies.py --rows 500
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

DAYS = (1, 2, 3)
_CLAIM = "tfrecord-pipelines-serving"
# Each pipeline: its compile flags, and the days it runs.
PIPELINES = {
    "daily": (("--data", "gs://events/day-{SPAN}/", "--window", "2"), DAYS),
    "one-shot": (("--data", "gs://events/day-1/"), (None,)),
}


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000, help="rows a day of the smaller size")
    parser.add_argument(
        "--pipeline", choices=[*PIPELINES, "both"], default="both", help="which to run"
    )
    args = parser.parse_args(argv)
    if args.rows < 500:
        parser.error("--rows must be 500 or more (a window's drift check needs rows)")
    return args


def _last_run(pipeline: str, rows: int, image: str, folder: Path) -> dict:
    """The task records of the pipeline's last run (the daily one's day 3) at ``rows`` rows
    a day."""
    from cluster_jobs import run_job
    from cluster_runs import Cluster, ObjectStores, new_claim, run_as_cluster
    from object_store_servers import authenticated_s3_server, gcs_server

    from conftest import run_cli
    from daily_spans import write_day

    gcs = folder / "gcs"
    for day in DAYS:
        write_day(gcs / "events" / f"day-{day}", seed=day, rows=rows)
    s3 = folder / "s3"
    (s3 / "mlpipeline").mkdir(parents=True)
    (s3 / "mlpipeline" / "README").write_text("KFP's artifacts\n")
    with gcs_server(gcs) as gcs_url, authenticated_s3_server(s3) as (s3_url, keys):
        package = folder / f"{pipeline}.yaml"
        settings, days = PIPELINES[pipeline]
        compiled = run_cli(
            "compile", *settings, "--label", "label",
            "--train-steps", "20", "--min-accuracy", "0", "--image", image, "--gpus", "0",
            "--artifact-endpoint", s3_url, "--output", str(package),
            env={"STORAGE_EMULATOR_HOST": gcs_url},
        )  # fmt: skip
        if compiled.returncode != 0:
            raise SystemExit(compiled.stderr[-2000:])
        claim = new_claim(folder / "claim")
        run_job(ROOT / "k8s" / "base" / "serving-pvc-owner.yaml", {_CLAIM: claim}, image)
        cluster = Cluster(
            ObjectStores(gcs_url, s3_url, keys),
            {_CLAIM: claim},
            {"mlpipeline-minio-artifact": {"accesskey": keys[0], "secretkey": keys[1]}},
            {"STORAGE_EMULATOR_HOST": gcs_url},
        )
        records = None
        for day in days:
            print(f"  {pipeline}, {rows:,} rows a day: day {day or 1}", flush=True)
            records = run_as_cluster(
                package,
                cluster,
                "minio://mlpipeline/v2/artifacts",
                folder,
                {"span": str(day)} if day else {},
            )
        return records


def _shard_bytes(records: dict) -> int:
    """The bytes of the shards ExampleGen wrote (its shard plan's)."""
    import json

    _, metadata = records["ShardedExampleGen"].outputs["examples"]
    plan = json.loads(metadata["shard_plan"])
    return sum(s["bytes"] for split in plan["splits"].values() for s in split["shards"])


def main(argv=None) -> None:
    """Runs both sizes of each pipeline asked for and prints a table each."""
    args = _parse_args(argv)
    from component_image import build_component_image

    image = build_component_image("cpu")
    sizes = (args.rows, args.rows * 10)
    pipelines = list(PIPELINES) if args.pipeline == "both" else [args.pipeline]
    with tempfile.TemporaryDirectory() as scratch:
        for pipeline in pipelines:
            found = {}
            for rows in sizes:
                folder = Path(scratch) / f"{pipeline}-rows-{rows}"
                folder.mkdir()
                found[rows] = _last_run(pipeline, rows, image, folder)
            _print_table(pipeline, sizes, found)


def _print_table(pipeline: str, sizes: tuple[int, int], found: dict) -> None:
    small, large = (found[rows] for rows in sizes)
    run = "day 3" if pipeline == "daily" else "the run"
    print(f"\n{pipeline}, {run}, copied into each task's pod: {sizes[0]:,} and "
          f"{sizes[1]:,} rows a day (shards written into the store: "
          f"{_shard_bytes(small):,} and {_shard_bytes(large):,} bytes)")  # fmt: skip
    print(f"{'task':<18} {'files':>6} {'bytes':>12} {'s':>5}   {'files':>6} {'bytes':>12} "
          f"{'s':>5}   {'ratio':>6}")  # fmt: skip
    for task in small:
        a, b = small[task], large[task]
        ratio = f"{b.staged_bytes / a.staged_bytes:.2f}" if a.staged_bytes else "-"
        print(
            f"{task:<18} {len(a.staged):>6} {a.staged_bytes:>12,} {a.staged_seconds:>5.1f}   "
            f"{len(b.staged):>6} {b.staged_bytes:>12,} {b.staged_seconds:>5.1f}   {ratio:>6}",
            flush=True,
        )


if __name__ == "__main__":
    main()
