"""TFX's private names: the Transform executor's steps that its in-place path is made of.

``transform.in_place_analysis`` writes the transform graph without reading
the data, by TFX's own in-place path, when ExampleGen's statistics left no
analyzer; TFX takes that path only for graphs without stateful ops, so the
steps are called here, one by one, as TFX's ``TransformProcessor`` calls them.
"""

from __future__ import annotations

from tfx.components.transform import executor as tfx_executor

LIBRARY = "tfx"
VERSION = "1.16.0"
CHECKED = {
    "tfx.components.transform.executor.Executor._GetPreprocessingFn": "a2f8149279e1c740",
    "tfx.components.transform.executor.TransformProcessor._ReadMetadata": "0a9c81c0f84ac28c",
    "tfx.components.transform.executor.TransformProcessor._MakeDatasetList": "6bbe3e35a1b975f7",
    "tfx.components.transform.executor.TransformProcessor._CreateTFXIO": "2dd76c1baaf02874",
    "tfx.components.transform.executor.TransformProcessor._RunInPlaceImpl": "f2398cab255797ec",
}


def preprocessing_fn(executor: tfx_executor.Executor, inputs: dict, outputs: dict):
    """The preprocessing_fn TFX's Transform executor resolves from its labels (module
    file, module path or function name, custom_config)."""
    return executor._GetPreprocessingFn(inputs, outputs)


class InPlaceSteps:
    """TFX's ``TransformProcessor``, step by step."""

    def __init__(self):
        self._processor = tfx_executor.TransformProcessor()

    def read_metadata(self, payload_format, schema_file: str):
        """The dataset metadata of ``schema_file``."""
        return self._processor._ReadMetadata(payload_format, schema_file)

    def dataset(self, pattern: str, file_format, payload_format, data_view_uri):
        """The analyzed dataset of ``pattern``'s files (TFX's ``_Dataset``)."""
        (dataset,) = self._processor._MakeDatasetList(
            [pattern], [file_format], payload_format, data_view_uri, True
        )
        return dataset

    def tfxio(self, dataset, schema):
        """The TFXIO that reads ``dataset`` with ``schema``."""
        return self._processor._CreateTFXIO(dataset, schema)

    def run_in_place(self, preprocessing_fn, metadata, typespecs, output_path: str) -> None:
        """Traces ``preprocessing_fn`` (TF2) and writes the transform graph to ``output_path``."""
        self._processor._RunInPlaceImpl(preprocessing_fn, False, metadata, typespecs, output_path)
