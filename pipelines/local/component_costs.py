"""Each component's wall and CPU time in a local run, kept on its ML Metadata execution.

LocalDagRunner runs one component at a time in this process (the
DirectRunner's in-memory mode included), so the process's CPU time (user +
sys, reaped child processes included) between an executor's start and end is
that component's. Child processes that outlive a component (the JVM and
Python workers of ExampleGen's Spark engine) are counted while they live.
Only the executor is metered: not the driver, the cache look-up or the
publishing, which cost the same for every component. The whole launch's
wall time is kept beside it: the component's own duration, which the
execution's last update (the costs are written onto every execution at the
end of the run) cannot give.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import time
from collections.abc import Iterator
from unittest import mock

from tfx.orchestration.portable import launcher

WALL_PROPERTY = "wall_seconds"
CPU_PROPERTY = "cpu_seconds"
LAUNCH_PROPERTY = "launch_seconds"


@dataclasses.dataclass(frozen=True)
class Cost:
    """What one component's executor took, and its whole launch (driver to publisher)."""

    wall_seconds: float
    cpu_seconds: float
    launch_seconds: float | None = None


def process_cpu_seconds() -> float:
    """User + sys CPU seconds of this process, its reaped children and its live descendants."""
    return (
        sum(
            usage.ru_utime + usage.ru_stime
            for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        )
        + _live_descendants_cpu_seconds()
    )


def _live_descendants_cpu_seconds() -> float:
    """CPU of the descendants still running, with what each of them has reaped (Linux /proc)."""
    parents, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone while listed
        # After the name: state ppid ...; utime stime cutime cstime are the 12th-15th.
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(value) for value in fields[11:15])
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - mine
        mine |= frontier
    return sum(ticks[pid] for pid in mine) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def metered_executors() -> Iterator[dict[int, Cost]]:
    """Meters every executor LocalDagRunner launches meanwhile, by ML Metadata execution id."""
    costs: dict[int, Cost] = {}

    class MeteredLauncher(launcher.Launcher):
        def launch(self):
            started = time.monotonic()
            execution_info = super().launch()
            if execution_info is not None and execution_info.execution_id in costs:
                costs[execution_info.execution_id] = dataclasses.replace(
                    costs[execution_info.execution_id],
                    launch_seconds=time.monotonic() - started,
                )
            return execution_info

        # TFX's launcher runs the executor here between the driver and the publisher.
        def _run_executor(self, execution_info):
            started, cpu_started = time.monotonic(), process_cpu_seconds()
            try:
                return super()._run_executor(execution_info)
            finally:
                costs[execution_info.execution_id] = Cost(
                    time.monotonic() - started, process_cpu_seconds() - cpu_started
                )

    with mock.patch.object(launcher, "Launcher", MeteredLauncher):
        yield costs


def record_costs(store, costs: dict[int, Cost]) -> None:
    """Writes the costs onto their executions as custom properties."""
    if not costs:
        return
    executions = store.get_executions_by_id(list(costs))
    for execution in executions:
        cost = costs[execution.id]
        execution.custom_properties[WALL_PROPERTY].double_value = round(cost.wall_seconds, 3)
        execution.custom_properties[CPU_PROPERTY].double_value = round(cost.cpu_seconds, 3)
        if cost.launch_seconds is not None:
            execution.custom_properties[LAUNCH_PROPERTY].double_value = round(
                cost.launch_seconds, 3
            )
    store.put_executions(executions)


def read_cost(execution) -> Cost | None:
    """The cost recorded on an execution; None if it was not metered (reused, or not local)."""
    properties = execution.custom_properties
    if WALL_PROPERTY not in properties or CPU_PROPERTY not in properties:
        return None
    return Cost(
        properties[WALL_PROPERTY].double_value,
        properties[CPU_PROPERTY].double_value,
        properties[LAUNCH_PROPERTY].double_value if LAUNCH_PROPERTY in properties else None,
    )
