"""The component image, built by `make image`'s script, and podman's Docker API serving it.

A test that runs something in the image takes the ``component_image`` and
``docker_api`` fixtures (conftest.py). The image is built from the
repository's Dockerfile, once per test session: a second test worker waits for
the first worker's build and then finds the image built from the same inputs
(build_image.py's digest), with nothing to build.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "docker"))
from build_image import default_tag  # noqa: E402
from podman_setup import ContainerSetupError, check_podman, podman_environment  # noqa: E402

_BUILD_LOCK = REPO_ROOT / "build" / "containers" / "build.lock"
_API_WAIT_S = 60


def build_component_image(target: str = "cpu") -> str:
    """Builds TARGET as `make image` does; returns its tag. Fails in one line if it cannot."""
    _BUILD_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(_BUILD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = subprocess.run(
            [sys.executable, str(REPO_ROOT / "docker" / "build_image.py"), "--target", target],
            capture_output=True,
            text=True,
        )
    print(built.stdout)
    if built.returncode != 0:
        raise ContainerSetupError(built.stderr.strip() or built.stdout.strip()[-500:])
    return default_tag(target)


def podman(*args: str) -> subprocess.CompletedProcess:
    """Runs ``podman ARGS`` with the project's settings; returns the finished process."""
    return subprocess.run(
        ["podman", *args], env=podman_environment(), capture_output=True, text=True, timeout=600
    )


class DockerApi:
    """``podman system service`` on a socket of its own: the Docker API kfp.local talks to."""

    def __init__(self, folder: Path) -> None:
        check_podman()
        self.socket = folder / "podman.sock"
        self.url = f"unix://{self.socket}"
        self._process = subprocess.Popen(
            ["podman", "system", "service", "--time=0", self.url],
            env=podman_environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._wait_until_it_answers()

    def _wait_until_it_answers(self) -> None:
        import docker

        deadline = time.monotonic() + _API_WAIT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ContainerSetupError(
                    f"podman system service exited {self._process.returncode}: "
                    f"{self._process.stderr.read().decode().strip()[-300:]}"
                )
            if self.socket.exists():
                try:
                    client = docker.DockerClient(base_url=self.url)
                    client.ping()
                    client.close()
                    return
                except docker.errors.DockerException:
                    pass
            time.sleep(0.2)
        self.stop()
        raise ContainerSetupError(
            f"podman's Docker API at {self.url} did not answer in {_API_WAIT_S} s"
        )

    def stop(self) -> None:
        """Stops the service by its process id."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def chown_for_the_image(folder: Path) -> None:
    """Gives FOLDER to the image's user (UID 1000, group 0), as a pod's fsGroup would."""
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 1000, 0)
