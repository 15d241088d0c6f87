"""The project's one file access, for local paths and bucket URIs alike.

Every module reads, writes, lists and removes files through here (TFX's
components' own code goes through TFX's ``fileio``, which ``object_stores``
points at the same fixes). Local paths go through ``os``, without importing
TensorFlow: the command line checks a data folder before anything slow is
imported, and TensorFlow's import alone takes several seconds. URIs
(``gs://``, ``s3://``, ...) go through ``tf.io.gfile``, imported only then,
with what the emulators and the stores need: a glob level by level, no
folder placeholder objects, reads that never seek past the end.

In a bucket every look-up is a request. Resolving what ``--data`` names asks
of the same folders many times (its format, its files, their columns, the
label's values), so ``one_listing`` takes one flat listing of the folder it
names through the store's own client (``object_listing``: a request per
thousand objects) and answers every look-up under it from that; any other
remote look-up inside it is asked of the store once and remembered. Outside
it nothing is remembered, so what a run writes is never answered from an old
listing.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob as _glob
import io
import os
import shutil
from collections.abc import Iterator

from tfrecord_pipelines.components.storage.object_listing import (
    ObjectListing,
    list_folder,
    listed_folder,
)

# While ``one_listing`` is active: (look-up, arguments) → the store's answer, and the
# flat listing of the folder it was given, when the store gave one.
_remembered: dict[tuple, object] | None = None
_listing: ObjectListing | None = None


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI (gs://, s3://, ...) rather than a local path."""
    return "://" in path


def absolute(path: str) -> str:
    """Returns a local path made absolute; a URI unchanged."""
    return path if is_remote(path) else os.path.abspath(path)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile if _remembered is None else _RememberedLookups(tf.io.gfile)


class _RememberedLookups:
    """``tf.io.gfile`` whose look-ups (not reads or writes) are asked once per argument."""

    _LOOKUPS = ("exists", "isdir", "listdir", "stat", "walk")

    def __init__(self, gfile):
        self._gfile = gfile

    def __getattr__(self, name: str):
        function = getattr(self._gfile, name)
        if name not in self._LOOKUPS:
            return function

        def remembered(*args):
            key = (name, *args)
            if key not in _remembered:
                found = function(*args)
                _remembered[key] = list(found) if name == "walk" else found
            found = _remembered[key]
            return list(found) if isinstance(found, list) else found

        return remembered


@contextlib.contextmanager
def one_listing(folder: str | None = None) -> Iterator[None]:
    """Within it, each remote look-up is asked of the store once, and those under
    ``folder`` (a bucket's, up to its first wildcard) are answered from one flat listing
    of it (see the module docstring)."""
    global _remembered, _listing
    outer = _remembered, _listing
    if _remembered is None:
        _remembered = {}
    if _listing is None and folder is not None:
        _listing = _list(folder)
    try:
        yield
    finally:
        _remembered, _listing = outer


def _list(path: str) -> ObjectListing | None:
    """The flat listing for ``path``, or None: not in a bucket, or the store's client could
    not list it (then TensorFlow's file system answers, one look-up at a time)."""
    folder = listed_folder(path)
    if folder is None:
        return None
    try:
        return list_folder(folder)
    except Exception:  # noqa: BLE001 - any failure leaves the look-ups to TensorFlow
        return None


def _listed(path: str) -> ObjectListing | None:
    """The active flat listing if it answers for ``path``."""
    return _listing if _listing is not None and _listing.covers(path) else None


def isdir(path: str) -> bool:
    """Whether ``path`` is a folder (a bucket's root too, which the modular GCS plugin knows
    only with a trailing slash)."""
    if not is_remote(path):
        return os.path.isdir(path)
    if listing := _listed(path):
        return listing.isdir(path)
    # With the slash first: the plugin refuses a bucket's root without it.
    return _gfile().isdir(f"{path.rstrip('/')}/")


def exists(path: str) -> bool:
    """Whether ``path`` exists: a file, or a folder (in a bucket, a prefix that holds objects,
    which TensorFlow's modular GCS plugin answers only to ``isdir``)."""
    if not is_remote(path):
        return os.path.exists(path)
    if listing := _listed(path):
        return listing.exists(path)
    if "/" not in path.partition("://")[2].strip("/"):
        return isdir(path)  # a bucket's root, which the plugin refuses as a file
    return _gfile().exists(path) or isdir(path)


def listdir(path: str) -> list[str]:
    """Returns the names in folder ``path``, sorted, without trailing slashes."""
    if not is_remote(path):
        return sorted(os.listdir(path))
    if listing := _listed(path):
        return listing.listdir(path)
    # With the slash: the plugin lists no bucket root without it.
    return sorted(name.rstrip("/") for name in _gfile().listdir(f"{path.rstrip('/')}/"))


def files_matching(folder: str, pattern: str) -> list[str]:
    """Returns the paths of the files (not folders) in ``folder`` whose names match ``pattern``."""
    return [
        os.path.join(folder, name)
        for name in listdir(folder)
        if fnmatch.fnmatch(name, pattern) and not isdir(os.path.join(folder, name))
    ]


class _GFileReader(io.RawIOBase):
    """A bucket's object as a Python binary file (``tf.io.gfile.GFile`` is not one: pyarrow
    and the csv module need ``closed``, ``readinto`` and the rest of ``io``'s protocol).

    A seek only moves the position; the object is sought when read from. The
    modular GCS plugin crashes on a read after a seek to the end and back (what
    a Parquet reader does first), and never sees that sequence this way.
    """

    def __init__(self, path: str):
        self._path = path
        self._gfile = _gfile().GFile(path, "rb")
        self._position = 0
        self._size = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._gfile.tell() != self._position:
            self._gfile.seek(self._position)
        data = self._gfile.read(len(buffer))
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            if self._size is None:
                self._size = size(self._path)
            offset += self._size
        elif whence == io.SEEK_CUR:
            offset += self._position
        self._position = max(offset, 0)
        return self._position

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        if not self.closed:
            self._gfile.close()
        super().close()


