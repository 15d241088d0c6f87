"""TensorFlow's private names: tf.data's serialization of a dataset's graph, and the address a
tf.data service worker serves at."""

from __future__ import annotations

LIBRARY = "tensorflow"
VERSION = "2.16.2"
CHECKED = {
    "tensorflow.python.data.ops.dataset_ops.DatasetV2._as_serialized_graph": "a16cde149fe95367",
    "tensorflow.python.data.experimental.service.server_lib.WorkerServer.__init__": (
        "2f5684a43616a6ea"
    ),
}


def serialized_graph(dataset, external_state_policy) -> bytes:
    """A tf.data.Dataset's graph, as a serialized GraphDef (tf.data's own way to write it)."""
    return dataset._as_serialized_graph(external_state_policy=external_state_policy).numpy()


def worker_address(server) -> str:
    """The ``host:port`` a tf.data service ``WorkerServer`` serves at (its port chosen when 0)."""
    return server._address
