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
    print(component.name, sorted(spec.inputs or {{}}), sorted(spec.outputs or {{}}),
          "described" if spec.description else "undescribed")
"""
    loaded = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    found = {line.split()[0]: line for line in loaded.stdout.splitlines()}
    assert sorted(found) == sorted(name.replace("_", "-") for name in COMPONENTS)
    assert "'metrics'" in found["evaluator"] and "'classification_metrics'" in found["evaluator"]
    # The loader reads a component's description from the spec's header comment.
    assert all(line.endswith(" described") for line in found.values()), found
    # The example pipeline, with its own component, compiles there too.
    compiled = subprocess.run(
        [str(venv / "bin" / "python"), str(EXAMPLE), "--output", str(tmp_path / "reuse.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compiled.returncode == 0, compiled.stderr[-2000:]
    assert "comp-count-records" in (tmp_path / "reuse.yaml").read_text()


# Each input's and output's type, as a KFP user wires them: a change here changes what
# their pipelines accept.
TYPES = {
    "sharded_example_gen": {
        "inputs": {"input_base": "STRING", "label": "STRING", "problem": "STRING",
                   "source_format": "STRING", "num_readers": "NUMBER_INTEGER"},
        "outputs": {"examples": "system.Dataset", "statistics": "system.Artifact",
                    "quarantine": "system.Dataset", "examples_summary": "system.Markdown"},
    },
    "schema_gen": {
        "inputs": {"statistics": "system.Artifact"},
        "outputs": {"schema": "system.Artifact"},
    },
    "example_validator": {
        "inputs": {"statistics": "system.Artifact", "schema": "system.Artifact"},
        "outputs": {"anomalies": "system.Artifact"},
    },
    "transform": {
        "inputs": {"examples": "system.Dataset", "schema": "system.Artifact",
                   "statistics": "system.Artifact", "label": "STRING", "problem": "STRING"},
        "outputs": {"transform_graph": "system.Artifact"},
    },
    "trainer": {
        "inputs": {"examples": "system.Dataset", "schema": "system.Artifact",
                   "transform_graph": "system.Artifact", "label": "STRING", "problem": "STRING",
                   "train_steps": "NUMBER_INTEGER"},
        "outputs": {"model": "system.Model", "model_run": "system.Artifact"},
    },
    "evaluator": {
        "inputs": {"examples": "system.Dataset", "model": "system.Model", "label": "STRING",
                   "problem": "STRING", "min_accuracy": "NUMBER_DOUBLE",
                   "positive_class": "STRING", "num_classes": "NUMBER_INTEGER"},
        "outputs": {"evaluation": "system.Artifact", "blessing": "system.Artifact",
                    "metrics": "system.Metrics",
                    "classification_metrics": "system.ClassificationMetrics",
                    "evaluation_summary": "system.Markdown"},
    },
    "pusher": {
        "inputs": {"model": "system.Model", "model_blessing": "system.Artifact",
                   "serving_dir": "STRING"},
        "outputs": {"pushed_model": "system.Model"},
    },
}  # fmt: skip


def _definitions(name: str) -> tuple[dict, dict]:
    import yaml

    spec = yaml.safe_load((SPECS / f"{name}.yaml").read_text())
    component = spec["components"][f"comp-{name.replace('_', '-')}"]
    return component.get("inputDefinitions", {}), component.get("outputDefinitions", {})


def _typed(definitions: dict) -> dict[str, tuple[str, str]]:
    found = {}
    for name, artifact in definitions.get("artifacts", {}).items():
        found[name] = (artifact["artifactType"]["schemaTitle"], artifact.get("description"))
    for name, parameter in definitions.get("parameters", {}).items():
        found[name] = (parameter["parameterType"], parameter.get("description"))
    return found


def test_each_input_and_output_keeps_its_type_and_its_description():
    for name, pinned in TYPES.items():
        inputs, outputs = (_typed(d) for d in _definitions(name))
        assert {k: t for k, (t, _) in inputs.items()} == pinned["inputs"], name
        assert {k: t for k, (t, _) in outputs.items()} == pinned["outputs"], name
        undescribed = [k for k, (_, text) in {**inputs, **outputs}.items() if not text]
        assert not undescribed, f"{name}: {undescribed} have no description"
