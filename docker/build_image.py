"""Builds the component image from docker/Dockerfile with podman (`make image`).

    python3 docker/build_image.py [--target cpu|gpu] [--tag TAG]

The base images are the Dockerfile's defaults when podman has them or can pull
them; otherwise local equivalents are built once (docker/local_bases.py) and
passed as build arguments. The machine's CA bundle ($SSL_CERT_FILE, when set)
is handed to the build as the secret `ca-bundle`, for a TLS-inspecting proxy;
it is never written into the image. Prints the image's size and the build's
wall and CPU time, and how many steps came from the cache.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from local_bases import LOCAL_PYTHON, LOCAL_UV, build_python_base, build_uv_base, uv_version
from podman_setup import REPO_ROOT, ContainerSetupError, check_podman, podman_environment

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
LOG_DIR = REPO_ROOT / "build" / "containers"
# The compiled pipeline's default images (pipelines/kubeflow/runner.py): an
# image tagged so runs a compiled spec's tasks locally without a registry.
_RUNNER = REPO_ROOT / "pipelines" / "kubeflow" / "runner.py"
_TARGET_TAG = {"cpu": "DEFAULT_IMAGE", "gpu": "DEFAULT_TRAINER_IMAGE"}
_PULL_TIMEOUT_S = 120
# podman build's step lines, e.g. "[4/8] STEP 4/8: COPY ..." in a multi-stage build.
_STEP = re.compile(r"^(\[\d+/\d+\] )?STEP \d+")


def default_tag(target: str) -> str:
    """The image name the compiled pipeline uses by default for TARGET."""
    for node in ast.parse(_RUNNER.read_text()).body:
        if isinstance(node, ast.Assign) and node.targets[0].id == _TARGET_TAG[target]:
            return node.value.value
    raise ContainerSetupError(f"{_RUNNER} defines no {_TARGET_TAG[target]}")


def base_image_defaults() -> dict[str, str]:
    """The Dockerfile's base image build arguments and their defaults."""
    return dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE))


def _exists(image: str, env: dict[str, str]) -> bool:
    return subprocess.run(["podman", "image", "exists", image], env=env).returncode == 0


def _pull(image: str, env: dict[str, str]) -> str | None:
    """Pulls IMAGE; returns None on success, else the reason it failed."""
    try:
        pulled = subprocess.run(
            ["podman", "pull", "--quiet", image],
            env=env,
            capture_output=True,
            text=True,
            timeout=_PULL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"no answer in {_PULL_TIMEOUT_S} s"
    if pulled.returncode == 0:
        return None
    return (pulled.stderr.strip().splitlines() or ["unknown error"])[-1]


def resolve_bases(env: dict[str, str]) -> dict[str, str]:
    """Each base build argument's image: the public one if it can be had, else a local one.

    A local base is built once and then reused; `podman rmi` it to build it anew
    (e.g. for Debian's security updates).
    """
    local = {"PYTHON_IMAGE": LOCAL_PYTHON, "UV_IMAGE": f"{LOCAL_UV}:{uv_version()}"}
    builders = {
        "PYTHON_IMAGE": lambda: build_python_base(env, LOG_DIR),
        "UV_IMAGE": lambda: build_uv_base(env),
    }
    chosen = {}
    for argument, public in base_image_defaults().items():
        if _exists(public, env) or (reason := _pull(public, env)) is None:
            chosen[argument] = public
            continue
        print(f"{public} cannot be pulled ({reason})", flush=True)
        if _exists(local[argument], env):
            print(f"  using {local[argument]}, built earlier", flush=True)
            chosen[argument] = local[argument]
            continue
        started = time.monotonic()
        chosen[argument] = builders[argument]()
        print(f"  built {chosen[argument]} in {time.monotonic() - started:.0f} s", flush=True)
    return chosen


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(target: str, tag: str, bases: dict[str, str], env: dict[str, str]) -> None:
    """Runs podman build for TARGET, printing its steps; the full log goes to build/containers/."""
    command = ["podman", "build", "--file", str(DOCKERFILE), "--target", target, "--tag", tag]
    for argument, image in bases.items():
        command += ["--build-arg", f"{argument}={image}"]
    ca_bundle = os.environ.get("SSL_CERT_FILE")
    if ca_bundle and Path(ca_bundle).is_file():
        command += ["--secret", f"id=ca-bundle,src={ca_bundle}"]
    log_path = LOG_DIR / f"image-{target}.log"
    print(f"Building {tag} (target {target}); log: {log_path}", flush=True)
    started, cpu_before = time.monotonic(), _cpu_seconds()
    steps = cached = 0
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*command, str(REPO_ROOT)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for line in process.stdout:
            log.write(line)
            if _STEP.match(line):
                steps += 1
                print(f"  [{time.monotonic() - started:5.0f} s] {line.rstrip()[:110]}", flush=True)
            elif line.startswith("--> Using cache"):
                cached += 1
    if process.wait() != 0:
        tail = log_path.read_text().strip().splitlines()[-1:]
        raise ContainerSetupError(
            f"podman build of {target} failed ({tail[0] if tail else 'no output'}); "
            f"full log: {log_path}"
        )
    wall, cpu = time.monotonic() - started, _cpu_seconds() - cpu_before
    size = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Size}}", tag],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    summary = (
        f"Built {tag}: {int(size) / 1e9:.2f} GB, {wall:.0f} s wall, {cpu:.0f} s CPU "
        f"(user+sys of podman and its children), {cached} of {steps} steps from the cache"
    )
    with open(log_path, "a") as log:
        log.write(summary + "\n")
    print(summary)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=tuple(_TARGET_TAG), default="cpu")
    parser.add_argument("--tag", help="image name (default: the compiled pipeline's default)")
    args = parser.parse_args(argv)
    try:
        check_podman(build=True)
        env = podman_environment()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        build(args.target, args.tag or default_tag(args.target), resolve_bases(env), env)
    except ContainerSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"error: {' '.join(map(str, e.cmd[:3]))} ... exited {e.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