def open_binary(path: str):
    """Opens ``path`` for reading bytes (a buffered ``io`` file, local or in a bucket)."""
    if not is_remote(path):
        return open(path, "rb")
    return io.BufferedReader(_GFileReader(path), buffer_size=1 << 20)


def open_file(path: str, mode: str = "r"):
    """Opens ``path`` as ``tf.io.gfile.GFile`` would, local or in a bucket: text (UTF-8,
    line endings as written) or bytes with ``b`` in ``mode``. Local files through Python,
    URIs through TensorFlow."""
    if is_remote(path):
        return _gfile().GFile(path, mode)
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding="utf-8", newline="")


def open_text(path: str):
    """Opens ``path`` for reading UTF-8 text, with universal newlines."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", newline="")


def glob(pattern: str) -> list[str]:
    """Returns the paths matching a glob pattern, sorted.

    In a bucket, each level with wildcards is matched against its parent's
    listing, one level at a time: TensorFlow's modular GCS plugin matches
    wildcards in the last level only (its glob of ``gs://b/day=*/*.csv`` is
    empty), and there only objects, not folders (``gs://b/day-*``).
    """
    if not is_remote(pattern):
        return sorted(_glob.glob(pattern))
    if pattern.endswith("/"):  # folders only, named with their slash
        return [f"{path}/" for path in glob(pattern.rstrip("/")) if isdir(path)]
    scheme, _, path = pattern.partition("://")
    parts = path.split("/")
    first = next((i for i, part in enumerate(parts) if _glob.has_magic(part)), None)
    if first is None:
        return [pattern] if exists(pattern) else []
    found = [f"{scheme}://{'/'.join(parts[:first])}"]
    for level, part in enumerate(parts[first:], start=first):
        last = level == len(parts) - 1
        matched = []
        for folder in found:
            if not isdir(folder):
                continue
            if _glob.has_magic(part):
                names = [name for name in listdir(folder) if fnmatch.fnmatchcase(name, part)]
            else:
                names = [part]
            for name in names:
                candidate = f"{folder}/{name}"
                if isdir(candidate) or (last and exists(candidate)):
                    matched.append(candidate)
        found = matched
    return sorted(found)


def walk_files(folder: str) -> list[str]:
    """Returns the paths of every file under ``folder``, sub-folders included, sorted."""
    if listing := _listed(folder):
        return listing.walk_files(folder)
    walk = _gfile().walk(folder) if is_remote(folder) else os.walk(folder)
    return sorted(os.path.join(root, name) for root, _, names in walk for name in names)


def size(path: str) -> int:
    """Returns the bytes in file ``path``."""
    if not is_remote(path):
        return os.path.getsize(path)
    if (listing := _listed(path)) and path in listing.sizes:
        return listing.sizes[path]
    return _gfile().stat(path).length


_OBJECT_STORES = ("gs://", "s3://", "minio://")


def is_object_store(path: str) -> bool:
    """Whether ``path`` is in an object store (a bucket), where folders are only the prefixes
    of their objects' names."""
    return path.startswith(_OBJECT_STORES)


def make_folder(path: str) -> None:
    """Creates folder ``path`` and its parents; in an object store nothing (TensorFlow's GCS
    plugin would write an empty placeholder object, which GCS does not need and
    fake-gcs-server refuses: its XML ``PUT`` of ``name/``)."""
    if not is_remote(path):
        os.makedirs(path, exist_ok=True)
    elif not is_object_store(path):
        _gfile().makedirs(path)


def copy_tree(source: str, destination: str, last: tuple[str, ...] = ()) -> None:
    """Copies folder ``source`` into ``destination``, the files named in ``last`` after all
    the others (a model loader waits for ``saved_model.pb``)."""
    walk = _gfile().walk(source) if is_remote(source) else os.walk(source)
    prefix = source.rstrip("/") + "/"
    files = []
    for root, _, names in walk:
        below = f"{root.rstrip('/')}/"[len(prefix) :]
        make_folder(os.path.join(destination, below))
        files += [below + name for name in names]
    for relative in sorted(files, key=lambda f: (os.path.basename(f) in last, f)):
        target = os.path.join(destination, relative)
        if is_remote(source) or is_remote(destination):
            _gfile().copy(prefix + relative, target, overwrite=True)
        else:
            shutil.copyfile(prefix + relative, target)


def remove(path: str) -> None:
    """Deletes file ``path``."""
    if is_remote(path):
        _gfile().remove(path)
    else:
        os.remove(path)


def replace(source: str, destination: str) -> None:
    """Renames file ``source`` to ``destination``, replacing a file already there (locally
    at once: a reader sees the old file or the new one, never part of one)."""
    if is_remote(source):
        _gfile().rename(source, destination, overwrite=True)
    else:
        os.replace(source, destination)


def remove_tree(path: str) -> None:
    """Deletes folder ``path`` and everything under it, if it is there."""
    if not is_remote(path):
        shutil.rmtree(path, ignore_errors=True)
    elif isdir(path):
        _gfile().rmtree(path)


def move_tree(source: str, destination: str) -> None:
    """Renames folder ``source`` to ``destination``; in an object store, which renames
    objects one by one, copies them and then deletes the source."""
    if not is_remote(source):
        os.rename(source, destination)
    elif not is_object_store(source):
        _gfile().rename(source, destination)
    else:
        copy_tree(source, destination)
        remove_tree(source)
