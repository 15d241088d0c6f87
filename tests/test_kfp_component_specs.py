"""The KFP component specs: what the command writes, checked in, and loadable where only kfp
is installed (a KFP user's environment)."""

import subprocess
import sys

from conftest import REPO_ROOT, run_cli

SPECS = REPO_ROOT / "kfp_components"
REFERENCE = REPO_ROOT / "docs" / "reference" / "kfp-components.md"
EXAMPLE = REPO_ROOT / "examples" / "kfp_reuse" / "pipeline.py"
COMPONENTS = (
    "sharded_example_gen",
    "schema_gen",
    "example_validator",
    "transform",
    "trainer",
    "evaluator",
    "pusher",
)


def test_checked_in_specs_and_reference_are_what_the_command_writes(tmp_path):
    written = run_cli(
        "components", "--output", str(tmp_path), "--reference", str(tmp_path / "reference.md")
    )
    assert written.returncode == 0, written.stderr[-2000:]
    assert sorted(p.name for p in SPECS.glob("*.yaml")) == sorted(f"{c}.yaml" for c in COMPONENTS)
    for name in COMPONENTS:
        assert (tmp_path / f"{name}.yaml").read_text() == (SPECS / f"{name}.yaml").read_text(), (
            f"kfp_components/{name}.yaml is stale: run `python -m tfrecord_pipelines components "
            "--reference docs/reference/kfp-components.md`"
        )
    assert (tmp_path / "reference.md").read_text() == REFERENCE.read_text()


def test_specs_load_in_a_virtual_environment_that_holds_only_kfp(tmp_path):
    """What a KFP user has: kfp, no TFX, no TensorFlow, no project."""
    venv = tmp_path / "venv"
    uv = REPO_ROOT / ".tools" / "bin" / "uv"
    for command in (
        [str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)],
        [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         "kfp==2.13.0"],
    ):  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    probe = f"""
import importlib.util, pathlib
from kfp import components
assert importlib.util.find_spec("tfx") is None and importlib.util.find_spec("tensorflow") is None
for path in sorted(pathlib.Path({str(SPECS)!r}).glob("*.yaml")):
    component = components.load_component_from_file(str(path))
    spec = component.component_spec
    print(component.name, sorted(spec.inputs or {{}}), sorted(spec.outputs or {{}}))
"""
    loaded = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    found = {line.split()[0]: line for line in loaded.stdout.splitlines()}
    assert sorted(found) == sorted(name.replace("_", "-") for name in COMPONENTS)
    assert "'metrics'" in found["evaluator"] and "'classification_metrics'" in found["evaluator"]
    # The example pipeline, with its own component, compiles there too.
    compiled = subprocess.run(
        [str(venv / "bin" / "python"), str(EXAMPLE), "--output", str(tmp_path / "reuse.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    assert "comp-count-records" in (tmp_path / "reuse.yaml").read_text()
