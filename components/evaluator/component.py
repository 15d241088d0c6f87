"""The Evaluator component: TFX's spec and outputs, the batched executor, the label's classes."""

from __future__ import annotations

import tensorflow_model_analysis as tfma
from tfx import types
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.types import standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter, ExecutionParameter
from tfx.utils import json_utils

from tfrecord_pipelines.components import keys, ui_artifacts
from tfrecord_pipelines.components.evaluator import executor
from tfrecord_pipelines.components.keys import LABEL_VOCABULARY_KEY, POSITIVE_CLASS_KEY


class EvaluatorSpec(standard_component_specs.EvaluatorSpec):
    """TFX's Evaluator spec plus the label vocabulary's file and the positive class."""

    PARAMETERS = {
        **standard_component_specs.EvaluatorSpec.PARAMETERS,
        LABEL_VOCABULARY_KEY: ExecutionParameter(type=str, optional=True),
        POSITIVE_CLASS_KEY: ExecutionParameter(type=str, optional=True),
        # Keys TFX's cache on this project's executor code (code_version.py).
        keys.CODE_VERSION_KEY: ExecutionParameter(type=str, optional=True),
    }
    OUTPUTS = {
        **standard_component_specs.EvaluatorSpec.OUTPUTS,
        keys.METRICS_KEY: ChannelParameter(type=ui_artifacts.Metrics),
        keys.CLASSIFICATION_METRICS_KEY: ChannelParameter(type=ui_artifacts.ClassificationMetrics),
        keys.EVALUATION_SUMMARY_KEY: ChannelParameter(type=ui_artifacts.Markdown),
    }


class Evaluator(base_beam_component.BaseBeamComponent):
    """TFX's Evaluator (same inputs, EvalConfig, outputs and blessing), run by ``executor``.

    Outputs: ``evaluation`` (ModelEvaluation, TFMA's format, with
    ``label_classes.json`` when the label's vocabulary is named) and
    ``blessing`` (ModelBlessing), as TFX's Evaluator.
    """

    SPEC_CLASS = EvaluatorSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(
        self,
        examples: types.BaseChannel,
        model: types.BaseChannel,
        eval_config: tfma.EvalConfig,
        baseline_model: types.BaseChannel | None = None,
        example_splits: list[str] | None = None,
        label_vocabulary: str | None = None,
        positive_class: str | None = None,
        code: str | None = None,
    ):
        """Evaluates ``model`` (against ``baseline_model``) on ``examples``.

        Args:
          examples: ExampleGen's examples; the eval split is read (or ``example_splits``).
          model: the Trainer's model, with serving and Transform signatures.
          eval_config: TFMA's configuration (``definition.evaluation.make_eval_config``).
          baseline_model: the model to compare with (change thresholds), if any.
          example_splits: the splits to evaluate on (default: eval).
          label_vocabulary: the file name of the label's vocabulary among the
            serving model's assets: class names are then written with the
            evaluation.
          positive_class: two classes: the label value binarized where the
            EvalConfig binarizes ``label_classes.POSITIVE_CLASS_ID``; needs
            ``label_vocabulary``.
          code: the executor code's version (``code_version.code_version``), so
            that a changed executor is not answered from TFX's cache.
        """
        if positive_class and not label_vocabulary:
            raise ValueError("positive_class needs label_vocabulary: the class ids are in it.")
        spec = EvaluatorSpec(
            examples=examples,
            model=model,
            baseline_model=baseline_model,
            eval_config=eval_config,
            example_splits=json_utils.dumps(example_splits),
            label_vocabulary=label_vocabulary,
            positive_class=positive_class,
            code_version=code,
            evaluation=types.Channel(type=standard_artifacts.ModelEvaluation),
            blessing=types.Channel(type=standard_artifacts.ModelBlessing),
            metrics=types.Channel(type=ui_artifacts.Metrics),
            classification_metrics=types.Channel(type=ui_artifacts.ClassificationMetrics),
            evaluation_summary=types.Channel(type=ui_artifacts.Markdown),
        )
        super().__init__(spec=spec)
