"""The change threshold against the baseline, judged by a paired test instead of two values.

TFMA's validator checks a change threshold on the difference of the two
models' values. For the metric the pipeline gates on (``paired_change``),
the batched Evaluator has both models' predictions on every row, so it
replaces that check on the whole eval split by the paired one, in TFMA's
ValidationResult itself: TFX's Pusher, this project's Pusher and the report
read the same verdict, and a held-back model's failure names the metric,
the difference and its interval.
"""

from __future__ import annotations

from absl import logging
from tensorflow_model_analysis.metrics import metric_specs
from tensorflow_model_analysis.proto import config_pb2

from tfrecord_pipelines.components.evaluator.paired_change import PAIRED_TESTS, PairedChange


def _gated(eval_config, candidate: str):
    """(diff MetricKey, GenericChangeThreshold) of the gated metric on the whole split, or None."""
    for key, thresholds in metric_specs.metric_thresholds_from_metrics_specs(
        eval_config.metrics_specs, eval_config=eval_config
    ).items():
        if (
            not key.is_diff
            or key.model_name != candidate
            or key.name not in PAIRED_TESTS
            or key.sub_key
            or key.aggregation_type
        ):
            continue
        for slice_spec, threshold in thresholds:
            overall = slice_spec is None or slice_spec == config_pb2.SlicingSpec()
            if (
                overall
                and isinstance(threshold, config_pb2.GenericChangeThreshold)
                and threshold.HasField("absolute")
                and not threshold.HasField("relative")
            ):
                return key, threshold
    return None


def _model_names(eval_config) -> tuple[str, str] | None:
    baseline = [spec.name for spec in eval_config.model_specs if spec.is_baseline]
    candidate = [spec.name for spec in eval_config.model_specs if not spec.is_baseline]
    if len(baseline) != 1 or len(candidate) != 1:
        return None
    return candidate[0], baseline[0]


def judge(validation, eval_config, outputs: dict) -> PairedChange | None:
    """Replaces TFMA's check of the gated change threshold by the paired test, in place.

    Args:
      validation: TFMA's ValidationResult of the evaluation (changed in place).
      eval_config: the EvalConfig, its defaults filled in.
      outputs: each model's ``ModelOutputs`` on the eval rows, by model name.

    Returns:
      The paired comparison; None without a baseline or a gated change threshold.
    """
    names = _model_names(eval_config)
    gated = _gated(eval_config, names[0]) if names else None
    if gated is None:
        return None
    key, threshold = gated
    candidate, baseline = (outputs[name] for name in names)
    allowed = abs(threshold.absolute.value)
    change = PAIRED_TESTS[key.name](candidate, baseline, max_regression=allowed)
    proto_key = key.to_proto()
    for per_slice in list(validation.metric_validations_per_slice):
        if per_slice.slice_key.single_slice_keys or per_slice.HasField("cross_slice_key"):
            continue
        kept = [f for f in per_slice.failures if f.metric_key != proto_key]
        del per_slice.failures[:]
        per_slice.failures.extend(kept)
        if not kept:
            validation.metric_validations_per_slice.remove(per_slice)
    if change.regressed:
        overall = (
            next(
                (
                    s
                    for s in validation.metric_validations_per_slice
                    if not s.slice_key.single_slice_keys and not s.HasField("cross_slice_key")
                ),
                None,
            )
            or validation.metric_validations_per_slice.add()
        )
        failure = overall.failures.add()
        failure.metric_key.CopyFrom(proto_key)
        failure.metric_value.double_value.value = change.difference
        failure.metric_threshold.change_threshold.CopyFrom(threshold)
        failure.message = change.sentence()
    validation.validation_ok = not (
        validation.metric_validations_per_slice
        or validation.missing_slices
        or validation.missing_thresholds
    )
    logging.info("Against the baseline: %s.", change.sentence())
    return change
