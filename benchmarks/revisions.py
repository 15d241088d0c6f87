"""Another git revision of the project, importable beside this tree, for before/after runs.

The project is installed editable: its finder maps ``tfrecord_pipelines`` to
this tree's folders whatever the working directory, so a worktree of another
revision would run this tree's code. ``checkout`` lays the revision's
``pipelines/`` out as ``tfrecord_pipelines`` (with ``components/`` inside it,
as the wheel has them) in a folder that ``PYTHONPATH`` puts first; the
interpreter's path finder comes before the editable finder.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A worktree of ``ref`` and the environment that imports its code; removed after."""
    with tempfile.TemporaryDirectory() as scratch:
        worktree = Path(scratch) / "worktree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), ref],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        try:
            package = Path(scratch) / "path" / "tfrecord_pipelines"
            package.mkdir(parents=True)
            for entry in (worktree / "pipelines").iterdir():
                (package / entry.name).symlink_to(entry)
            (package / "components").symlink_to(worktree / "components")
            path = os.pathsep.join(
                filter(None, [str(package.parent), os.environ.get("PYTHONPATH")])
            )
            yield worktree, {**os.environ, "PYTHONPATH": path}
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=REPO_ROOT,
                capture_output=True,
            )


def trees(stack: contextlib.ExitStack, compare: str | None) -> dict[str, tuple[Path, dict]]:
    """The trees a before/after benchmark runs, by name: revision ``compare`` (checked out
    until ``stack`` closes) when given, then this tree as ``now``; each (folder, environment)."""
    found = {}
    if compare:
        found[compare] = stack.enter_context(checkout(compare))
    found["now"] = (REPO_ROOT, dict(os.environ))
    return found
