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
    """Whether ``path`` is a folder."""
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def exists(path: str) -> bool:
    """Whether ``path`` exists."""
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


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


def open_binary(path: str):
    """Opens ``path`` for reading bytes."""
    return _gfile().GFile(path, "rb") if is_remote(path) else open(path, "rb")


def open_text(path: str):
    """Opens ``path`` for reading UTF-8 text, with universal newlines."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", newline="")


def glob(pattern: str) -> list[str]:
    """Returns the paths matching a glob pattern, sorted."""
    if is_remote(pattern):
        return sorted(_gfile().glob(pattern))
    return sorted(_glob.glob(pattern))


def walk_files(folder: str) -> list[str]:
    """Returns the paths of every file under ``folder``, sub-folders included, sorted."""
    walk = _gfile().walk(folder) if is_remote(folder) else os.walk(folder)
    return sorted(os.path.join(root, name) for root, _, names in walk for name in names)


def size(path: str) -> int:
    """Returns the bytes in file ``path``."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)
