"""Two Trainer workers, as a TrainJob's pods train: the same inputs, TF_CONFIG each.

The bundled pipeline runs once (its Trainer a single process); then two processes run
the Trainer's own ``run_fn`` on that run's examples and Transform output with the
custom_config the pipeline gave its Trainer, each with the ``TF_CONFIG`` its TrainJob's
pod gets (``train_job.tf_config_env`` as Kubernetes expands it for the pod's completion
index: the JobSet's host names, port 2222 for every worker): MultiWorkerMirroredStrategy,
each worker on its own shards, worker 0 the chief.

Each process is a pod's network, as cwrap's wrappers make it (Debian's
libsocket-wrapper and libnss-wrapper, preloaded in the workers only): socket_wrapper
gives it an address of its own (127.0.0.10 + index; its sockets are Unix sockets in a
folder the workers share), so both listen on 2222 as pods do; nss_wrapper resolves the
host names to those addresses from a hosts file, as a cluster's DNS resolves the
JobSet's; gRPC is told to resolve through the C library (``GRPC_DNS_RESOLVER=native``),
which its c-ares resolver would bypass. A name TF_CONFIG gives that resolves to no
worker fails the run.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import REPO_ROOT, run_cli, run_summary
from example_data import read_split
from tfrecord_pipelines.kubeflow.training_job import train_job
from tfrecord_pipelines.kubeflow.training_job.trainer_resources import TrainerResources
from tfrecord_pipelines.local.run_record import open_store, read_run
from trainjob_contract import node_env

pytestmark = pytest.mark.e2e

STEPS = 60
WORKERS = 2
# A hang, not slowness: no worker printed a line for this long (a worker waiting on a peer
# that is gone prints nothing). A loaded machine's slow steps still print.
STALL_S = 300
# The TrainJob whose pods the workers are, and the runtime its JobSet is made of.
JOB = "trainer-1"
RUNTIME = yaml.safe_load(
    (REPO_ROOT / "k8s" / "components" / "trainjob-runtime" / "runtime.yaml").read_text()
)
# cwrap's libraries (the Makefile's cwrap target installs them), and each worker's address.
WRAPPERS = "libsocket_wrapper.so libnss_wrapper.so"
FIRST_ADDRESS = 10

# The worker's program: the Trainer's run_fn on FnArgs read from a JSON file. Once run_fn
# has returned it leaves at once (os._exit after flushing): at a normal exit the
# preloaded socket_wrapper's destructor can close sockets under gRPC's threads, and a
# chief that had written its model was seen to crash there (SIGSEGV, 2026-12-03).
_WORKER = textwrap.dedent("""
    import json, logging, os, sys
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    logging.basicConfig(level=logging.INFO)  # as TFX's executors log
    from tfx.components.trainer.fn_args_utils import FnArgs
    from tfrecord_pipelines.components.trainer.run import run_fn
    run_fn(FnArgs(**json.load(open(sys.argv[1]))))
    print("run_fn returned", flush=True)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)
""")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The bundled pipeline's run, its Trainer one process; the Trainer's inputs as FnArgs."""
    output = tmp_path_factory.mktemp("single")
    ran = run_cli("run", "--output", str(output), "--train-steps", str(STEPS))
    assert ran.returncode == 0, ran.stderr[-3000:]
    summary = run_summary(output, "penguins", ran.stdout)
    store = open_store(str(output / "metadata" / "penguins" / "metadata.db"))
    run_id = next(line.split()[-1] for line in ran.stdout.splitlines() if "run id:" in line)
    trainer = read_run(store, "penguins", run_id)["Trainer"]
    examples = trainer.inputs["examples"][0].uri
    properties = trainer.execution.custom_properties
    fn_args = {
        "train_files": [f"{examples}/Split-train/*"],
        "eval_files": [f"{examples}/Split-eval/*"],
        "transform_output": trainer.inputs["transform_graph"][0].uri,
        "train_steps": STEPS,
        "eval_steps": json.loads(properties["eval_args"].string_value).get("num_steps"),
        "custom_config": json.loads(properties["custom_config"].string_value),
    }
    return summary, fn_args, Path(examples)


@pytest.fixture(scope="module")
def two_workers(single, tmp_path_factory):
    """The two workers' processes, run to their end: (return code, log) each, and where
    the chief wrote the model."""
    _, fn_args, _ = single
    folder = tmp_path_factory.mktemp("two_workers")
    # <Trainer>/model_run/<execution>: the backup folder is beside it, shared by both.
    outputs = {
        "serving_model_dir": str(folder / "Trainer" / "model" / "1" / "Format-Serving"),
        "model_run_dir": str(folder / "Trainer" / "model_run" / "1"),
    }
    arguments = folder / "fn_args.json"
    arguments.write_text(json.dumps({**fn_args, **outputs}))
    running = _Running(_start_workers(arguments, folder))
    try:
        running.wait()
    finally:
        running.kill()
    return running.results(), Path(outputs["serving_model_dir"]), folder


