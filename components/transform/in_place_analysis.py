"""Transform without reading the data, when the preprocessing_fn holds no analyzer.

TFX's Transform has an in-place path: with no statistics to compute, no
examples to materialize and no analyzer in the ``preprocessing_fn``, it
traces the graph and writes it without a Beam pipeline over the data. It
takes that path only when no input feature feeds a stateful op, though, and
a vocabulary lookup is one: a graph whose vocabularies came from ExampleGen's
statistics (``statistics_analysis``) would read and decode every record for
nothing. Here the test is tf.Transform's own (``impl_helper.analyze_in_place``
refuses a graph with analyzers): no analyzer in the traced graph.
"""

from __future__ import annotations

from absl import logging
from tensorflow_transform import analyzer_nodes, impl_helper
from tfx.components.transform import executor as tfx_executor
from tfx.components.transform import labels
from tfx.components.util import examples_utils, tfxio_utils
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import io_utils

from tfrecord_pipelines.components.private_api import tfx_private

_KEYS = standard_component_specs
# The split TFX's Transform analyzes (its default splits_config).
ANALYZED_SPLIT = "train"


def has_analyzers(preprocessing_fn, typespecs) -> bool:
    """Whether the traced ``preprocessing_fn`` (TF2) holds a tf.Transform analyzer."""
    graph, _, _ = impl_helper.trace_preprocessing_function(
        preprocessing_fn, typespecs, use_tf_compat_v1=False
    )
    return bool(graph.get_collection(analyzer_nodes.TENSOR_REPLACEMENTS))


def _needs_only_analysis(output_dict, exec_properties) -> bool:
    """No statistics or materialized examples to write; TF2; TFX's default statistics
    options. (An analyzer cache to update stays empty: with no analyzer, there is nothing
    to cache, and tf.Transform reads an empty cache as one that serves no dataset.)"""
    return (
        bool(exec_properties.get(_KEYS.DISABLE_STATISTICS_KEY, 0))
        and not bool(exec_properties.get(_KEYS.FORCE_TF_COMPAT_V1_KEY, 0))
        and not exec_properties.get(_KEYS.STATS_OPTIONS_UPDATER_FN_KEY)
        and not output_dict.get(_KEYS.TRANSFORMED_EXAMPLES_KEY)
    )


def write_in_place(
    executor: tfx_executor.Executor, input_dict, output_dict, exec_properties
) -> bool:
    """Writes the transform graph in place if nothing needs the data; returns whether it did.

    Args:
      executor: TFX's Transform executor (it resolves the preprocessing_fn).
      input_dict: the executor's inputs (examples, schema).
      output_dict: its outputs (transform_graph, ...).
      exec_properties: its parameters, the custom_config as the
        preprocessing_fn will get it.

    Returns:
      True if the graph was written; False if TFX's Transform must run.
    """
    if not _needs_only_analysis(output_dict, exec_properties):
        return False
    examples = input_dict[_KEYS.EXAMPLES_KEY]
    schema_file = io_utils.get_only_uri_in_dir(
        artifact_utils.get_single_uri(input_dict[_KEYS.SCHEMA_KEY])
    )
    transform_output = artifact_utils.get_single_uri(output_dict[_KEYS.TRANSFORM_GRAPH_KEY])
    preprocessing_fn = tfx_private.preprocessing_fn(
        executor,
        {
            labels.MODULE_FILE: exec_properties.get(_KEYS.MODULE_FILE_KEY),
            labels.MODULE_PATH: exec_properties.get(_KEYS.MODULE_PATH_KEY),
            labels.PREPROCESSING_FN: exec_properties.get(_KEYS.PREPROCESSING_FN_KEY),
            labels.STATS_OPTIONS_UPDATER_FN: None,
            labels.CUSTOM_CONFIG: exec_properties.get(_KEYS.CUSTOM_CONFIG_KEY),
            labels.SCHEMA_PATH_LABEL: schema_file,
        },
        {labels.TRANSFORM_METADATA_OUTPUT_PATH_LABEL: transform_output},
    )
    payload_format, data_view_uri = tfxio_utils.resolve_payload_format_and_data_view_uri(examples)
    steps = tfx_private.InPlaceSteps()
    metadata = steps.read_metadata(payload_format, schema_file)
    pattern = io_utils.all_files_pattern(artifact_utils.get_split_uris(examples, ANALYZED_SPLIT)[0])
    dataset = steps.dataset(
        pattern, examples_utils.get_file_format(examples[0]), payload_format, data_view_uri
    )
    tfxio = steps.tfxio(dataset, metadata.schema)
    typespecs = tfxio.TensorAdapter().OriginalTypeSpecs()
    if has_analyzers(preprocessing_fn, typespecs):
        return False
    logging.info(
        "Transform: no analyzer left (ExampleGen's statistics gave their results); "
        "the graph is written in place, without reading the data."
    )
    steps.run_in_place(preprocessing_fn, metadata, typespecs, transform_output)
    return True
