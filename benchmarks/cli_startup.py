"""How long each command takes to answer: its help, a wrong argument, a small inspect.

Runs ``python -m tfrecord_pipelines ...`` as a user would, each command ``--repeat``
times, and prints the median wall time and CPU time (user + sys of the
child) per command. With ``--compare REF`` the same commands also run on a
checkout of git revision REF (``revisions.checkout``: a temporary worktree,
imported ahead of this tree's editable install, the same virtual
environment), interleaved with this tree's runs, so "before" and "after"
come from one run on one machine.

    .venv/bin/python benchmarks/cli_startup.py --compare c47e38f
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import revisions
from revisions import REPO_ROOT


def _commands(small_record_file: str, scratch: str) -> list[tuple[str, list[str]]]:
    missing = os.path.join(scratch, "no-such-folder")
    return [
        ("--help", ["--help"]),
        ("inspect --help", ["inspect", "--help"]),
        ("convert --help", ["convert", "--help"]),
        ("report --help", ["report", "--help"]),
        ("inspect (205 records)", ["inspect", small_record_file]),
        ("run, missing data folder", ["run", "--data", missing, "--output", scratch]),
        ("compile, missing data folder", ["compile", "--data", missing]),
        (
            "submit, missing data folder",
            ["submit", "--host", "http://127.0.0.1:9", "--data", missing],
        ),
        ("convert, missing source", ["convert", missing, os.path.join(scratch, "out")]),
        ("report, no runs there", ["report", "--output", missing]),
    ]


def _time(cwd: Path, env: dict[str, str], args: list[str]) -> tuple[float, float, bool]:
    """Wall and CPU seconds of one command; False if the tree has no such command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", *args],
        cwd=cwd,
        capture_output=True,
        env={**env, "TF_USE_LEGACY_KERAS": "1"},
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, b"invalid choice" not in done.stderr


def _small_record_file(scratch: str) -> str:
    """The bundled penguins' train split as one GZIP TFRecord file (205 records)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import csv

    import tensorflow as tf

    path = os.path.join(scratch, "penguins-205.tfrecord.gz")
    with open(REPO_ROOT / "data" / "penguins" / "penguins.csv") as f:
        rows = list(csv.DictReader(f))[:205]
    with tf.io.TFRecordWriter(path, "GZIP") as writer:
        for row in rows:
            feature = {
                k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode()]))
                for k, v in row.items()
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="REF", help="git revision to measure beside this tree")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        trees = revisions.trees(stack, args.compare)
        record_file = _small_record_file(scratch)
        print(f"| command | {' | '.join(f'{t} wall s | {t} CPU s' for t in trees)} |")
        print(f"| --- |{' --- | --- |' * len(trees)}")
        for name, command in _commands(record_file, scratch):
            runs = {tree: [] for tree in trees}
            for _ in range(args.repeat):
                for tree, (cwd, env) in trees.items():
                    runs[tree].append(_time(cwd, env, command))
            cells = []
            for tree in trees:
                walls, cpus, known = zip(*runs[tree], strict=True)
                cells.append(
                    f"{statistics.median(walls):.2f} | {statistics.median(cpus):.2f}"
                    if all(known)
                    else "n/a | n/a"
                )
            print(f"| {name} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
