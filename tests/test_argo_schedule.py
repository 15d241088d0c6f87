"""The harness's scheduling as Argo schedules a KFP run (issue 89, finding 5): every ready task
at once, nothing after a failure, and no two tasks that can run at once on one
ReadWriteOnce claim."""

from __future__ import annotations

import threading

import pytest
from argo_schedule import MultiAttachError, check_claims, run_dag

# a and b are independent; c needs both; d needs c.
DAG = {
    "a": {},
    "b": {},
    "c": {"dependentTasks": ["a", "b"]},
    "d": {"dependentTasks": ["c"]},
}


def test_every_ready_task_starts_at_once():
    both = threading.Barrier(2, timeout=60)  # broken unless a and b run at the same time
    started = []

    def start(name):
        started.append(name)
        if name in ("a", "b"):
            both.wait()
        return name.upper()

    assert run_dag(DAG, start, lambda name: ()) == {"a": "A", "b": "B", "c": "C", "d": "D"}
    assert sorted(started[:2]) == ["a", "b"] and started[2:] == ["c", "d"]


def test_a_failure_lets_the_running_task_end_and_starts_nothing_after():
    b_may_end = threading.Event()
    ended = []

    def start(name):
        if name == "a":
            raise RuntimeError("a failed")
        b_may_end.wait(60)
        ended.append(name)

    def a_fails_then_b_ends(name):
        if name == "b":
            threading.Timer(0.5, b_may_end.set).start()
        return start(name)

    with pytest.raises(RuntimeError, match="a failed"):
        run_dag(DAG, a_fails_then_b_ends, lambda name: ())
    assert ended == ["b"]


def test_two_tasks_that_can_run_at_once_on_one_read_write_once_claim_are_refused():
    claims = {"a": ["serving"], "b": ["serving"]}
    with pytest.raises(MultiAttachError, match="b: Multi-Attach error for volume 'serving'"):
        check_claims(DAG, lambda name: claims.get(name, ()))
    check_claims(DAG, lambda name: claims.get(name, ()), read_write_many={"serving"})
    # One after the other, directly or not, they never run at once.
    check_claims(DAG, lambda name: {"a": ["serving"], "d": ["serving"]}.get(name, ()))
    ran = []
    with pytest.raises(MultiAttachError):
        run_dag(DAG, ran.append, lambda name: claims.get(name, ()))
    assert ran == []
