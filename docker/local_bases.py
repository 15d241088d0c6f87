"""Local equivalents of docker/Dockerfile's base images, for a machine that cannot pull them.

- python: Debian 12 (debootstrap, minbase) with Debian's python3.11 and its
  headers, in place of python:3.11-slim-bookworm. Both are the same Debian
  release with a CPython 3.11; the official image builds its own CPython
  under /usr/local, this one links Debian's there under the same names.
- uv: the uv binary of the Makefile's pinned PyPI wheel (.tools/bin/uv) at
  /uv, in place of ghcr.io/astral-sh/uv, which holds that binary at /uv.

The Debian mirror is the one this machine's apt already uses, read from its
sources, so nothing here names a host.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from podman_setup import REPO_ROOT, ContainerSetupError

LOCAL_PYTHON = "localhost/tfrecord-pipelines-base/python:3.11-bookworm"
LOCAL_UV = "localhost/tfrecord-pipelines-base/uv"
UV_BINARY = REPO_ROOT / ".tools" / "bin" / "uv"
_SUITE = "bookworm"
_PACKAGES = ("python3.11", "python3.11-dev", "ca-certificates")
_DEB822 = Path("/etc/apt/sources.list.d/debian.sources")
_ONE_LINE = Path("/etc/apt/sources.list")
_CLEAN = (
    "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb "
    "/var/cache/apt/*.bin || true"
)
_APT_CLEAN = (
    f'DPkg::Post-Invoke {{ "{_CLEAN}"; }};\n'
    f'APT::Update::Post-Invoke {{ "{_CLEAN}"; }};\n'
    'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
)


def debian_mirror() -> str:
    """The URI this machine's apt fetches Debian 12's main archive from."""
    if _DEB822.is_file():
        for stanza in _DEB822.read_text().split("\n\n"):
            fields = dict(
                line.split(":", 1) for line in stanza.splitlines() if re.match(r"^\w[\w-]*:", line)
            )
            if _SUITE in fields.get("Suites", "").split() and "deb" in fields.get("Types", ""):
                return fields["URIs"].split()[0]
    if _ONE_LINE.is_file():
        for line in _ONE_LINE.read_text().splitlines():
            match = re.match(rf"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+{_SUITE}\s", line)
            if match:
                return match.group(1)
    raise ContainerSetupError(
        f"no apt source for Debian {_SUITE} in {_DEB822} or {_ONE_LINE}: "
        "debootstrap needs a Debian mirror"
    )


def _podman(*args: str, env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], env=env, check=True, **kwargs)


def build_python_base(env: dict[str, str], work: Path) -> str:
    """Debootstraps Debian 12 with python3.11 and imports it as LOCAL_PYTHON; returns the tag."""
    root = work / "python-root"
    shutil.rmtree(root, ignore_errors=True)
    mirror = debian_mirror()
    print(f"  debootstrap {_SUITE} (minbase, {', '.join(_PACKAGES)}) into {root}", flush=True)
    subprocess.run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(_PACKAGES)}",
            _SUITE,
            str(root),
            mirror,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # The official image's names: python and python3 on PATH.
    for name in ("python", "python3"):
        (root / "usr" / "local" / "bin" / name).symlink_to("/usr/bin/python3.11")
    # The image sees this machine's Debian sources (updates and security included).
    if _DEB822.is_file():
        shutil.copy(_DEB822, root / "etc" / "apt" / "sources.list.d" / _DEB822.name)
        (root / "etc" / "apt" / "sources.list").unlink(missing_ok=True)
    # As Debian's official images: apt keeps no packages or caches in a layer.
    (root / "etc" / "apt" / "apt.conf.d" / "docker-clean").write_text(_APT_CLEAN)
    for cache in ("var/cache/apt", "var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (root / cache).glob("*"):
            if entry.is_file():
                entry.unlink()
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    _podman(
        "import",
        "--quiet",
        "--change",
        "ENV LANG=C.UTF-8",
        "--change",
        'CMD ["python3"]',
        "-",
        LOCAL_PYTHON,
        env=env,
        stdin=tar.stdout,
        stdout=subprocess.DEVNULL,
    )
    if tar.wait() != 0:
        raise ContainerSetupError(f"tar of {root} failed")
    shutil.rmtree(root)
    return LOCAL_PYTHON


def uv_version() -> str:
    """The version of the Makefile's uv (.tools/bin/uv), e.g. '0.13.9'."""
    if not UV_BINARY.is_file():
        raise ContainerSetupError(f"{UV_BINARY} not found: run `make setup` first")
    printed = subprocess.run([str(UV_BINARY), "--version"], capture_output=True, text=True)
    return printed.stdout.split()[1]


def build_uv_base(env: dict[str, str]) -> str:
    """An image holding .tools/bin/uv at /uv, tagged LOCAL_UV:<version>; returns the tag."""
    tag = f"{LOCAL_UV}:{uv_version()}"
    with tempfile.TemporaryDirectory() as context:
        shutil.copy(UV_BINARY, Path(context) / "uv")
        (Path(context) / "Containerfile").write_text("FROM scratch\nCOPY uv /uv\n")
        _podman("build", "--quiet", "--tag", tag, context, env=env, stdout=subprocess.DEVNULL)
    return tag
