"""The wheel, installed into a fresh environment, serves a user project with its own packages.

A user's repository often has its own ``pipelines`` and ``components``
packages. The project's import name, ``tfrecord_pipelines``, keeps the two
apart: ``tests/user_project`` builds its own TFX pipeline with
ShardedExampleGen and reads the shards with make_dataset in its own
run_fn, in a virtual environment that has only the locked dependencies and
the built wheel, with the user project as the working directory.
"""

import json
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


def _run(*args, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
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
