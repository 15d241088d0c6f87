"""The code version keys TFX's cache: it follows the source a component runs, only that."""

import json
import shutil

from conftest import REPO_ROOT
from tfrecord_pipelines.components import code_version as versions
from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.curated_schema.component import file_digest
from tfrecord_pipelines.components.data_source import DataSource
from tfrecord_pipelines.components.keys import SCHEMA_DIGEST_KEY
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.definition.config import PipelineConfig


def test_code_version_follows_the_modules_a_component_imports_and_only_those(tmp_path):
    root = tmp_path / "components"
    shutil.copytree(REPO_ROOT / "components", root)

    def version(module):
        return versions.code_version.__wrapped__(module, root)

    before = {m: version(m) for m in (versions.TRAINER_CODE, versions.TRANSFORM_CODE)}
    # Same sources elsewhere: same versions.
    assert before[versions.TRAINER_CODE] == versions.code_version(versions.TRAINER_CODE)
    (root / "notes.txt").write_text("not code")
    # A module the Trainer imports through another (run -> dataset -> image_stage).
    stage = root / "trainer" / "image_stage.py"
    stage.write_text(stage.read_text() + "\n# a changed line\n")
    assert version(versions.TRAINER_CODE) != before[versions.TRAINER_CODE]
    assert version(versions.TRANSFORM_CODE) == before[versions.TRANSFORM_CODE]
    # A module both import: both change.
    task = root / "task.py"
    task.write_text(task.read_text() + "\n# a changed line\n")
    assert version(versions.TRANSFORM_CODE) != before[versions.TRANSFORM_CODE]


def test_components_running_project_code_carry_their_versions_and_the_schema_digest():
    from tfrecord_pipelines.definition.pipeline import create_pipeline

    schema = str(REPO_ROOT / "schemas" / "penguins" / "schema.pbtxt")
    config = PipelineConfig(
        name="penguins",
        source=DataSource(str(REPO_ROOT / "data" / "penguins"), "csv"),
        task=Task(label="species"),
        serving_dir="/serving",
        schema_path=schema,
    )
    pipeline = create_pipeline(config, "/tmp/root", compare_to_latest_blessed=True)
    by_id = {c.id: c for c in pipeline.components}
    assert by_id["ShardedExampleGen"].exec_properties["code_version"] == versions.code_version(
        versions.EXAMPLE_GEN_CODE
    )
    for node, module in (
        ("Transform", versions.TRANSFORM_CODE),
        ("Trainer", versions.TRAINER_CODE),
        ("Pusher", versions.PUSHER_CODE),
    ):
        custom_config = json.loads(by_id[node].exec_properties["custom_config"])
        assert custom_config[keys.CODE_VERSION_KEY] == versions.code_version(module), node
    assert by_id["ImportSchemaGen"].exec_properties[SCHEMA_DIGEST_KEY] == file_digest(schema)
    assert pipeline.enable_cache
