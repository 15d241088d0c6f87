"""Which integer features a schema marks categorical: codes and ids, whose values name
categories rather than measure an amount (``int_domain { is_categorical: true }``).

ExampleGen counts their values in its statistics and the built-in
``preprocessing_fn`` maps them through a vocabulary, as it does strings.
"""

from __future__ import annotations

from tensorflow_metadata.proto.v0 import schema_pb2


def categorical_integers(schema: schema_pb2.Schema | None) -> list[str]:
    """The INT features ``schema`` marks categorical, in its order; none without a schema."""
    if schema is None:
        return []
    return [
        f.name for f in schema.feature if f.type == schema_pb2.INT and f.int_domain.is_categorical
    ]
