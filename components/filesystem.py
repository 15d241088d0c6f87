"""File look-ups for local paths and bucket URIs, without importing TensorFlow for local ones.

The command line checks a data folder before anything slow is imported;
TensorFlow's import alone takes several seconds. Local paths go through
``os``; URIs (``gs://``, ``s3://``, ...) through ``tf.io.gfile``, imported
only then, so remote data folders work the same way.
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import io
import os


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI (gs://, s3://, ...) rather than a local path."""
    return "://" in path


def absolute(path: str) -> str:
    """Returns a local path made absolute; a URI unchanged."""
    return path if is_remote(path) else os.path.abspath(path)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def isdir(path: str) -> bool:
    """Whether ``path`` is a folder (a bucket's root too, which the modular GCS plugin knows
    only with a trailing slash)."""
    if not is_remote(path):
        return os.path.isdir(path)
    gfile = _gfile()
    return gfile.isdir(path) or gfile.isdir(f"{path.rstrip('/')}/")


def exists(path: str) -> bool:
    """Whether ``path`` exists: a file, or a folder (in a bucket, a prefix that holds objects,
    which TensorFlow's modular GCS plugin answers only to ``isdir``)."""
    if not is_remote(path):
        return os.path.exists(path)
    return _gfile().exists(path) or isdir(path)


def listdir(path: str) -> list[str]:
    """Returns the names in folder ``path``, sorted, without trailing slashes."""
    names = _gfile().listdir(path) if is_remote(path) else os.listdir(path)
    return sorted(name.rstrip("/") for name in names)


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
                self._size = _gfile().stat(self._path).length
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


def open_text(path: str):
    """Opens ``path`` for reading UTF-8 text, with universal newlines."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", newline="")


def glob(pattern: str) -> list[str]:
    """Returns the paths matching a glob pattern, sorted.

    In a bucket, folder levels with wildcards (``day=*/*.csv``) are matched one
    level at a time: TensorFlow's modular GCS plugin matches wildcards in the
    last level only (its glob of ``gs://b/day=*/*.csv`` is empty).
    """
    if not is_remote(pattern):
        return sorted(_glob.glob(pattern))
    gfile = _gfile()
    scheme, _, path = pattern.partition("://")
    parts = path.split("/")
    first = next((i for i, part in enumerate(parts[:-1]) if _glob.has_magic(part)), None)
    if first is None:  # wildcards in the last level at most: the plugin's own glob
        return sorted(gfile.glob(pattern))
    folders = [f"{scheme}://{'/'.join(parts[:first])}"]
    # Folders are asked with a trailing slash: the plugin finds no bucket root without it.
    for part in parts[first:-1]:
        folders = [
            f"{folder}/{name}"
            for folder in folders
            if gfile.isdir(f"{folder}/")
            for name in (entry.rstrip("/") for entry in gfile.listdir(f"{folder}/"))
            if fnmatch.fnmatchcase(name, part) and gfile.isdir(f"{folder}/{name}/")
        ]
    return sorted(path for folder in folders for path in gfile.glob(f"{folder}/{parts[-1]}"))


def walk_files(folder: str) -> list[str]:
    """Returns the paths of every file under ``folder``, sub-folders included, sorted."""
    walk = _gfile().walk(folder) if is_remote(folder) else os.walk(folder)
    return sorted(os.path.join(root, name) for root, _, names in walk for name in names)


def size(path: str) -> int:
    """Returns the bytes in file ``path``."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)
