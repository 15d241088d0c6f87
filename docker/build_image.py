"""Builds the component image from docker/Dockerfile with podman (`make image`).

    python3 docker/build_image.py [--target cpu|gpu] [--tag TAG]

The base images are the Dockerfile's defaults when podman has them or can pull
them; otherwise local equivalents are built once (docker/local_bases.py) and
passed as build arguments. The machine's CA bundle ($SSL_CERT_FILE, when set)
is handed to the build as the secret `ca-bundle`, for a TLS-inspecting proxy;
it is never written into the image. Prints the image's size and the build's
wall and CPU time, and how many steps came from the cache. An image built from
the same inputs (the context's files, the Dockerfile, the target and the base
images: ``build_context.inputs_digest``, kept as the image's label) is not built
again.
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

from build_context import inputs_digest
from local_bases import LOCAL_PYTHON, LOCAL_UV, build_python_base, build_uv_base, uv_version
from podman_setup import REPO_ROOT, ContainerSetupError, check_podman, podman_environment

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
LOG_DIR = REPO_ROOT / "build" / "containers"
# The compiled pipeline's default images (pipelines/kubeflow/runner.py): an
# image tagged so runs a compiled spec's tasks locally without a registry.
_RUNNER = REPO_ROOT / "pipelines" / "kubeflow" / "runner.py"
_TARGET_TAG = {"cpu": "DEFAULT_IMAGE", "gpu": "DEFAULT_TRAINER_IMAGE"}
_PULL_TIMEOUT_S = 120
# The image's label naming the digest of what it was built from (build_context): an image
# with the same digest is up to date and not built again. podman's own layer cache would
# come to the same image, but only after hashing the whole environment its COPY --from
# copies (4 GB: about 50 s and 100 CPU-s every time).
INPUTS_LABEL = "org.tfrecord-pipelines.build-inputs"
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


def _inspect(image: str, template: str, env: dict[str, str]) -> str | None:
    """``podman image inspect --format TEMPLATE IMAGE``; None if there is no such image."""
    inspected = subprocess.run(
        ["podman", "image", "inspect", "--format", template, image],
        env=env,
        capture_output=True,
        text=True,
    )
    return inspected.stdout.strip() if inspected.returncode == 0 else None


def build_inputs(target: str, bases: dict[str, str], env: dict[str, str]) -> str:
    """The digest of what building TARGET on these bases reads (``build_context``)."""
    base_ids = {
        argument: _inspect(image, "{{.Id}}", env) or "" for argument, image in bases.items()
    }
    return inputs_digest(REPO_ROOT, DOCKERFILE, target, base_ids)


def up_to_date(tag: str, digest: str, env: dict[str, str]) -> bool:
    """Whether the image TAG was built from inputs with this digest."""
    return _inspect(tag, f'{{{{index .Labels "{INPUTS_LABEL}"}}}}', env) == digest


def build(
    target: str, tag: str, bases: dict[str, str], env: dict[str, str], digest: str = ""
) -> None:
    """Runs podman build for TARGET, printing its steps; the full log goes to build/containers/.
    The image is labelled with ``digest``, its inputs' (``build_inputs``)."""
    command = ["podman", "build", "--file", str(DOCKERFILE), "--target", target, "--tag", tag]
    if digest:
        command += ["--label", f"{INPUTS_LABEL}={digest}"]
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
        tag, bases = args.tag or default_tag(args.target), resolve_bases(env)
        digest = build_inputs(args.target, bases, env)
        if up_to_date(tag, digest, env):
            print(f"{tag} is up to date: built from the same inputs (digest {digest[:12]})")
            return 0
        build(args.target, tag, bases, env, digest)
    except ContainerSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"error: {' '.join(map(str, e.cmd[:3]))} ... exited {e.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
