"""The wheel, installed into a fresh environment, serves a user project with its own packages.

A user's repository often has its own ``pipelines`` and ``components``
packages. The project's import name, ``tfrecord_pipelines``, keeps the two
apart: ``tests/user_project`` builds its own TFX pipeline with
ShardedExampleGen and reads the shards with make_dataset in its own
run_fn, in a virtual environment that has only the locked dependencies and
the built wheel, with the user project as the working directory.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.e2e

USER_PROJECT = Path(__file__).parent / "user_project"
# setup.py: pipelines/ is the package tfrecord_pipelines, components/ its components.
FOLDERS = {"pipelines": "tfrecord_pipelines", "components": "tfrecord_pipelines/components"}


def _uv() -> str:
    uv = REPO_ROOT / ".tools" / "bin" / "uv"
    found = str(uv) if uv.exists() else shutil.which("uv")
    assert found, "uv is missing: `make setup` installs it into .tools/"
    return found


def _run(*args, cwd: Path, timeout: int = 600, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel as a user gets it: built by uv from a fresh sdist of the checkout."""
    out = tmp_path_factory.mktemp("wheel")
    _run(_uv(), "build", "--quiet", "--out-dir", str(out), cwd=REPO_ROOT)
    (found,) = out.glob("tfrecord_pipelines-*.whl")
    return found


@pytest.fixture(scope="module")
def fresh_python(wheel, tmp_path_factory) -> Path:
    """A new virtual environment: the locked runtime dependencies and the wheel, nothing else."""
    root = tmp_path_factory.mktemp("venv")
    requirements = root / "requirements.txt"
    uv = _uv()
    _run(
        uv,
        "export",
        "--frozen",
        "--no-dev",
        "--no-emit-project",
        "--no-hashes",
        "--quiet",
        "--output-file",
        str(requirements),
        cwd=REPO_ROOT,
    )
    venv = root / "venv"
    _run(uv, "venv", "--quiet", "--python", sys.executable, str(venv), cwd=root)
    python = venv / "bin" / "python"
    _run(
        uv, "pip", "install", "--quiet", "--python", str(python), "-r", str(requirements), cwd=root
    )
    _run(
        uv, "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(wheel), cwd=root
    )
    return python


