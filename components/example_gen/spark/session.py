"""The one place a SparkSession is made: from the user's master and ``--spark-conf``."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
from collections.abc import Iterator, Mapping

DEFAULT_MASTER = "local[*]"
JVM_PACKAGE = "openjdk-17-jre-headless"
# Spark's console bar, not its web UI, is the progress a command line shows.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.executorEnv.TF_CPP_MIN_LOG_LEVEL": "2",
    "spark.executorEnv.TF_USE_LEGACY_KERAS": "1",
    "spark.python.daemon.module": "tfrecord_pipelines.components.example_gen.spark.worker_daemon",
}
_MASTER_PREFIXES = ("local", "spark://", "k8s://", "yarn", "mesos://")
KUBERNETES_IMAGE_CONF = "spark.kubernetes.container.image"
_POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def check_master(master: str) -> str:
    """Returns ``master`` if Spark accepts its form.

    Raises:
      ValueError: naming the forms Spark accepts.
    """
    if not master.startswith(_MASTER_PREFIXES):
        raise ValueError(
            f"Spark master {master!r} is not one Spark knows: give local[N], "
            "local-cluster[N,CORES,MB], spark://HOST:PORT, k8s://https://HOST:PORT or yarn."
        )
    return master


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """Parses ``key=value`` pairs of Spark settings.

    Raises:
      ValueError: on a pair without ``=`` or a key that is not a Spark setting.
    """
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().startswith("spark."):
            raise ValueError(
                f"--spark-conf {pair!r}: give key=value with a Spark setting, "
                "e.g. spark.executor.memory=4g."
            )
        conf[key.strip()] = value.strip()
    return conf


def check_java() -> str:
    """Returns the java command Spark will start.

    Raises:
      RuntimeError: in one line naming the package to install, if there is none.
    """
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise RuntimeError(
            "The Spark engine needs a Java runtime and found none: install it with "
            f"`apt-get install {JVM_PACKAGE}` (or `make jvm`), or set JAVA_HOME."
        )
    return java


def kubernetes_driver_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Settings for a driver that runs in a pod (client mode), from the pod itself.

    Executors reach the driver at its pod IP, run in its namespace and are
    owned by its pod (deleted with it). ``conf`` overrides each.

    Raises:
      ValueError: if no executor image is set.
    """
    if KUBERNETES_IMAGE_CONF not in conf:
        raise ValueError(
            f"A k8s:// master needs the executors' image: --spark-conf {KUBERNETES_IMAGE_CONF}="
            "IMAGE (compile sets it to --image)."
        )
    defaults = {"spark.driver.bindAddress": "0.0.0.0"}
    if os.path.exists(_POD_NAMESPACE_FILE):
        with open(_POD_NAMESPACE_FILE) as f:
            defaults["spark.kubernetes.namespace"] = f.read().strip()
        defaults["spark.kubernetes.driver.pod.name"] = socket.gethostname()
        defaults["spark.driver.host"] = socket.gethostbyname(socket.gethostname())
    return {**defaults, **conf}


@contextlib.contextmanager
def spark_session(master: str, conf: Mapping[str, str] | None = None) -> Iterator:
    """Yields a SparkSession on ``master``; stops it after, unless it was running already.

    A session already running in this process (a notebook's, a test's) is
    used as it is when its master is ``master``. Executors run this Python
    (``sys.executable``) unless PYSPARK_PYTHON says otherwise, so they import
    the same packages as the driver.

    Raises:
      RuntimeError: if there is no Java runtime.
      ValueError: if a session on another master is running in this process.
    """
    check_java()
    check_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()
    if running is not None:
        if running.sparkContext.master != master:
            raise ValueError(
                f"A Spark session on {running.sparkContext.master} is running in this "
                f"process; stop it, or convert on that master, not {master}."
            )
        yield running
        return
    conf = dict(conf or {})
    if master.startswith("k8s://"):
        conf = kubernetes_driver_conf(conf)
    builder = SparkSession.builder.master(master).appName("ShardedExampleGen")
    for key, value in {**_DEFAULT_CONF, **conf}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
