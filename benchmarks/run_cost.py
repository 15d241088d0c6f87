"""What a run costs beyond its data: the bundled penguins, a few training steps, every step run.

Runs ``python -m tfrecord_pipelines run --no-cache`` on the bundled penguins
(344 rows) with ``--train-steps`` steps, as a user would, ``--repeat`` times,
and prints the median wall and CPU time (user + sys of the process and its
children) of the command, of the pipeline's executors, and of each component.
At this size nearly all of it is fixed cost: imports, tracing, saving, the
report. With ``--compare REF`` the same runs go on a checkout of git revision
REF too (``revisions.checkout``), interleaved with this tree's, so that
before and after come from one run on one machine.

    .venv/bin/python benchmarks/run_cost.py --compare c9c8aa0
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import revisions

_COST_ROW = re.compile(r"^\s+(?:cost:\s+)?(\w+)\s+([\d.]+)\s+([\d.]+)", re.MULTILINE)


def _run(cwd: Path, env: dict[str, str], output: str, steps: int) -> dict[str, tuple]:
    """One run's (wall, CPU) seconds: the command's, and each component's from its summary."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_pipelines", "run", "--output", output, "--no-cache",
         "--train-steps", str(steps), "--min-accuracy", "0"],
        cwd=cwd, env={**env, "TF_USE_LEGACY_KERAS": "1"}, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"run failed in {cwd}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    costs = done.stdout.split("  cost:", 1)[1]
    found = {"command": (wall, cpu)}
    for name, component_wall, component_cpu in _COST_ROW.findall("  cost:" + costs):
        if name != "component":
            found[name] = (float(component_wall), float(component_cpu))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="REF", help="git revision to measure beside this tree")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20, help="training steps of each run")
    args = parser.parse_args()
    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        trees = revisions.trees(stack, args.compare)
        runs: dict[str, list[dict]] = {tree: [] for tree in trees}
        for i in range(args.repeat):
            for tree, (cwd, env) in trees.items():
                output = os.path.join(scratch, f"{len(runs[tree])}-{tree}")
                runs[tree].append(_run(cwd, env, output, args.steps))
                print(f"  run {i + 1}/{args.repeat} of {tree} done", file=sys.stderr, flush=True)
        rows = list(dict.fromkeys(name for found in runs["now"] for name in found))
        columns = " | ".join(f"{t}: wall s | {t}: CPU s" for t in trees)
        print(f"| median of {args.repeat} | {columns} |")
        print(f"| --- |{' --- | --- |' * len(trees)}")
        for row in rows:
            cells = []
            for tree in trees:
                values = [found[row] for found in runs[tree] if row in found]
                if not values:
                    cells.append(" | ")
                    continue
                walls, cpus = zip(*values, strict=True)
                cells.append(f"{statistics.median(walls):.1f} | {statistics.median(cpus):.1f}")
            print(f"| {row} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
