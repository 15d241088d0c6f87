"""A conversion's destination: complete or absent, never mixed with an earlier one.

``convert`` writes its shards into a sibling working folder and moves it
into place only when the conversion is complete, so a destination never
holds shards of two conversions (a reader would read both) and a failed
conversion (a full disk, bad input) leaves no shard or piece behind. The
quarantine is written in place, so that a conversion that fails on too much
bad input still shows which rows were bad; a destination holding only that
is not in use.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

from tfrecord_pipelines.components.storage import filesystem


class DestinationInUse(ValueError):
    """The destination already holds files and replacing them was not asked for."""


def _in_use(dest: str, in_place: str) -> bool:
    return filesystem.exists(dest) and bool(set(filesystem.listdir(dest)) - {in_place})


@contextlib.contextmanager
def fresh_destination(dest: str, *, overwrite: bool, in_place: str) -> Iterator[str]:
    """Yields the folder to write shards into; on success, it becomes ``dest``.

    Args:
      dest: the destination folder.
      overwrite: replace what ``dest`` holds.
      in_place: a sub-folder of ``dest`` written in place (the quarantine):
        emptied now, moved into the new ``dest`` on success, left on failure.

    Locally the shards go to ``.<name>.converting-<pid>`` beside ``dest``,
    renamed into place at the end (an earlier ``dest`` is removed only then).
    Object stores have no folder rename: there ``dest`` is emptied first and
    written in place.

    Raises:
      DestinationInUse: if ``dest`` holds files and ``overwrite`` is False.
    """
    if _in_use(dest, in_place) and not overwrite:
        raise DestinationInUse(
            f"Destination {dest} already holds files (an earlier conversion?); "
            "pass --overwrite to replace them, or choose an empty folder."
        )
    if filesystem.is_remote(dest):
        if filesystem.exists(dest):
            filesystem.remove_tree(dest)
        yield dest
        return
    dest = os.path.abspath(dest)
    shutil.rmtree(os.path.join(dest, in_place), ignore_errors=True)
    parent, name = os.path.split(dest)
    working = os.path.join(parent, f".{name}.converting-{os.getpid()}")
    shutil.rmtree(working, ignore_errors=True)
    os.makedirs(working)
    try:
        yield working
    except BaseException:
        shutil.rmtree(working, ignore_errors=True)
        raise
    if os.path.exists(os.path.join(dest, in_place)):
        os.rename(os.path.join(dest, in_place), os.path.join(working, in_place))
    replaced = os.path.join(parent, f".{name}.replaced-{os.getpid()}")
    if os.path.exists(dest):
        os.rename(dest, replaced)
    os.rename(working, dest)
    shutil.rmtree(replaced, ignore_errors=True)
