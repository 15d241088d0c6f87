"""TFX's Transform executor, saying which spans it analyzed and which its analyzer cache served.

With an analyzer cache (``analyzer_cache`` in, ``updated_analyzer_cache``
out) tf.Transform reads only the datasets whose analysis the cache lacks;
TFX copies the cache of the others into the updated cache unchanged, and
logs no more than a count in Beam's metrics. This executor compares the two
caches afterwards, dataset by dataset (a train split of one Examples
artifact each): one whose cache entries were copied unchanged (the same
MANIFEST of entry keys) was served by the cache; any other was read and
analyzed. The result goes on the transform_graph artifact, so that a run's
summary can say what a daily run cost.

Given ExampleGen's statistics (the optional ``statistics`` input: one
artifact per span of the examples), it hands the train split's statistics
files to the ``preprocessing_fn`` through its custom_config
(``statistics_analysis.STATISTICS_PATH_KEY``): the built-in one takes the
analyzers' results from them where they are exact, merging a window's spans.
When no analyzer is left, the graph is written in place, without reading the
data (``in_place_analysis``); an analyzer cache it was to update is left
empty, as no analyzer ran. The integer features the schema marks categorical
go in the custom_config too (``preprocessing.CATEGORICAL_INTEGERS_KEY``).
"""

from __future__ import annotations

import hashlib
import json
import os

from absl import logging
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx.components.transform import executor as tfx_executor
from tfx.types import artifact_utils
from tfx.utils import io_utils, json_utils

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.categorical import categorical_integers
from tfrecord_pipelines.components.example_gen.statistics import STATISTICS_FILE
from tfrecord_pipelines.components.keys import ANALYSIS_KEY, STATISTICS_KEY
from tfrecord_pipelines.components.spans.artifacts import span_of
from tfrecord_pipelines.components.storage import filesystem
from tfrecord_pipelines.components.transform import in_place_analysis
from tfrecord_pipelines.components.transform.in_place_analysis import ANALYZED_SPLIT
from tfrecord_pipelines.components.transform.preprocessing import CATEGORICAL_INTEGERS_KEY
from tfrecord_pipelines.components.transform.statistics_analysis import STATISTICS_PATH_KEY

# tf.Transform's list of a dataset's cache entries, in the dataset's cache folder.
_MANIFEST = "MANIFEST"


def _dataset_folder(cache_uri: str, file_pattern: str) -> str | None:
    """A dataset's folder in a cache: TFX keys datasets by a digest of their file pattern."""
    digest = hashlib.sha256(file_pattern.encode()).hexdigest()
    if not filesystem.isdir(cache_uri):
        return None
    for name in filesystem.listdir(cache_uri):
        if name.rstrip("/").endswith(digest):
            return os.path.join(cache_uri, name.rstrip("/"))
    return None


def _manifest(folder: str | None) -> bytes | None:
    path = os.path.join(folder, _MANIFEST) if folder else None
    if not path or not filesystem.exists(path):
        return None
    with filesystem.open_file(path, "rb") as f:
        return f.read()


def cache_use(patterns: list[str], input_cache: str | None, output_cache: str | None) -> dict:
    """Which analyzed datasets (file patterns) the input cache served and which were read."""
    analysis = {"analyzed": [], "from_cache": []}
    for pattern in patterns:
        given = _manifest(_dataset_folder(input_cache, pattern)) if input_cache else None
        kept = _manifest(_dataset_folder(output_cache, pattern)) if output_cache else None
        served = given is not None and given == kept
        analysis["from_cache" if served else "analyzed"].append(pattern)
    return analysis


class Executor(tfx_executor.Executor):
    """TFX's Transform, recording the analyzed and the cached datasets."""

    def Do(self, input_dict, output_dict, exec_properties):  # noqa: N802 - TFX API
        """Runs TFX's Transform, then records what it analyzed (see the module's docstring)."""
        exec_properties = _with_categorical_integers(
            input_dict, _with_statistics(input_dict, exec_properties)
        )
        in_place = bool(input_dict.get(STATISTICS_KEY)) and in_place_analysis.write_in_place(
            self, input_dict, output_dict, exec_properties
        )
        if not in_place:
            super().Do(input_dict, output_dict, exec_properties)
        patterns = [
            io_utils.all_files_pattern(artifact_utils.get_split_uri([e], ANALYZED_SPLIT))
            for e in input_dict.get(keys.EXAMPLES_KEY, [])
        ]
        caches = {}
        for key, artifacts in (
            ("in", input_dict.get(keys.ANALYZER_CACHE_KEY)),
            ("out", output_dict.get(keys.UPDATED_ANALYZER_CACHE_KEY)),
        ):
            caches[key] = artifact_utils.get_single_uri(artifacts) if artifacts else None
        graph = artifact_utils.get_single_instance(output_dict[keys.TRANSFORM_GRAPH_KEY])
        analysis = cache_use(patterns, caches["in"], caches["out"])
        if in_place:
            analysis = {"analyzed": [], "from_cache": [], "from_statistics": patterns}
        graph.set_string_custom_property(ANALYSIS_KEY, json.dumps(analysis))


def _with_custom_config(exec_properties: dict, key: str, value) -> dict:
    """The exec properties with ``key`` set in their custom_config (TFX's JSON)."""
    name = keys.CUSTOM_CONFIG_KEY
    custom_config = json_utils.loads(exec_properties.get(name) or "null") or {}
    return {**exec_properties, name: json_utils.dumps({**custom_config, key: value})}


def _with_categorical_integers(input_dict, exec_properties: dict) -> dict:
    """The exec properties, with the integer features the schema marks categorical in the
    custom_config (the built-in preprocessing_fn maps them through a vocabulary)."""
    schema_file = io_utils.get_only_uri_in_dir(
        artifact_utils.get_single_uri(input_dict[keys.SCHEMA_KEY])
    )
    names = categorical_integers(io_utils.parse_pbtxt_file(schema_file, schema_pb2.Schema()))
    return (
        _with_custom_config(exec_properties, CATEGORICAL_INTEGERS_KEY, names)
        if names
        else exec_properties
    )


def _with_statistics(input_dict, exec_properties: dict) -> dict:
    """The exec properties, with the train split's statistics files (one per Examples
    artifact, matched by span) in the custom_config; unchanged when some span has none."""
    statistics = input_dict.get(STATISTICS_KEY)
    if not statistics:
        return exec_properties
    examples = input_dict.get(keys.EXAMPLES_KEY, [])
    spans = sorted(span_of(e) for e in examples)
    ordered = sorted(statistics, key=span_of)
    found = [span_of(s) for s in ordered]
    if found != spans:
        logging.warning(
            "Transform: the statistics of spans %s do not match the examples of spans %s; "
            "tf.Transform analyzes the data.",
            found,
            spans,
        )
        return exec_properties
    paths = [
        os.path.join(artifact_utils.get_split_uri([s], ANALYZED_SPLIT), STATISTICS_FILE)
        for s in ordered
    ]
    return _with_custom_config(exec_properties, STATISTICS_PATH_KEY, paths)