def test_the_wheel_holds_every_module_under_its_import_name(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, package in FOLDERS.items():
        for source in (REPO_ROOT / folder).rglob("*.py"):
            relative = source.relative_to(REPO_ROOT / folder).as_posix()
            assert f"{package}/{relative}" in names, f"{folder}/{relative} is not in {wheel.name}"
    assert "tfrecord_pipelines/report/templates/report.html.j2" in names
    assert not any(n.startswith(("pipelines/", "components/")) for n in names)


def test_the_user_packages_and_ours_import_side_by_side(fresh_python, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(USER_PROJECT, project)
    probe = (
        "import json, components, pipelines, tfrecord_pipelines.components.trainer as t, "
        "tfrecord_pipelines.cli.main as m\n"
        "print(json.dumps([components.__file__, pipelines.__file__, t.__file__, m.__file__]))"
    )
    done = _run(str(fresh_python), "-c", probe, cwd=project)
    users_components, users_pipelines, trainer, cli = map(Path, json.loads(done.stdout))
    assert users_components.parent == project / "components"
    assert users_pipelines.parent == project / "pipelines"
    site_packages = fresh_python.parent.parent / "lib"
    for ours in (trainer, cli):
        assert site_packages in ours.parents, ours
    # The console script answers before importing TensorFlow.
    help_text = _run(str(fresh_python.parent / "tfrecord-pipelines"), "--help", cwd=project)
    assert "run,compile,submit,convert,inspect,report" in help_text.stdout


def test_a_user_pipeline_converts_with_sharded_example_gen_and_reads_with_make_dataset(
    fresh_python, tmp_path
):
    project = tmp_path / "project"
    shutil.copytree(USER_PROJECT, project)
    data = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data" / "penguins", data)
    root = tmp_path / "root"
    _run(
        str(fresh_python),
        "-m",
        "pipelines.penguins",
        str(data),
        str(root),
        cwd=project,
        timeout=1200,
    )

    (plan_file,) = root.glob("ShardedExampleGen/examples/*/shard_plan.json")
    plan = json.loads(plan_file.read_text())
    (read_file,) = root.glob("Trainer/model_run/*/read.json")
    read = json.loads(read_file.read_text())
    written = {name: split["records"] for name, split in plan["splits"].items()}
    assert read["train"] == written["train"] > 0
    assert read["eval"] == written["eval"] > 0
    with open(data / "penguins.csv") as f:
        header = f.readline().strip().split(",")
    assert read["features"] == sorted(header)


def _store(metadata_db: Path):
    """A local run's ML Metadata store."""
    from ml_metadata.metadata_store import metadata_store
    from ml_metadata.proto import metadata_store_pb2

    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = str(metadata_db)
    return metadata_store.MetadataStore(config)


def _executions(store) -> list[tuple[str, str]]:
    """(component, state) of each execution the store recorded, in order."""
    from ml_metadata.proto import metadata_store_pb2

    states = metadata_store_pb2.Execution.State
    return [
        (
            store.get_execution_types_by_id([e.type_id])[0].name.rsplit(".", 1)[-1],
            states.Name(e.last_known_state),
        )
        for e in sorted(store.get_executions(), key=lambda e: e.id)
    ]


def test_tfx_penguin_pipeline_runs_on_our_shards_then_with_our_components(fresh_python, tmp_path):
    """TFX's penguin pipeline shape (tests/user_project/pipelines/penguin_tfx.py) from the
    wheel, run as the reuse guide says: first with TFX's own components after
    ShardedExampleGen, then with ours swapped in. The environment has no
    TF_USE_LEGACY_KERAS: the pipeline's first lines set it, as the guide says."""
    project = tmp_path / "project"
    shutil.copytree(USER_PROJECT, project)
    data = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data" / "penguins", data)
    root, serving = tmp_path / "root", tmp_path / "serving"
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    logs = {}
    for which in ("stock", "ours"):
        done = _run(
            str(fresh_python),
            "-m",
            "pipelines.penguin_tfx",
            which,
            str(data),
            str(root),
            str(serving),
            cwd=project,
            timeout=1200,
            env=env,
        )
        logs[which] = done.stderr

    stock = ["StatisticsGen", "SchemaGen", "Transform", "Trainer", "Evaluator", "Pusher"]
    ours = ["SchemaGen", "Transform", "Trainer", "Evaluator", "Pusher"]
    store = _store(root / "metadata.db")
    assert _executions(store) == [
        ("ShardedExampleGen", "COMPLETE"),
        *((name, "COMPLETE") for name in stock),
        # The second run converts nothing: TFX's cache holds ShardedExampleGen's output.
        ("ShardedExampleGen", "CACHED"),
        *((name, "COMPLETE") for name in ours),
    ]
    # Both models blessed and pushed; ours through a staging folder, left behind by neither.
    assert len(list(root.glob("Evaluator/blessing/*/BLESSED"))) == 2
    versions = sorted(serving.iterdir())
    assert [v.name.isdigit() for v in versions] == [True, True], versions
    assert all((v / "saved_model.pb").exists() for v in versions)
    assert "Model pushed to" in logs["ours"]
    # Our Transform answered every analyzer from ExampleGen's statistics: no record read.
    analyses = [
        a.custom_properties["analysis"].string_value
        for a in store.get_artifacts_by_type("TransformGraph")
        if "analysis" in a.custom_properties
    ]
    (analysis,) = map(json.loads, analyses)
    assert analysis["analyzed"] == [] and analysis["from_statistics"], analysis
    # Our Evaluator's batched path ran, and said so in the log a TFX user sees.
    assert "by batched predictions" in logs["ours"]
    # Told no problem, the examples record the label alone.
    (examples,) = [
        a for a in store.get_artifacts_by_type("Examples") if "/ShardedExampleGen/" in a.uri
    ]
    assert examples.custom_properties["label"].string_value == "species"
    assert "problem" not in examples.custom_properties
