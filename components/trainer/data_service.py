"""The Trainer's input pipeline on tf.data service workers, TensorFlow's own disaggregated tf.data.

When a GPU node's own CPUs cannot read, parse and decode fast enough, the
dataset ``make_dataset`` builds runs on CPU workers elsewhere: a dispatcher
hands out the work, workers (as many as the input needs) run the pipeline,
and the trainer only receives finished batches and prefetches them onto its
device (``tf.data.experimental.service.distribute``). Start the servers with
``python -m tfrecord_pipelines.cli.data_service dispatcher|worker``; on Kubernetes,
``k8s/components/data-service``.

Sharding: ``dynamic`` (the default) hands out one shard file at a time to
whichever worker asks, so workers can come and go and fast workers do more.
Each example is then visited at most once per epoch, and that is all TF 2.16
keeps: a worker that dies loses what it had not served, must come back at
its address or the trainer waits for it, and after it does the job may end
early (tests/test_data_service.py measures how much is lost). ``off`` makes
every worker read everything (one epoch per worker). Evaluation, which must
see every example exactly once in a fixed order, stays on the trainer.
"""

from __future__ import annotations

import dataclasses
import functools
import time

SHARDING_POLICIES = ("dynamic", "off", "file", "data", "file_or_data", "hint")
COMPRESSIONS = ("none", "auto")
DEFAULT_PORT = 5050
# Shards a worker reads at once under the service. Locally make_dataset opens
# up to 64; a worker holding many shards would take them from the other
# workers and lose them all if it died.
WORKER_READS = 4
# How long to wait for the dispatcher to answer before giving up.
CONNECT_TIMEOUT_S = 10.0
# How long to wait for a first worker to register with a dispatcher that has none.
WORKER_WAIT_S = 120.0
_GRPC = "grpc://"
# Ops that call back into the Python process that built the dataset: a
# worker runs the serialized graph in its own process and cannot run them.
_PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


class DataServiceError(RuntimeError):
    """The tf.data service cannot serve this trainer (unreachable, no worker)."""


@dataclasses.dataclass(frozen=True)
class DataService:
    """Where the tf.data service is and how it splits the work.

    Attributes:
      address: the dispatcher, ``HOST:PORT`` or ``grpc://HOST:PORT`` (on
        Kubernetes its Service, e.g. ``tfdata-dispatcher.NAMESPACE:5050``).
      job_name: trainers giving the same name share one job: the epoch's
        shards are split among them (e.g. the workers of a multi-worker
        strategy). None: a job of its own.
      sharding: ``dynamic`` (default: one shard file at a time to whichever
        worker asks; at most once per example), ``off`` (every worker reads
        all the data), or a static policy (``file``, ``data``,
        ``file_or_data``, ``hint``) that needs the workers listed in the
        dispatcher's configuration.
      compression: of the batches on their way to the trainer: ``none``
        (default) or ``auto`` (tf.data's choice, Snappy). Compressing costs
        CPU on both ends: on a wide table it halved the examples/s one
        worker delivered and doubled the trainer's CPU per example
        (benchmarks/data_service.py); use ``auto`` only where the network,
        not the CPU, is what the trainer waits for.
    """

    address: str
    job_name: str | None = None
    sharding: str = "dynamic"
    compression: str = "none"

    def __post_init__(self):
        host_port = self.address.removeprefix(_GRPC)
        host, sep, port = host_port.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"tf.data service address {self.address!r} must be HOST:PORT or "
                f"grpc://HOST:PORT, e.g. tfdata-dispatcher:{DEFAULT_PORT}."
            )
        object.__setattr__(self, "address", host_port)
        if self.sharding not in SHARDING_POLICIES:
            raise ValueError(
                f"tf.data service sharding must be one of {', '.join(SHARDING_POLICIES)}, "
                f"got {self.sharding!r}."
            )
        if self.compression not in COMPRESSIONS:
            raise ValueError(
                f"tf.data service compression must be none or auto, got {self.compression!r}."
            )
        if self.job_name is not None and not self.job_name:
            raise ValueError("tf.data service job_name must not be empty; None: a job of its own.")

    @property
    def target(self) -> str:
        """The dispatcher as tf.data takes it: ``grpc://HOST:PORT``."""
        return _GRPC + self.address


