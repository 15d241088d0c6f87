"""What a conversion's artifacts record of its span: TFX's ExampleGen driver writes the span
and ``{VERSION}`` on the Examples; the statistics carry the span as a property.

Below the window's room (``components.daily``): Transform's executor and the report read a
conversion's span without the window's rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfrecord_pipelines.components.keys import SPAN_PROPERTY, VERSION_PROPERTY

if TYPE_CHECKING:
    # Types only: the command line reads the window's rules before anything slow is imported.
    from tfx import types


def has_span(artifact: types.Artifact) -> bool:
    """Whether the artifact records a span (as a custom property, or TFX's property)."""
    return artifact.has_custom_property(SPAN_PROPERTY) or (
        SPAN_PROPERTY in artifact.PROPERTIES and artifact.has_property(SPAN_PROPERTY)
    )


def span_of(artifact: types.Artifact) -> int:
    """A conversion's span: TFX's ExampleGen driver writes it as a custom property; TFX's
    ExampleStatistics (and ExampleGen's statistics output) carry it as a property."""
    if artifact.has_custom_property(SPAN_PROPERTY):
        return artifact.get_int_custom_property(SPAN_PROPERTY)
    return artifact.span


def version_of(artifact: types.Artifact) -> int:
    """A conversion's ``{VERSION}`` (TFX's driver writes it as a custom property); -1 when
    its pattern has none."""
    if not artifact.has_custom_property(VERSION_PROPERTY):
        return -1
    return artifact.get_int_custom_property(VERSION_PROPERTY)


def conversion(properties: Mapping) -> tuple[int, int | None] | None:
    """(span, version) of a conversion's artifact, from ML Metadata's custom properties
    (version None when the pattern has no ``{VERSION}``); None if it records no span."""
    if SPAN_PROPERTY not in properties:
        return None
    version = properties[VERSION_PROPERTY].int_value if VERSION_PROPERTY in properties else None
    return properties[SPAN_PROPERTY].int_value, version
