"""A tf.data service server: ``python -m tfrecord_pipelines.cli.data_service dispatcher|worker``.

TensorFlow's own servers (``tf.data.experimental.service.DispatchServer`` and
``WorkerServer``), started with the settings a Trainer fed by
``--data-service`` needs; the Kubernetes packaging is
``k8s/components/data-service``. Arguments are checked before TensorFlow is
imported.

  dispatcher [--port 5050] [--journal DIR] [--worker-timeout-s 30]
      With --journal, the dispatcher writes its state to DIR (fault tolerant
      mode) and a restarted dispatcher resumes its jobs from it. A worker
      silent for --worker-timeout-s is dropped.
  worker --dispatcher HOST:PORT [--port 5051] [--worker-address HOST:PORT]
         [--heartbeat-s 5]
      --worker-address is what trainers connect to (a pod's IP on Kubernetes);
      default: localhost and the bound port.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

DEFAULT_DISPATCHER_PORT = 5050
DEFAULT_WORKER_PORT = 5051
# The dispatcher's Service in k8s/components/data-service, as a Trainer in the
# same namespace reaches it: compile --data-service takes this.
KUBERNETES_DISPATCHER = f"tfdata-dispatcher:{DEFAULT_DISPATCHER_PORT}"
# A worker that has not heartbeaten for this long is dropped and its shards'
# remaining records with it; trainers then go on with the others. TensorFlow's
# own default is long enough to stall training for minutes.
DEFAULT_WORKER_TIMEOUT_S = 30.0
DEFAULT_HEARTBEAT_S = 5.0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (also read by the docs site's CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_pipelines.cli.data_service",
        description="Run a tf.data service dispatcher or worker for the Trainer's input.",
    )
    servers = parser.add_subparsers(dest="server", required=True)
    dispatcher = servers.add_parser("dispatcher", help="hands out the input work to workers")
    dispatcher.add_argument("--port", type=int, default=DEFAULT_DISPATCHER_PORT)
    dispatcher.add_argument(
        "--journal",
        metavar="DIR",
        help="folder for the dispatcher's journal (fault tolerant mode): a restart resumes "
        "its jobs; on Kubernetes a volume",
    )
    dispatcher.add_argument(
        "--worker-timeout-s",
        type=float,
        default=DEFAULT_WORKER_TIMEOUT_S,
        help="drop a worker silent for this long, so trainers go on without it (default: 30)",
    )
    worker = servers.add_parser("worker", help="reads, parses and decodes for trainers")
    worker.add_argument("--dispatcher", required=True, metavar="HOST:PORT")
    worker.add_argument("--port", type=int, default=DEFAULT_WORKER_PORT)
    worker.add_argument(
        "--worker-address",
        metavar="HOST:PORT",
        help="the address trainers reach this worker at (default: localhost:PORT)",
    )
    worker.add_argument(
        "--heartbeat-s",
        type=float,
        default=DEFAULT_HEARTBEAT_S,
        help="how often to tell the dispatcher this worker is alive (default: 5)",
    )
    return parser


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if not 0 <= args.port < 65536:
        parser.error(f"--port {args.port} is not a port (0-65535; 0 picks a free one).")
    for name in ("worker_timeout_s", "heartbeat_s"):
        if getattr(args, name, 1) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be above 0.")
    if args.server == "worker":
        host, sep, port = args.dispatcher.removeprefix("grpc://").rpartition(":")
        if not sep or not host or not port.isdigit():
            parser.error(f"--dispatcher {args.dispatcher!r} must be HOST:PORT.")
    if args.server == "dispatcher" and args.journal:
        parent = os.path.dirname(os.path.abspath(args.journal))
        if "://" not in args.journal and not os.path.isdir(parent):
            parser.error(f"--journal {args.journal}: folder {parent} does not exist.")


def main(argv: Sequence[str] | None = None) -> None:
    """Parses argv, starts the server and serves until the process is stopped."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(args, parser)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf

    from tfrecord_pipelines.components.private_api.tf_private import worker_address

    service = tf.data.experimental.service
    if args.server == "dispatcher":
        server = service.DispatchServer(
            service.DispatcherConfig(
                port=args.port,
                work_dir=args.journal,
                fault_tolerant_mode=bool(args.journal),
                worker_timeout_ms=int(args.worker_timeout_s * 1000),
            )
        )
        journal = f", journal in {args.journal}" if args.journal else ", no journal"
        print(f"tf.data service dispatcher serving at {server.target}{journal}", flush=True)
    else:
        dispatcher = args.dispatcher.removeprefix("grpc://")
        server = service.WorkerServer(
            service.WorkerConfig(
                dispatcher_address=dispatcher,
                worker_address=args.worker_address,
                port=args.port,
                heartbeat_interval_ms=int(args.heartbeat_s * 1000),
            )
        )
        print(
            f"tf.data service worker serving at port {worker_address(server).rpartition(':')[2]}, "
            f"dispatcher {dispatcher}",
            flush=True,
        )
    server.join()


if __name__ == "__main__":
    main(sys.argv[1:])
