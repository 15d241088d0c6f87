"""A user's module file: its own ``preprocessing_fn`` and/or ``run_fn``, as TFX's module_file.

The file is imported once when the pipeline is configured, so a file that
does not import, or defines neither function, is a one-line error before
any component runs. Transform uses its ``preprocessing_fn`` and the Trainer
its ``run_fn``, whichever it defines; the built-in function serves for the
other. TFX then packages the file (with the ``.py`` files beside it) into a
wheel under the pipeline root for local runs; Kubeflow pods read it from its
path, which must exist in the pods: a bucket URI (gs://...), a path inside
the component image, or a mounted volume.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import sys
import tempfile

from tfrecord_pipelines.components.storage import filesystem

PREPROCESSING_FN = "preprocessing_fn"
RUN_FN = "run_fn"
ENTRY_POINTS = (PREPROCESSING_FN, RUN_FN)


@dataclasses.dataclass(frozen=True)
class ModuleFile:
    """A module file and the TFX entry points it defines.

    Attributes:
      path: the .py file (local path or bucket URI).
      functions: which of ``preprocessing_fn`` and ``run_fn`` it defines.
    """

    path: str
    functions: tuple[str, ...]

    def __post_init__(self):
        object.__setattr__(self, "functions", tuple(self.functions))
        if not self.functions or set(self.functions) - set(ENTRY_POINTS):
            raise ValueError(
                f"ModuleFile.functions must name {' and/or '.join(ENTRY_POINTS)}, "
                f"got {list(self.functions)}."
            )

    def defines(self, function: str) -> bool:
        return function in self.functions


def _import(path: str):
    """Imports the file as a throwaway module (a local copy, for a URI)."""
    with tempfile.TemporaryDirectory() as tmp:
        local = path
        if filesystem.is_remote(path):
            local = os.path.join(tmp, os.path.basename(path))
            with filesystem.open_binary(path) as source, open(local, "wb") as copy:
                shutil.copyfileobj(source, copy)
        spec = importlib.util.spec_from_file_location("_tfrecord_pipelines_user_module", local)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(local)))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)
        return module


def load_module_file(path: str) -> ModuleFile:
    """Imports ``path`` and returns which entry points it defines.

    Raises:
      ValueError: if the file is missing, is not a .py file, does not import,
        or defines neither preprocessing_fn nor run_fn.
    """
    if not path.endswith(".py"):
        raise ValueError(f"Module file {path} must be a .py file.")
    if not filesystem.exists(path):
        raise ValueError(f"Module file {path} does not exist.")
    try:
        module = _import(path)
    except Exception as e:  # noqa: BLE001 - any failure of user code is reported in one line
        first = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"Module file {path} does not import: {type(e).__name__}: {first}") from e
    functions = tuple(name for name in ENTRY_POINTS if callable(getattr(module, name, None)))
    if not functions:
        raise ValueError(
            f"Module file {path} defines neither {PREPROCESSING_FN} nor {RUN_FN}; "
            "define one or both (TFX calls preprocessing_fn(inputs, custom_config) in "
            "Transform and run_fn(fn_args) in the Trainer)."
        )
    return ModuleFile(path=path, functions=functions)
