"""Argo's scheduling of a KFP run's tasks, for the cluster-like harness (``cluster_runs``).

What Argo Workflows does with the DAG KFP compiles (kubeflow/pipelines at
7b70c7b95f68, ``backend/src/v2/compiler/argocompiler/dag.go:269, 316, 396``: each
task's driver ``depends`` on its ``dependentTasks``, its executor on its driver):
every task whose dependencies have
succeeded starts at once, each in a pod of its own; a failed task starts
nothing after it, and the tasks already running run to their end before the run
fails.

A ReadWriteOnce claim is attached to one node at a time. Two pods on two nodes
that mount one such claim cannot both start: the second waits in
ContainerCreating on kubelet's Multi-Attach error until the first ends, or for
ever if the first waits on it. Whether two tasks that can run at once land on
one node is the scheduler's luck; the harness refuses, before any task starts,
a DAG in which two tasks that can run at once (neither depends on the other,
directly or not) mount one ReadWriteOnce claim, with kubelet's words.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Collection, Mapping


class MultiAttachError(RuntimeError):
    """A pod was started with a ReadWriteOnce claim that a live pod on another node holds."""


def _ancestors(tasks: Mapping[str, Mapping]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}

    def of(name: str, seen: tuple[str, ...] = ()) -> set[str]:
        if name in seen:
            raise ValueError(f"the DAG has a cycle through {name!r}")
        if name not in found:
            direct = set(tasks[name].get("dependentTasks", []))
            found[name] = direct.union(*(of(d, (*seen, name)) for d in direct))
        return found[name]

    for name in tasks:
        of(name)
    return found


def check_claims(
    tasks: Mapping[str, Mapping],
    claims_of: Callable[[str], Collection[str]],
    read_write_many: Collection[str] = (),
) -> None:
    """Refuses two tasks that can run at once (neither after the other) and mount one
    ReadWriteOnce claim.

    Raises:
      MultiAttachError: naming the claim and the two tasks, in kubelet's words.
    """
    ancestors = _ancestors(tasks)
    holders: dict[str, list[str]] = {}
    for name in sorted(tasks):
        for claim in claims_of(name):
            if claim not in read_write_many:
                holders.setdefault(claim, []).append(name)
    for claim, names in holders.items():
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                if first not in ancestors[second] and second not in ancestors[first]:
                    raise MultiAttachError(
                        f"{second}: Multi-Attach error for volume {claim!r}: Volume is already "
                        f"used by pod(s) of task {first!r}: the two can run at once on two "
                        "nodes, and the claim is ReadWriteOnce"
                    )


def run_dag(
    tasks: Mapping[str, Mapping],
    start: Callable[[str], object],
    claims_of: Callable[[str], Collection[str]],
    read_write_many: Collection[str] = (),
) -> dict[str, object]:
    """Runs each task as soon as the tasks it depends on have succeeded, each in a thread,
    after ``check_claims``.

    Args:
      tasks: the DAG's tasks by name (``dependentTasks`` their dependencies).
      start: runs one task's pod to its end; returns its record or raises its failure.
      claims_of: the claims a task's pod mounts.
      read_write_many: the claims many nodes may mount at once; every other is
        ReadWriteOnce.

    Returns:
      Each task's record, by name.

    Raises:
      MultiAttachError: two tasks that can run at once mount one ReadWriteOnce claim.
      Exception: the first task's failure, once every task running then has ended.
    """
    check_claims(tasks, claims_of, read_write_many)
    done: dict[str, object] = {}
    failure: BaseException | None = None
    pending = dict(tasks)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(tasks))) as pool:
        running: dict[concurrent.futures.Future, str] = {}
        while True:
            if failure is None:
                for name in sorted(pending):
                    if set(pending[name].get("dependentTasks", [])) <= set(done):
                        del pending[name]
                        running[pool.submit(start, name)] = name
            if not running:
                break
            finished, _ = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in finished:
                name = running.pop(future)
                try:
                    done[name] = future.result()
                except Exception as e:  # noqa: BLE001 - the run fails once the others end
                    failure = failure or e
    if failure is not None:
        raise failure
    return done
