"""CuratedSchemaGen: TFX's ImportSchemaGen whose cache key covers the schema's content.

ImportSchemaGen's only parameter is the schema file's path, so with caching
on, a schema edited in place would be reused unread, and everything that
reads it with it. This component adds the file's digest as a parameter.
"""

from __future__ import annotations

import hashlib

from tfx import types
from tfx.components.schema_gen.import_schema_gen.component import ImportSchemaGen
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ExecutionParameter

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.storage import filesystem


def file_digest(path: str) -> str | None:
    """The SHA-256 of a file's bytes, or None when it cannot be read from here."""
    if not filesystem.exists(path):
        return None
    with filesystem.open_file(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


class CuratedSchemaGenSpec(standard_component_specs.ImportSchemaGenSpec):
    """ImportSchemaGen's spec plus the schema file's digest."""

    PARAMETERS = {
        **standard_component_specs.ImportSchemaGenSpec.PARAMETERS,
        # Part of TFX's cache key only; the executor reads the file itself.
        keys.SCHEMA_DIGEST_KEY: ExecutionParameter(type=str, optional=True),
    }


class CuratedSchemaGen(ImportSchemaGen):
    """Imports a curated schema.pbtxt; an edited file is imported again."""

    SPEC_CLASS = CuratedSchemaGenSpec

    def __init__(self, schema_file: str):
        """Builds the component.

        Args:
          schema_file: the schema.pbtxt. Where it cannot be read when the
            pipeline is built (a path inside a container image), only its path
            keys the cache, as in ImportSchemaGen.
        """
        spec = CuratedSchemaGenSpec(
            schema_file=schema_file,
            schema_digest=file_digest(schema_file),
            schema=types.Channel(type=standard_artifacts.Schema),
        )
        # ImportSchemaGen.__init__ would build its own spec, without the digest.
        super(ImportSchemaGen, self).__init__(spec=spec)
