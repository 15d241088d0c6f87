"""kill -9 during ExampleGen, Transform and the Trainer, then the same run again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ml_metadata.proto import metadata_store_pb2

from conftest import run_summary
from running_pipeline import (
    FAST,
    PENGUINS,
    executions_by_node,
    finish,
    kill_hard,
    lock_holder,
    node_outputs_exist,
    run_states,
    start_run,
    wait_for,
)

pytestmark = pytest.mark.faults

_State = metadata_store_pb2.Execution
UPSTREAM = {
    "ShardedExampleGen": {"ImportSchemaGen"},
    # LocalDagRunner runs ExampleValidator (on ExampleGen's statistics) before Transform.
    "Transform": {"ImportSchemaGen", "ShardedExampleGen", "ExampleValidator"},
    "Trainer": {
        "ImportSchemaGen",
        "ShardedExampleGen",
        "ExampleValidator",
        "Transform",
    },
}


def _input_uris(output: Path) -> set[str]:
    """The URI of every artifact any execution in the store took as an input."""
    from tfrecord_pipelines.local.run_record import open_store

    store = open_store(str(output / "metadata" / PENGUINS / "metadata.db"))
    executions = store.get_executions()
    events = store.get_events_by_execution_ids([e.id for e in executions])
    inputs = [e.artifact_id for e in events if e.type == metadata_store_pb2.Event.INPUT]
    return {a.uri for a in store.get_artifacts_by_id(inputs)}


def _kill_during(output: Path, node: str, running: callable, *extra: str):
    """Starts a run, kills it once ``running`` holds, and returns the killed execution."""
    args = ("--output", str(output), *FAST, *extra)
    process = start_run(*args)
    wait_for(process, running, f"{node} started")
    kill_hard(process)
    # The lock file still names the dead run; the kernel released its lock.
    assert lock_holder(output)["pid"] == process.pid
    (killed,) = executions_by_node(output)[node]
    # Killed mid-execution: ML Metadata still says RUNNING, and published nothing.
    assert killed.last_known_state == _State.RUNNING
    return args, killed


def _check_recovered(output: Path, node: str, killed, text: str) -> None:
    assert (
        f"An earlier run was interrupted during {node} (execution {killed.id}): marked canceled"
        in text
    )
    after = executions_by_node(output)
    old, new = after[node]
    assert old.id == killed.id and old.last_known_state == _State.CANCELED
    assert new.last_known_state == _State.COMPLETE
    states = run_states(output, text)
    # What had finished before the kill is reused, the killed step runs afresh.
    assert {n for n, s in states.items() if s == "cached"} == UPSTREAM[node]
    assert states[node] == "complete"
    # Nothing of the killed execution is left to read, and nothing read it.
    partial = [p for p in (output / "pipeline_root" / PENGUINS / node).glob(f"*/{killed.id}")]
    assert partial == []
    assert not any(
        uri.endswith(f"/{node}/{key}/{killed.id}")
        for uri in _input_uris(output)
        for key in ("examples", "transform_graph", "model", "model_run")
    )


@pytest.mark.parametrize(
    "node, output_key",
    [("ShardedExampleGen", "examples"), ("Transform", "transform_graph")],
)
def test_kill_during_a_data_component_then_rerun(tmp_path, node, output_key):
    output = tmp_path / "out"
    args, killed = _kill_during(output, node, node_outputs_exist(output, node, output_key))
    status, text = finish(start_run(*args))
    assert status == 0, text[-3000:]
    _check_recovered(output, node, killed, text)


def test_kill_during_training_resumes_from_the_last_epoch_backed_up(tmp_path):
    output = tmp_path / "out"
    backups = output / "pipeline_root" / PENGUINS / "Trainer" / "backup"

    def epoch_backed_up() -> bool:
        return any(backups.glob("*/chief/checkpoint"))

    # 10 epochs of 200 steps (about 2 s each here): killed after the first backups, long
    # before the end.
    args, killed = _kill_during(output, "Trainer", epoch_backed_up, "--train-steps", "2000")
    status, text = finish(start_run(*args))
    assert status == 0, text[-3000:]
    _check_recovered(output, "Trainer", killed, text)
    summary = run_summary(output, PENGUINS, text)
    report = json.loads(Path(summary.model_run, "resume.json").read_text())
    steps = report["resumed_steps"]
    assert steps > 0 and steps % 200 == 0 and steps < 2000
    assert f"resumed:       training went on from step {steps:,}" in text
    # Training completed: the backup is gone, and the model is the resumed one.
    assert not any(backups.glob("*/chief/*"))
    assert Path(summary.pushed_model, "saved_model.pb").is_file()
