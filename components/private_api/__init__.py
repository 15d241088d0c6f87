"""The private names of other libraries that this project uses, one module per library.

Each module is the only place its library's private names are touched
(ruff's SLF rules fail a private access anywhere else), and lists them in
``CHECKED``: the dotted name of what each use rests on, with a fingerprint of
its source in the version the module names. tests/test_private_api.py fails
when the installed library is another version or one of those sources
changed, so that an upgrade is checked name by name instead of breaking a
run.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect


def resolve(dotted: str):
    """The object a dotted name (``package.module.Class.attribute``) names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(f"No module in {dotted!r}.")


def fingerprint(dotted: str) -> str:
    """A short digest of the source of what ``dotted`` names."""
    return hashlib.sha256(inspect.getsource(resolve(dotted)).encode()).hexdigest()[:16]
