"""A component's CPU counts the processes it started, whether or not they have exited."""

from __future__ import annotations

import subprocess
import sys

from tfrecord_pipelines.local.component_costs import process_cpu_seconds

_BURN_THEN_WAIT = (
    "import sys, time\n"
    "start = time.process_time()\n"
    "while time.process_time() - start < 1.0: pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_live_child_s_cpu_is_counted_and_stays_counted_once_it_exits():
    before = process_cpu_seconds()
    # Like Spark's JVM after a conversion: a child that has worked and lives on.
    child = subprocess.Popen(
        [sys.executable, "-c", _BURN_THEN_WAIT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "burnt\n"
    while_alive = process_cpu_seconds() - before
    child.communicate("")
    after_exit = process_cpu_seconds() - before
    assert while_alive >= 1.0
    assert after_exit >= while_alive
    assert after_exit < while_alive + 0.5, "the child's CPU was counted twice"
