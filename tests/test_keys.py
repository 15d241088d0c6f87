"""Every component's names, defined once in components/keys.py: TFX's own are TFX's, and each
component's spec names only keys defined there."""

import pytest
from tfx.types import standard_component_specs

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.curated_schema.component import CuratedSchemaGenSpec
from tfrecord_pipelines.components.drift.component import DriftCheckSpec
from tfrecord_pipelines.components.evaluator.component import EvaluatorSpec
from tfrecord_pipelines.components.example_gen.component import ShardedExampleGenSpec
from tfrecord_pipelines.components.pusher.component import PusherSpec
from tfrecord_pipelines.components.transform.component import TransformSpec
from tfrecord_pipelines.report.component import ReporterSpec

DEFINED = {
    name: value for name, value in vars(keys).items() if name.isupper() and isinstance(value, str)
}


def test_tfx_names_are_tfxs():
    tfx_names = {
        name: value
        for name, value in vars(standard_component_specs).items()
        if name.endswith("_KEY") and isinstance(value, str)
    }
    shared = set(DEFINED) & set(tfx_names)
    assert len(shared) >= 15
    assert {name: DEFINED[name] for name in shared} == {name: tfx_names[name] for name in shared}


@pytest.mark.parametrize(
    "spec",
    [
        ShardedExampleGenSpec,
        TransformSpec,
        EvaluatorSpec,
        PusherSpec,
        DriftCheckSpec,
        CuratedSchemaGenSpec,
        ReporterSpec,
    ],
)
def test_each_component_names_only_keys_defined_once(spec):
    names = {*spec.PARAMETERS, *spec.INPUTS, *spec.OUTPUTS}
    parent = spec.__mro__[1]
    inherited = {*getattr(parent, "PARAMETERS", {}), *getattr(parent, "INPUTS", {})}
    inherited |= set(getattr(parent, "OUTPUTS", {}))
    # Its own names are keys.py's; those it inherits from TFX's spec are TFX's.
    assert names - inherited <= set(DEFINED.values())
    assert names - inherited, "a spec of its own adds names"


def test_tfx_artifact_properties_are_tfxs():
    from tfx.components.evaluator import constants
    from tfx.components.example_gen import utils

    assert keys.SPAN_PROPERTY == utils.SPAN_PROPERTY_NAME
    assert keys.VERSION_PROPERTY == utils.VERSION_PROPERTY_NAME
    assert keys.BLESSED_PROPERTY == constants.ARTIFACT_PROPERTY_BLESSED_KEY