class _Running:
    """Worker processes whose output is read as it comes: waited on while they print."""

    def __init__(self, processes: list[subprocess.Popen]) -> None:
        import threading

        self.processes = processes
        self.logs: list[list[str]] = [[] for _ in processes]
        self._last = time.monotonic()
        self._readers = [
            threading.Thread(target=self._read, args=(p, lines), daemon=True)
            for p, lines in zip(processes, self.logs, strict=True)
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, process, lines) -> None:
        for line in process.stdout:
            lines.append(line)
            self._last = time.monotonic()

    def wait(self, until=None) -> None:
        """Until UNTIL() holds (None: until every process ended); fails only when none
        printed a line for STALL_S seconds (a hang), however long they take."""
        while not (until() if until else all(p.poll() is not None for p in self.processes)):
            silent = time.monotonic() - self._last
            if silent > STALL_S:
                tails = ["".join(lines[-20:]) for lines in self.logs]
                pytest.fail(f"no worker printed a line for {silent:.0f} s: {tails}")
            time.sleep(0.2)
        if until is None:
            for reader in self._readers:
                reader.join(timeout=30)

    def results(self) -> list[tuple[int | None, str]]:
        """Each process's return code and log so far."""
        pairs = zip(self.processes, self.logs, strict=True)
        return [(process.poll(), "".join(lines)) for process, lines in pairs]

    def kill(self) -> None:
        for process in self.processes:
            process.kill()


def _start_workers(arguments: Path, folder: Path) -> list[subprocess.Popen]:
    """The workers' processes, each with its TrainJob pod's TF_CONFIG, its own address and
    the JobSet's host names, and a temporary folder of its own (its pod's disk)."""
    job = train_job.train_job(
        name=JOB, namespace="team-a", image="image", command=["python"], workers=WORKERS,
        resources=TrainerResources(),
    )  # fmt: skip
    # New pods each start: a network of their own (Unix sockets; a path of under 108 bytes).
    network = Path(tempfile.mkdtemp(prefix="pods-", dir="/tmp"))
    hosts = network / "hosts"
    hosts.write_text(
        "".join(
            f"127.0.0.{FIRST_ADDRESS + index} {address.rpartition(':')[0]}\n"
            for index, address in enumerate(train_job.worker_addresses(JOB, WORKERS))
        )
    )
    processes = []
    for index in range(WORKERS):
        scratch = folder / f"tmp-{index}"
        scratch.mkdir(exist_ok=True)
        environment = {
            **os.environ,
            "TF_CONFIG": node_env(job, RUNTIME, index)["TF_CONFIG"],
            "TMPDIR": str(scratch),
            "LD_PRELOAD": WRAPPERS,
            "SOCKET_WRAPPER_DIR": str(network),
            "SOCKET_WRAPPER_DEFAULT_IFACE": str(FIRST_ADDRESS + index),
            "NSS_WRAPPER_HOSTS": str(hosts),
            "NSS_WRAPPER_PASSWD": "/etc/passwd",
            "NSS_WRAPPER_GROUP": "/etc/group",
            "GRPC_DNS_RESOLVER": "native",
        }
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", _WORKER, str(arguments)],
                cwd=REPO_ROOT,
                env=environment,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        )
    return processes


def _shards(log: str) -> tuple[int, int]:
    [line] = [line for line in log.splitlines() if "train shards." in line]
    words = line.split(": ")[-1].split()
    return int(words[0]), int(words[3])


def _shard_files(log: str) -> list[str]:
    [line] = [line for line in log.splitlines() if "'s train shards: " in line]
    return line.split("'s train shards: ")[-1].split()


def test_each_worker_reads_its_own_half_of_the_shards_and_together_all(two_workers, single):
    results, _, _ = two_workers
    for code, log in results:
        assert code == 0 and "run_fn returned" in log, log[-3000:]
    for _, log in results:
        training = [line for line in log.splitlines() if "Training " in line and " steps " in line]
        # tf.distribute.MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy.
        assert training and "CollectiveAllReduceStrategy on 2 replica(s)" in training[0], log[
            -3000:
        ]
    # Each served at its pod's host name and the runtime's port, as on a cluster.
    for index, (_, log) in enumerate(results):
        assert f"Started server with target: grpc://{JOB}-node-0-{index}.{JOB}:2222" in log
    own = [_shards(log) for _, log in results]
    train_shards = len(list((single[2] / "Split-train").iterdir()))
    assert [total for _, total in own] == [train_shards] * WORKERS
    assert sum(count for count, _ in own) == train_shards
    assert abs(own[0][0] - own[1][0]) <= 1
    # File by file: the sorted shards dealt out by index, none read twice, none left out.
    every = sorted(str(p) for p in (single[2] / "Split-train").iterdir())
    files = [_shard_files(log) for _, log in results]
    assert files == [every[index::WORKERS] for index in range(WORKERS)]
    assert sorted(files[0] + files[1]) == every


