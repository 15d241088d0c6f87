"""The component image's build context and a digest of everything its build reads.

podman sends the build the repository's files that .dockerignore keeps (Docker's
rules: patterns in order, the last one that matches a path or a folder above it
decides, a ``!`` pattern keeps). ``inputs_digest`` hashes those files with the
Dockerfile, the target and the base images' IDs: an image built from the same
digest is the same build, and need not be built again.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path


def patterns(dockerignore: Path) -> list[tuple[bool, re.Pattern]]:
    """.dockerignore's patterns in order: (keeps, the regex of the path it matches)."""
    found = []
    if not dockerignore.is_file():
        return found
    for line in dockerignore.read_text().splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        keeps = pattern.startswith("!")
        pattern = os.path.normpath(pattern.lstrip("!").lstrip("/"))
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        regex = re.sub(r"\\\[(.*?)\\\]", r"[\1]", regex)
        found.append((keeps, re.compile(regex)))
    return found


def ignored(path: str, rules: Iterable[tuple[bool, re.Pattern]]) -> bool:
    """Whether the rules leave ``path`` (relative, with ``/``) out of the context."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for keeps, regex in rules:
        if any(regex.fullmatch(c) for c in candidates):
            excluded = not keeps
    return excluded


def _may_keep_below(folder: str, kept: list[str]) -> bool:
    """Whether one of the ``!`` patterns ``kept`` could keep something under the excluded
    ``folder``: walking into .venv or output/ would read gigabytes the context leaves out."""
    return any(k == folder or k.startswith(folder + "/") or "*" in k for k in kept)


def context_files(root: Path) -> list[str]:
    """The files of the build context, relative to ``root``, sorted."""
    dockerignore = root / ".dockerignore"
    rules = patterns(dockerignore)
    lines = dockerignore.read_text().splitlines() if dockerignore.is_file() else []
    kept = [line.strip()[1:].strip("/") for line in lines if line.strip().startswith("!")]
    files = []
    for folder, dirs, names in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        prefix = "" if relative == "." else relative + "/"
        dirs[:] = sorted(
            d for d in dirs if not ignored(prefix + d, rules) or _may_keep_below(prefix + d, kept)
        )
        files += [prefix + n for n in names if not ignored(prefix + n, rules)]
    return sorted(files)


def inputs_digest(root: Path, dockerfile: Path, target: str, base_ids: Mapping[str, str]) -> str:
    """A digest of the build's inputs: the Dockerfile, the target, each base build argument
    with its image's ID, .dockerignore and every file of the context, by path and content."""
    digest = hashlib.sha256()

    def add(*fields: str | bytes) -> None:
        for value in fields:
            data = value.encode() if isinstance(value, str) else value
            digest.update(len(data).to_bytes(8, "big") + data)

    add("dockerfile", dockerfile.read_bytes(), "target", target)
    for argument in sorted(base_ids):
        add(argument, base_ids[argument])
    ignore_file = root / ".dockerignore"
    add("dockerignore", ignore_file.read_bytes() if ignore_file.is_file() else b"")
    for name in context_files(root):
        add(name, (root / name).read_bytes())
    return digest.hexdigest()
