"""Tasks that mount one PersistentVolumeClaim run one after another.

A claim is usually ReadWriteOnce (k8s/'s serving claim is; it is the default of
most storage classes): one node attaches it at a time. Argo starts every task
whose inputs are ready, so two tasks that neither wait on the other (the Pusher
and RecordRun, say) may be scheduled on two nodes; the second pod then waits in
ContainerCreating on kubelet's Multi-Attach error until the first ends, or for
ever if the first waits on it. ``one_task_at_a_time`` orders such tasks in the
DAG (``dependentTasks``), in the DAG's own order, so that whatever nodes they
land on, one pod holds the claim at a time. A ReadWriteMany claim loses only
the overlap of those tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _topological(tasks: Mapping[str, Mapping]) -> list[str]:
    """The tasks, each after those it depends on, ties by name."""
    order: list[str] = []
    while len(order) < len(tasks):
        ready = sorted(
            name
            for name, task in tasks.items()
            if name not in order and set(task.get("dependentTasks", [])) <= set(order)
        )
        if not ready:
            raise ValueError(f"the DAG has a cycle among {sorted(set(tasks) - set(order))}")
        order.append(ready[0])
    return order


def _after(tasks: Mapping[str, Mapping], name: str) -> set[str]:
    """Every task ``name`` waits on, directly or not."""
    seen, stack = set(), list(tasks[name].get("dependentTasks", []))
    while stack:
        task = stack.pop()
        if task not in seen:
            seen.add(task)
            stack += tasks[task].get("dependentTasks", [])
    return seen


def one_task_at_a_time(spec: dict, claims: Mapping[str, Sequence[str]]) -> None:
    """Makes each task that mounts a claim wait on the one before it that mounts it too, in
    place, where it does not already.

    Args:
      spec: the compiled PipelineSpec as a dict (the first YAML document).
      claims: each task's claims, by task name.
    """
    tasks = spec["root"]["dag"]["tasks"]
    order = _topological(tasks)
    by_claim: dict[str, list[str]] = {}
    for name in order:
        for claim in claims.get(name, ()):
            by_claim.setdefault(claim, []).append(name)
    for names in by_claim.values():
        for first, second in zip(names, names[1:], strict=False):
            if first not in _after(tasks, second):
                task = tasks[second]
                task["dependentTasks"] = sorted({*task.get("dependentTasks", []), first})