@functools.cache
def _workers_response_class():
    """GetWorkersResponse of tensorflow/core/data/service/dispatcher.proto (not in the wheel)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="tfrecord_pipelines/data_service_workers.proto",
        package="tfrecord_pipelines.data_service",
        syntax="proto3",
    )
    info = proto.message_type.add(name="WorkerInfo")
    info.field.add(name="address", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    response = proto.message_type.add(name="GetWorkersResponse")
    response.field.add(
        name="workers",
        number=1,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".tfrecord_pipelines.data_service.WorkerInfo",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tfrecord_pipelines.data_service.GetWorkersResponse")
    )


def registered_workers(service: DataService, timeout_s: float = CONNECT_TIMEOUT_S) -> list[str]:
    """The addresses of the workers registered with the dispatcher now.

    Asks the dispatcher's own ``GetWorkers`` RPC.

    Raises:
      DataServiceError: if the dispatcher does not answer within timeout_s.
    """
    import grpc

    with grpc.insecure_channel(service.address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout_s)
            get_workers = channel.unary_unary(
                "/tensorflow.data.DispatcherService/GetWorkers",
                request_serializer=lambda _: b"",  # GetWorkersRequest has no field
                response_deserializer=_workers_response_class().FromString,
            )
            response = get_workers(None, timeout=timeout_s)
        except (grpc.FutureTimeoutError, grpc.RpcError) as e:
            detail = e.details() if isinstance(e, grpc.RpcError) else "no connection"
            raise DataServiceError(
                f"The tf.data service dispatcher at {service.address} did not answer within "
                f"{timeout_s:g} s ({detail}): is it running, and is the address its Service's?"
            ) from None
    return [worker.address for worker in response.workers]


def wait_for_workers(service: DataService, wait_s: float = WORKER_WAIT_S) -> list[str]:
    """Returns the registered workers, waiting up to wait_s for a first one.

    Raises:
      DataServiceError: if the dispatcher does not answer, or no worker
        registers within wait_s.
    """
    deadline = time.monotonic() + wait_s
    while not (workers := registered_workers(service)):
        if time.monotonic() > deadline:
            raise DataServiceError(
                f"No tf.data service worker registered with the dispatcher at "
                f"{service.address}{f' within {wait_s:g} s' if wait_s else ''}: start workers with "
                "`python -m tfrecord_pipelines.cli.data_service worker "
                f"--dispatcher {service.address}`."
            )
        time.sleep(1.0)
    return workers


def python_ops(dataset) -> list[str]:
    """The ops of a tf.data.Dataset's graph that run Python (``tf.py_function`` and kin)."""
    import tensorflow as tf

    from tfrecord_pipelines.components.private_api.tf_private import serialized_graph

    graph = tf.compat.v1.GraphDef.FromString(
        serialized_graph(dataset, tf.data.experimental.ExternalStatePolicy.WARN)
    )
    nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
    return sorted({node.op for node in nodes if node.op in _PYTHON_OPS})


def distribute(dataset, service: DataService):
    """Runs a tf.data.Dataset on the service's workers; returns the trainer's end of it.

    Raises:
      ValueError: if the dataset runs Python, which a worker cannot.
    """
    found = python_ops(dataset)
    if found:
        raise ValueError(
            f"The input pipeline calls Python ({', '.join(found)}, e.g. tf.py_function), "
            "which tf.data service workers cannot run: write it in TensorFlow ops or read "
            "without data_service."
        )
    import tensorflow as tf

    policy = getattr(tf.data.experimental.service.ShardingPolicy, service.sharding.upper())
    return dataset.apply(
        tf.data.experimental.service.distribute(
            processing_mode=policy,
            service=service.target,
            job_name=service.job_name,
            compression=None if service.compression == "none" else "AUTO",
        )
    )
