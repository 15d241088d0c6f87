"""What a run's record says of a node that failed."""

import json

from ml_metadata.proto import metadata_store_pb2

from tfrecord_pipelines.local.run_record import NodeExecution

# What TFX 1.16's LocalDagRunner recorded of a Resolver whose strategy left out an input key.
TRACEBACK = """Traceback (most recent call last):
  File "node_inputs_resolver.py", line 386, in _resolve_input_graph_ref
    (partition, _filter_live(result[input_graph_ref.key]))
KeyError: 'model_blessing'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "inputs_utils.py", line 76, in resolve_input_artifacts
tfx.orchestration.portable.input_resolution.exceptions.InputResolutionError: Error while \
resolving inputs for warm_start_model_resolver
"""


def _failed(result: dict | None) -> NodeExecution:
    execution = metadata_store_pb2.Execution(last_known_state=metadata_store_pb2.Execution.FAILED)
    if result is not None:
        execution.custom_properties["__execution_result__"].string_value = json.dumps(result)
    return NodeExecution("warm_start_model_resolver", execution, {})


def test_a_failed_execution_names_the_first_error_of_its_traceback():
    node = _failed({"resultMessage": TRACEBACK, "code": 2})
    assert node.state == "failed"
    assert node.error == "KeyError: 'model_blessing'"


def test_a_failed_execution_without_a_record_has_no_error_text():
    assert _failed(None).error == ""
    assert _failed({"resultMessage": "killed"}).error == "killed"
