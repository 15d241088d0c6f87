"""Wheels for the locked packages that PyPI has only as source with C or C++ in it.

The image's runtime stages have no compiler. docker/Dockerfile's ``wheels`` stage,
which has one, runs this script for the packages its ``COMPILED_PACKAGES`` names:
each one's source distribution is fetched from the URL uv.lock records, checked
against the lock's hash, and built into a wheel by ``uv build``, into OUT. The
dependencies' stage installs every other locked package with ``uv sync
--no-install-package NAME`` for these, and these wheels with ``uv pip install
--no-deps``: the same versions, built from the same bytes, as ``uv sync`` would.

    python3.11 compiled_wheels.py --lock uv.lock --out /wheels pyfarmhash crcmod

Standard library only: it runs on the base image's Python, before any venv.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
from pathlib import Path


class LockError(ValueError):
    """A named package the lock does not give as a source distribution alone."""


def sources(lock_text: str, names: list[str]) -> dict[str, dict]:
    """Each named package's lock entry, ``sdist`` with its ``url`` and ``hash``.

    Raises:
      LockError: a name the lock lacks, or one the lock has a wheel of (uv installs
        that wheel: no compiler is needed, so the name does not belong in the list).
    """
    packages = {p["name"]: p for p in tomllib.loads(lock_text)["package"]}
    found = {}
    for name in names:
        package = packages.get(name)
        if package is None or "sdist" not in package:
            raise LockError(f"{name}: uv.lock has no source distribution of it")
        if package.get("wheels"):
            raise LockError(
                f"{name} {package['version']}: uv.lock has wheels of it; "
                "take it out of COMPILED_PACKAGES"
            )
        found[name] = package
    return found


def fetch(url: str, expected_hash: str, folder: Path) -> Path:
    """Downloads URL into FOLDER; returns the file. Fails unless its digest is the lock's.

    Raises:
      LockError: the downloaded bytes do not have the lock's hash.
    """
    algorithm, _, expected = expected_hash.partition(":")
    path = folder / url.rsplit("/", 1)[-1]
    with urllib.request.urlopen(url) as response:
        data = response.read()
    actual = hashlib.new(algorithm, data).hexdigest()
    if actual != expected:
        raise LockError(f"{url}: {algorithm} {actual}, uv.lock says {expected}")
    path.write_bytes(data)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lock", type=Path, default=Path("uv.lock"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args(argv)
    try:
        packages = sources(args.lock.read_text(), args.packages)
        args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            for name, package in packages.items():
                sdist = fetch(package["sdist"]["url"], package["sdist"]["hash"], Path(scratch))
                subprocess.run(
                    ["uv", "build", "--wheel", "--out-dir", str(args.out), str(sdist)],
                    check=True,
                )
                print(f"built {name} {package['version']} from {sdist.name}", flush=True)
    except (LockError, OSError, subprocess.CalledProcessError) as e:
        print(f"compiled_wheels.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
