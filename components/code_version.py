"""The version of the project code a component runs, for TFX's cache keys.

TFX keys a cached execution on its inputs, parameters and executor class
path, not on the code behind that path: a changed ``preprocessing_fn`` or
``run_fn`` under the same name would be reused. Components that run this
project's code therefore take, as a parameter, a digest of the source of the
module they run and of every ``components`` module it imports, directly or
not (found by reading the import statements, not by importing). A change
elsewhere in the project leaves their cache alone.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

from tfrecord_pipelines.components import keys

_ROOT = Path(__file__).resolve().parent
# The components package's import name ("tfrecord_pipelines.components"), whose
# folder is _ROOT.
_PACKAGE = __name__.rpartition(".")[0]
# The modules each component runs.
EXAMPLE_GEN_CODE = (
    "tfrecord_pipelines.components.example_gen.executor",
    "tfrecord_pipelines.components.example_gen.summary_page",
)
# Transform runs its executor and the built-in preprocessing_fn, which the executor
# names only by path.
TRANSFORM_CODE = (
    "tfrecord_pipelines.components.transform.executor",
    "tfrecord_pipelines.components.transform.preprocessing",
)
TRAINER_CODE = "tfrecord_pipelines.components.trainer.run"
PUSHER_CODE = "tfrecord_pipelines.components.pusher.executor"
EVALUATOR_CODE = (
    "tfrecord_pipelines.components.evaluator.executor",
    "tfrecord_pipelines.components.evaluator.ui_metrics",
)


def _in_package(module: str) -> bool:
    return module == _PACKAGE or module.startswith(f"{_PACKAGE}.")


def _source_file(module: str, root: Path) -> Path | None:
    """The file of ``<package>.x.y`` under ``root`` (a module or a package's __init__)."""
    if not _in_package(module):
        return None
    parts = module[len(_PACKAGE) :].split(".")[1:]
    candidate = root.joinpath(*parts)
    for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_modules(path: Path) -> frozenset[str]:
    """The ``components`` modules a source file imports, wherever in the file."""
    return _imports_in(path.read_text(), str(path))


# Keyed on the source itself: a pipeline's build digests five components' modules, most
# of them shared, and parsing each file once instead of 2.4 times saves 0.1-0.2 CPU-s.
@functools.lru_cache(maxsize=1024)
def _imports_in(source: str, filename: str) -> frozenset[str]:
    found = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if _in_package(a.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _in_package(node.module):
                found.add(node.module)
                # `from <package> import x`: x may be a module.
                found.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(found)


def source_files(module: str | tuple[str, ...], root: Path = _ROOT) -> list[Path]:
    """``module``'s file (or several modules' files) and those of the ``components``
    modules it imports, transitively.

    Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` too, so those count.
    """
    pending, seen = [module] if isinstance(module, str) else list(module), set()
    while pending:
        name = pending.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in seen:
                continue
            seen.add(prefix)
            path = _source_file(prefix, root)
            if path is not None:
                pending.extend(_imported_modules(path))
    files = {_source_file(name, root) for name in seen}
    return sorted(f for f in files if f is not None)


@functools.cache
def code_version(module: str | tuple[str, ...], root: Path = _ROOT) -> str:
    """A digest of the source of ``module`` (or modules) and of the project modules it imports."""
    digest = hashlib.sha256()
    for path in source_files(module, root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return f"sha256:{digest.hexdigest()[:16]}"


def custom_config_entry(modules: str | tuple[str, ...]) -> dict:
    """The custom_config entry that keys a component's cache on the project code it runs."""
    return {keys.CODE_VERSION_KEY: code_version(modules)}
