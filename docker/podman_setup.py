"""Podman on this machine: checks that it can run, and the settings it runs with.

`make image` and the container tests run podman (rootful) through these, so
that both use one configuration. Two settings are needed on a sandboxed Debian
12 and harmless elsewhere, given through a CONTAINERS_CONF file so that
/etc/containers is not touched:

- the runtime is runc: crun refuses a kernel with hybrid cgroups;
- containers' ulimits stay within this process's hard limits (and nproc
  within the kernel's pid_max): podman raises them to its defaults
  otherwise, which needs CAP_SYS_RESOURCE.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CONTAINERS_CONF = REPO_ROOT / "build" / "containers" / "containers.conf"
# What `make containers` installs (Debian 12's packages).
INSTALL_HINT = "run `make containers` (apt-get install podman runc debootstrap catatonit)"
# Podman's own default nofile limit; more only if the hard limit allows.
_NOFILE = 1048576
_NPROC = 65536
_PID_MAX = Path("/proc/sys/kernel/pid_max")


class ContainerSetupError(RuntimeError):
    """Containers cannot be built or run here; the message names the missing piece."""


def _limit(kind: int, wanted: int) -> int:
    hard = resource.getrlimit(kind)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)


def write_containers_conf(path: Path = CONTAINERS_CONF) -> Path:
    """Writes the containers.conf that podman runs with here; returns its path."""
    nofile = _limit(resource.RLIMIT_NOFILE, _NOFILE)
    # runc fails to set an nproc limit above the kernel's pid_max (seen at 32768).
    nproc = _limit(resource.RLIMIT_NPROC, min(_NPROC, int(_PID_MAX.read_text())))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# Written by docker/podman_setup.py; see its docstring.\n"
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
    )
    return path


@functools.cache
def _containers_conf() -> Path:
    """The settings file, written once per process (every podman call uses it)."""
    return write_containers_conf()


def podman_environment() -> dict[str, str]:
    """This process's environment with CONTAINERS_CONF pointing at our settings."""
    return {**os.environ, "CONTAINERS_CONF": str(_containers_conf())}


def check_podman(*, build: bool = False) -> None:
    """Raises ContainerSetupError, in one line, when podman cannot run containers here.

    Args:
      build: also require what `make image` needs to make a local base image.
    """
    # catatonit: the pause process of a pod (`podman kube play`).
    needed = ["podman", "runc", "catatonit"] + (["debootstrap"] if build else [])
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        raise ContainerSetupError(f"{', '.join(missing)} not found: {INSTALL_HINT}")
    if os.geteuid() != 0:
        raise ContainerSetupError(
            "containers are built and run by rootful podman here: run as root (or with sudo)"
        )
    info = subprocess.run(
        ["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"],
        env=podman_environment(),
        capture_output=True,
        text=True,
    )
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise ContainerSetupError(f"podman cannot run here: {reason}")
