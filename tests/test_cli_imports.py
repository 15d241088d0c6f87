"""Commands import only what they need: a wrong argument or a small inspect pays no TFX import.

Each case runs in a fresh interpreter, as a user's command does, and asserts
which heavy packages were imported by the time it answered (no timings: the
modules loaded are what decides the start-up cost).
"""

import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

HEAVY = ("tensorflow", "tfx", "apache_beam", "kfp", "tensorflow_model_analysis")
_PROBE = """
import contextlib, io, json, sys
from tfrecord_pipelines.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        status = main(sys.argv[1:])
    except SystemExit as e:
        status = e.code
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"status": status, "heavy": heavy}}))
"""


def _imports(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_inspect_reads_records_without_tensorflow(tmp_path):
    import tensorflow as tf

    path = tmp_path / "small.tfrecord.gz"
    with tf.io.TFRecordWriter(str(path), "GZIP") as writer:
        example = tf.train.Example(
            features=tf.train.Features(
                feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))}
            )
        )
        writer.write(example.SerializeToString())
    assert _imports("inspect", str(path)) == {"status": 0, "heavy": []}


@pytest.mark.parametrize(
    "argv",
    [
        ("convert", "--help"),
        ("inspect", "--help"),
        ("report", "--help"),
        ("run", "--data", "{missing}", "--label", "y"),
        ("compile", "--data", "{missing}", "--label", "y"),
        ("submit", "--host", "http://127.0.0.1:9", "--data", "{missing}", "--label", "y"),
        ("convert", "{missing}", "{dest}"),
        ("convert", "{csv}", "{dest}", "--label", "not-a-column"),
        ("report", "--output", "{missing}"),
    ],
)
def test_answers_before_any_heavy_import(tmp_path, argv):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "rows.csv").write_text("a,b\n1,2\n")
    paths = {"missing": tmp_path / "missing", "dest": tmp_path / "dest", "csv": tmp_path / "csv"}
    found = _imports(*(arg.format(**paths) for arg in argv))
    assert found["heavy"] == []
    assert found["status"] == (0 if "--help" in argv else 2)


def _probe(script: str, *argv: str) -> dict:
    """What SCRIPT, run in a fresh interpreter, printed as JSON on its last line."""
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_ENTRY_POINT_PROCESS = """
import contextlib, io, json, runpy, sys
# Started as the command or the pod starts it (python -m), answering --help.
sys.argv = [sys.argv[1], "--help"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
import tfrecord_pipelines.local.runner, tfrecord_pipelines.definition.pipeline
import tfrecord_pipelines.kubeflow.kfp_executor
import tfrecord_pipelines.kubeflow.training_job.trainer_resources
from tfrecord_pipelines.components import deferred_inits
seen = {"deferred": [deferred_inits.deferred(p) for p in ("tfx.components", "kfp")],
        "unused": [m for m in ("kubernetes.dynamic", "kubernetes_validate", "kfp.client",
                   "keras_tuner", "tfx.components.infra_validator") if m in sys.modules]}
from tfx.components import evaluator
seen["submodule"] = evaluator.__name__
seen["deferred_after_submodule"] = deferred_inits.deferred("tfx.components")
import tfx.components
from tfx.components.trainer.component import Trainer
seen["same_trainer"] = tfx.components.Trainer is Trainer
seen["deferred_after_name"] = deferred_inits.deferred("tfx.components")
import kfp
seen["kfp_version"] = kfp.__version__ == __import__("importlib.metadata").metadata.version("kfp")
seen["infra_validator"] = "InfraValidator" in dir(tfx.components)
print(json.dumps(seen))
"""

# The project's own processes: the command line, and the two entry points of the pods.
ENTRY_POINTS = (
    "tfrecord_pipelines",
    "tfrecord_pipelines.kubeflow.kfp_executor",
    "tfrecord_pipelines.kubeflow.reusable.entry",
)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_run_or_pod_imports_no_unused_tfx_component(entry_point):
    """What `run` and a pod import before a component runs leaves the __init__ of
    tfx.components (every standard component: keras_tuner), kfp (kfp.Client) and kubernetes
    (its dynamic client: kubernetes_validate) unrun; their names still resolve."""
    assert _probe(_ENTRY_POINT_PROCESS, entry_point) == {
        "deferred": [True, True],
        "unused": [],
        "submodule": "tfx.components.evaluator",
        "deferred_after_submodule": True,
        "same_trainer": True,
        "deferred_after_name": False,
        "infra_validator": True,
        "kfp_version": True,
    }


_LIBRARY_PROCESS = """
import importlib.machinery, json, sys, types
finders = list(sys.meta_path)
# What a user's own TFX or KFP pipeline imports to reuse a component, then the three packages.
import tfrecord_pipelines, tfrecord_pipelines.components.trainer.dataset
import tfrecord_pipelines.components.example_gen.component
import tfrecord_pipelines.kubeflow.reusable.definitions
import tfx.components, kfp, kubernetes
packages = [sys.modules[name] for name in ("tfx.components", "kfp", "kubernetes")]
print(json.dumps({
    # Finders the libraries add for themselves (six's, TFX's own) are theirs; none is ours.
    "our_finders": [type(f).__module__ for f in sys.meta_path
                    if f not in finders and type(f).__module__.startswith("tfrecord_pipelines")],
    "plain_modules": [type(m) is types.ModuleType for m in packages],
    "source_loaders": [
        type(m.__spec__.loader) is importlib.machinery.SourceFileLoader for m in packages
    ],
    "inits_ran": ["Trainer" in vars(tfx.components), "kfp.client" in sys.modules,
                  "kubernetes.client" in sys.modules],
}))
"""


def test_a_library_import_leaves_tfx_kfp_and_kubernetes_as_python_imports_them():
    assert _probe(_LIBRARY_PROCESS) == {
        "our_finders": [],
        "plain_modules": [True, True, True],
        "source_loaders": [True, True, True],
        "inits_ran": [True, True, True],
    }


_METADATA_SCAN_PROCESS = """
import importlib.metadata, json
scans = []
real = importlib.metadata.packages_distributions
importlib.metadata.packages_distributions = lambda: scans.append(1) or real()
# TensorFlow's GCE cluster resolver imports it, so every pod and command does.
import google.api_core
print(json.dumps({"scans": len(scans)}))
"""


def test_importing_google_api_core_reads_no_installed_distribution():
    """google-api-core 2.28 and later walk every installed distribution's RECORD at import
    (about 0.4 s of CPU in each process here); pyproject's constraint keeps a release that does
    not."""
    assert _probe(_METADATA_SCAN_PROCESS) == {"scans": 0}