def test_the_chief_alone_writes_one_model(two_workers):
    _, serving, folder = two_workers
    assert (serving / "saved_model.pb").exists()
    assert sorted(p.name for p in (folder / "Trainer" / "model").iterdir()) == ["1"]
    for index in range(WORKERS):
        # The other worker's scratch copy of the model is gone. (AutoGraph's generated
        # modules stay: its atexit hook removes them, and the workers leave by os._exit.)
        left = [
            p for p in (folder / f"tmp-{index}").iterdir()
            if not p.name.startswith("__autograph_generated_file")
        ]  # fmt: skip
        assert left == []


def test_the_model_scores_the_eval_split_as_the_single_process_one(two_workers, single):
    summary, _, examples = single
    _, serving, _ = two_workers
    rows = read_split(examples / "Split-eval")
    serve = tf.saved_model.load(str(serving)).signatures["serving_default"]
    served = serve(examples=tf.constant([r.SerializeToString() for r in rows]))
    classes = served["classes"].numpy()
    predicted = classes[np.arange(len(rows)), np.argmax(served["scores"].numpy(), axis=1)]
    labels = [r.features.feature["species"].bytes_list.value[0] for r in rows]
    accuracy = float(np.mean([p == a for p, a in zip(predicted, labels, strict=True)]))
    (low, high), _ = summary.intervals["sparse_categorical_accuracy"]
    assert low <= accuracy <= high, (accuracy, summary.metrics["sparse_categorical_accuracy"])


# Six epochs: the chief is killed after the first one's backup, the restart does the rest
# (a two-worker step costs about 55 ms here: benchmarks/trainer_workers.py).
KILL_STEPS, KILL_EPOCH_STEPS = 300, 50


def test_a_killed_chief_fails_the_other_worker_and_a_restart_resumes(single, tmp_path):
    """The chief killed after its first backup: the other worker ends, failing, without a
    stall (MultiWorkerMirroredStrategy aborts the collective; no hang). Both
    started again, as the operator's OnFailure restarts them, resume from the backup they
    share and finish one model."""
    _, fn_args, _ = single
    custom_config = copy.deepcopy(fn_args["custom_config"])
    custom_config["training"]["epoch_steps"] = KILL_EPOCH_STEPS
    outputs = {
        "serving_model_dir": str(tmp_path / "Trainer" / "model" / "1" / "Format-Serving"),
        "model_run_dir": str(tmp_path / "Trainer" / "model_run" / "1"),
    }
    arguments = tmp_path / "fn_args.json"
    arguments.write_text(
        json.dumps(
            {**fn_args, **outputs, "train_steps": KILL_STEPS, "custom_config": custom_config}
        )
    )
    running = _Running(_start_workers(arguments, tmp_path))
    chief, other = running.processes
    try:
        running.wait(until=lambda: list(tmp_path.glob("Trainer/backup/*/chief/checkpoint")))
        assert chief.poll() is None, "the chief ended before its first backup"
        chief.kill()
        # The other worker ends, failing, without a stall: its collective was aborted.
        running.wait()
    finally:
        running.kill()
    _, (_, log) = running.results()
    assert other.returncode not in (0, None)
    assert "Collective ops is aborted" in log, log[-3000:]
    restarted = _Running(_start_workers(arguments, tmp_path))
    try:
        restarted.wait()
    finally:
        restarted.kill()
    for code, log in restarted.results():
        assert code == 0, log[-3000:]
    report = json.loads((Path(outputs["model_run_dir"]) / "resume.json").read_text())
    assert 0 < report["resumed_steps"] < KILL_STEPS
    assert (Path(outputs["serving_model_dir"]) / "saved_model.pb").exists()


def test_without_eval_steps_each_validation_reads_the_whole_eval_split(single, tmp_path):
    """A TFX Trainer given no eval_args' num_steps (fn_args.eval_steps None), as a user's
    own pipeline may: one process validates on one pass over the eval split each epoch."""
    _, fn_args, _ = single
    custom_config = copy.deepcopy(fn_args["custom_config"])
    custom_config["training"]["epoch_steps"] = STEPS // 3  # three validations
    arguments = tmp_path / "fn_args.json"
    arguments.write_text(
        json.dumps(
            {
                **fn_args,
                "eval_steps": None,
                "custom_config": custom_config,
                "serving_model_dir": str(tmp_path / "serving"),
                "model_run_dir": str(tmp_path / "model_run"),
            }
        )
    )
    ran = subprocess.run(
        [sys.executable, "-c", _WORKER, str(arguments)],
        capture_output=True,
        text=True,
        timeout=STALL_S,
        check=False,
    )
    log = ran.stdout + ran.stderr
    assert ran.returncode == 0, log[-3000:]
    planned = re.search(r"the whole eval split, (\d+) examples in (\d+) steps of (\d+)\.", log)
    assert planned, log[-3000:]
    records, steps, batch = map(int, planned.groups())
    assert records == len(read_split(Path(fn_args["eval_files"][0]).parent))
    assert steps == -(-records // batch) > 1
    assert log.count(" - val_loss: ") == 3, log[-3000:]
    assert (tmp_path / "serving" / "saved_model.pb").exists()
