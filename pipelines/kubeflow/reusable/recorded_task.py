"""The label and the problem, given once: to ShardedExampleGen, which records them on its
examples (``keys.LABEL_PROPERTY``, ``keys.PROBLEM_PROPERTY``).

Transform, the Trainer and the Evaluator read the task from their examples when their
``label`` and ``problem`` parameters are left empty. Given to them as well, each must be
the one recorded: a Trainer told another label than its examples were converted for
would train on a column whose rows were never checked.
"""

from __future__ import annotations

from typing import Any

from kfp.pipeline_spec import pipeline_spec_pb2

from tfrecord_pipelines.components import keys
from tfrecord_pipelines.components.task import CLASSIFICATION
from tfrecord_pipelines.kubeflow.reusable import parameter_names as names

# The components whose task comes from their examples.
READ_FROM_EXAMPLES = ("transform", "trainer", "evaluator")
_RECORDED = ((names.LABEL, keys.LABEL_PROPERTY), (names.PROBLEM, keys.PROBLEM_PROPERTY))


def task_parameters(
    parameters: dict[str, Any], executor_input: pipeline_spec_pb2.ExecutorInput
) -> dict[str, Any]:
    """``parameters`` with the label and problem filled from what the examples record.

    Raises:
      ValueError: one line: a given label or problem that is not the recorded
        one, or no label given or recorded.
    """
    examples = executor_input.inputs.artifacts.get(keys.EXAMPLES_KEY)
    first = examples.artifacts[0] if examples and examples.artifacts else None
    fields = first.metadata.fields if first is not None else {}
    task = dict(parameters)
    for parameter, recorded_as in _RECORDED:
        given = parameters.get(parameter) or ""
        recorded = fields[recorded_as].string_value if recorded_as in fields else ""
        if given and recorded and given != recorded:
            raise ValueError(
                f"{parameter} {given!r} is not the {recorded!r} ShardedExampleGen recorded on "
                f"the examples at {first.uri}: give the {parameter} once, to ShardedExampleGen, "
                "or the same here."
            )
        task[parameter] = given or recorded
    if not task[names.LABEL]:
        raise ValueError(
            "No label: give it to ShardedExampleGen, which records it on its examples, "
            "or as this component's label."
        )
    task[names.PROBLEM] = task[names.PROBLEM] or CLASSIFICATION
    return task
