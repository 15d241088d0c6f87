"""make_dataset on real tf.data service servers: a dispatcher and two workers, each a process.

The bundled pipeline's Trainer then reads through the servers as
k8s/components/data-service runs them: its pods, in the component image
(``data_service_pods``).
"""

from __future__ import annotations

import collections
import json
import socket
from pathlib import Path

import pytest
import tensorflow as tf
from data_service_servers import DataServiceServers

from conftest import REPO_ROOT, run_cli, run_summary
from data_service_pods import data_service_pods, pod_containers
from tfrecord_pipelines.components.trainer.data_service import (
    DataService,
    DataServiceError,
    registered_workers,
)
from tfrecord_pipelines.components.trainer.dataset import make_dataset
from tfrecord_pipelines.components.trainer.input_options import InputOptions

SPEC = {"id": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([], tf.float32)}


def _write_shards(folder: Path, files: int, records: int, gzip: bool) -> str:
    """Shards whose record ids are file * records + index; returns their glob pattern."""
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gzip else ""
    for f in range(files):
        options = tf.io.TFRecordOptions("GZIP" if gzip else "")
        with tf.io.TFRecordWriter(str(folder / f"part-{f:03d}{suffix}"), options) as writer:
            for i in range(records):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "id": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[f * records + i])
                            ),
                            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 10])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
    return str(folder / f"part-*{suffix}")


def _ids(batches) -> list[int]:
    return [int(i) for batch in batches for i in batch["id"].numpy()]


@pytest.fixture
def servers(tmp_path):
    started = DataServiceServers(REPO_ROOT, tmp_path)
    yield started
    started.stop()


def _dataset(pattern: str, service: DataService | None, batch_size: int = 32):
    return make_dataset(
        pattern,
        SPEC,
        batch_size,
        num_epochs=1,
        options=InputOptions(device=None, seed=1),
        data_service=service,
    )


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "uncompressed"])
def test_the_service_yields_exactly_the_local_examples(servers, tmp_path, gzip):
    pattern = _write_shards(tmp_path / "shards", files=6, records=100, gzip=gzip)
    servers.start_dispatcher()
    servers.start_workers(2)

    local = _ids(_dataset(pattern, None))
    served = _ids(_dataset(pattern, servers.service))

    assert collections.Counter(served) == collections.Counter(local)
    assert sorted(local) == list(range(600))


def test_a_killed_worker_serves_no_example_twice_and_the_epoch_ends(servers, tmp_path):
    files, records = 16, 400
    pattern = _write_shards(tmp_path / "shards", files=files, records=records, gzip=True)
    servers.start_dispatcher()
    doomed, _ = servers.start_workers(2)
    batches = iter(_dataset(pattern, servers.service, batch_size=20))
    before = _ids(next(batches) for _ in range(10))

    servers.kill(doomed)
    # Its pod comes back at the same address (a StatefulSet's); without that,
    # TF 2.16's trainer waits for the lost worker's data for ever.
    servers.restart_worker(doomed)
    after = _ids(batches)  # ends: no hang, no error

    seen = collections.Counter(before + after)
    assert max(seen.values()) == 1, "an example was served twice"
    lost = files * records - len(seen)
    incomplete = {i // records for i in range(files * records) if i not in seen}
    # At most once is all TF 2.16 keeps: in 5 runs here 0, 0, 1,460, 6,180 and
    # 6,180 of 6,400 examples were lost (the job can end early after the
    # restart), so the loss is reported, not bounded.
    print(
        f"SIGKILL of 1 of 2 workers after 10 batches, restarted: {len(seen)} of "
        f"{files * records} examples seen, {lost} lost, from {len(incomplete)} of {files} shards"
    )


def test_a_restarted_dispatcher_resumes_the_job_from_its_journal(servers, tmp_path):
    files, records = 8, 400
    pattern = _write_shards(tmp_path / "shards", files=files, records=records, gzip=False)
    journal = tmp_path / "journal"
    servers.start_dispatcher(journal=journal)
    servers.start_workers(2)
    batches = iter(_dataset(pattern, servers.service, batch_size=20))
    before = _ids(next(batches) for _ in range(10))

    servers.kill(servers.dispatcher)
    servers.start_dispatcher(journal=journal)
    after = _ids(batches)

    seen = collections.Counter(before + after)
    assert max(seen.values()) == 1, "an example was served twice"
    assert sorted(seen) == list(range(files * records))
    assert any(journal.iterdir())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_dispatcher_is_one_line_in_bounded_time():
    service = DataService(f"127.0.0.1:{_closed_port()}")
    with pytest.raises(DataServiceError, match=r"did not answer within 2 s") as raised:
        registered_workers(service, timeout_s=2)
    assert "\n" not in str(raised.value)


def test_a_pipeline_that_runs_python_cannot_go_to_the_workers(tmp_path):
    pattern = _write_shards(tmp_path / "shards", files=2, records=10, gzip=False)

    def with_python(features):
        doubled = tf.py_function(lambda x: x * 2, [features["x"]], tf.float32)
        return {**features, "x": doubled}

    with pytest.raises(ValueError, match=r"calls Python \(EagerPyFunc, e\.g\. tf\.py_function\)"):
        make_dataset(
            pattern, SPEC, 4, transform=with_python, data_service=DataService("127.0.0.1:5050")
        )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"cache": "memory"}, "cache='memory' would cache on each worker only the shards"),
        ({"training": False}, "evaluation must see each example once in a fixed order"),
    ],
)
def test_evaluation_and_caches_stay_on_the_trainer(tmp_path, arguments, message):
    pattern = _write_shards(tmp_path / "shards", files=1, records=4, gzip=False)
    with pytest.raises(ValueError, match=message):
        make_dataset(pattern, SPEC, 4, data_service=DataService("127.0.0.1:5050"), **arguments)


@pytest.mark.parametrize(
    ("address", "message"),
    [("dispatcher", "must be HOST:PORT"), ("grpc://d:99999", "must be HOST:PORT")],
)
def test_bad_addresses_are_named(address, message):
    with pytest.raises(ValueError, match=message):
        DataService(address)


@pytest.mark.e2e
def test_the_bundled_pipeline_trains_on_the_manifests_pods(tmp_path, component_image, docker_api):
    output = tmp_path / "output"
    output.mkdir()
    with data_service_pods(output, component_image, tmp_path) as (address, pods):
        for pod in pods:
            [container] = pod_containers(pod)
            assert container["State"]["Running"], (pod, container["State"])
            assert container["Config"]["User"].split(":")[0] == "1000", pod
            assert container["HostConfig"]["ReadonlyRootfs"] is True, pod

        result = run_cli(
            "run", "--output", str(output), "--train-steps", "300", "--data-service", address
        )

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Trainer input: tf.data service at {address}, 2 worker(s)" in result.stdout
    summary = run_summary(output, "penguins", result.stdout)
    assert summary.blessed
    report = json.loads((Path(summary.model_run) / "input_stall.json").read_text())
    assert report["data_service"] == address
    assert [epoch["data_service_workers"] for epoch in report["epochs"]] == [2, 2]


def test_run_with_an_unreachable_dispatcher_stops_before_any_component(tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    result = run_cli("run", "--output", str(tmp_path), "--data-service", address)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: The tf.data service dispatcher at {address} did not answer within 10 s "
        "(no connection): is it running, and is the address its Service's?"
    ]
    assert not (tmp_path / "metadata").exists()  # no component ran
