"""``tfx.components``, ``kfp``, ``kubernetes`` imported with their ``__init__`` run only on use.

Python runs a package's ``__init__`` before any of its submodules, and three
packages on every path of this project import far more there than the
submodule asked for:

- TFX's ``tfx/components/__init__.py`` imports every standard component, so
  ``import tfx.components.evaluator.constants`` (which TFX's own LocalDagRunner
  does) also imports InfraValidator's Kubernetes client, Tuner's keras_tuner
  and Keras 3, and BulkInferrer;
- KFP's ``kfp/__init__.py`` imports ``kfp.Client`` and with it the Kubernetes
  client, so a pod that only reads ``kfp.pipeline_spec``'s protos pays for it;
- the Kubernetes client's ``kubernetes/__init__.py`` imports its dynamic client
  and, where it is installed (the dev environment), kubernetes_validate's JSON
  schemas: 1.5 CPU-s for ``compile``'s one ``kubernetes.utils.parse_quantity``.

About 2 CPU-seconds in every process that runs or hosts a component, and 5 in a
pod of SpanWindow or RecordRun. Only the project's own processes call
``defer_package_inits``, first thing: the command line's ``main`` and the pods'
entry points (``kubeflow.kfp_executor``, ``kubeflow.reusable.entry``). A
user's process that imports the package (their own TFX or KFP pipeline reusing
a component) imports the three packages as Python does.

``defer_package_inits`` makes Python import them as packages whose submodules
import as usual and whose ``__init__`` runs the first time one of its own names
(``tfx.components.Trainer``, ``kfp.Client``, ``kfp.__version__``, ``from
tfx.components import *``) is asked for: every name those files define still
resolves, to the same objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types

PACKAGES = ("tfx.components", "kfp", "kubernetes")
_LOCK = threading.RLock()


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first lookup of a name it does not hold yet."""

    def __getattr__(self, name: str):
        if not name.startswith("__") and importlib.util.find_spec(f"{self.__name__}.{name}"):
            # A submodule (``from tfx.components import evaluator``): imported on its own.
            return importlib.import_module(f"{self.__name__}.{name}")
        _run_init(self)
        return getattr(self, name)


def _run_init(module: types.ModuleType) -> None:
    with _LOCK:
        if type(module) is _DeferredPackage:
            module.__class__ = types.ModuleType
            module.__spec__.loader.package_loader.exec_module(module)


class _DeferringLoader(importlib.abc.Loader):
    """Creates the package as its own loader would and leaves its ``__init__`` for later."""

    def __init__(self, package_loader: importlib.abc.Loader) -> None:
        self.package_loader = package_loader

    def create_module(self, spec):
        return None  # the default module, as for the package's own loader

    def exec_module(self, module: types.ModuleType) -> None:
        module.__class__ = _DeferredPackage


class _DeferringFinder(importlib.abc.MetaPathFinder):
    """Finds each of ``PACKAGES`` where Python's path finder does, with a deferring loader."""

    def find_spec(self, name, path, target=None):
        if name not in PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.submodule_search_locations is None:
            return None
        spec.loader = _DeferringLoader(spec.loader)
        return spec


def defer_package_inits() -> None:
    """Makes the ``__init__`` of each of ``PACKAGES`` run only when one of its names is used.

    Imports nothing: a package imported before this call is left as it is."""
    with _LOCK:
        if not any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
            sys.meta_path.insert(0, _DeferringFinder())


def deferred(name: str) -> bool:
    """Whether the ``__init__`` of package NAME has not run (yet) in this process."""
    return type(sys.modules.get(name)) is _DeferredPackage
