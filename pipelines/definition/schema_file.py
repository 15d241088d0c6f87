"""Checks on a curated schema file, made before any pipeline work starts."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from tfrecord_pipelines.components.storage import filesystem


def check_schema(
    schema_path: str, label: str, inputs: Iterable[str] = (), slice_by: Iterable[str] = ()
) -> schema_pb2.Schema:
    """Returns the schema, after checking that the file parses and has the label, the
    inputs and the features the metrics are sliced by.

    Args:
      schema_path: a schema.pbtxt (local path or bucket URI).
      label: the label feature.
      inputs: the model's inputs, where the task names them.
      slice_by: the features the Evaluator slices the metrics by.

    Raises:
      ValueError: naming the file and the feature that is not in it.
    """
    if not filesystem.exists(schema_path):
        raise ValueError(f"Schema file {schema_path} does not exist.")
    schema = schema_pb2.Schema()
    try:
        with filesystem.open_text(schema_path) as f:
            text_format.Parse(f.read(), schema)
    except text_format.ParseError as e:
        raise ValueError(f"Schema file {schema_path} is not a valid schema: {e}") from e
    names = [feature.name for feature in schema.feature]
    roles = [
        ("Label column", label),
        *(("Input feature", i) for i in inputs),
        *(("Slice feature", s) for s in slice_by),
    ]
    for role, name in roles:
        if name not in names:
            raise ValueError(
                f"{role} {name!r} is not a feature of schema {schema_path}; "
                f"features are: {', '.join(names)}."
            )
    return schema
