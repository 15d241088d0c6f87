"""The evaluation settings of run, compile and submit, checked before anything slow runs.

What the Evaluator would refuse after training is refused here, in one line:
a threshold on a metric the task's model has not got, a slice feature the
data does not hold, a positive class that is not one of the label's classes
as the model will name them (``label_values.class_name``).
"""

from __future__ import annotations

import argparse

from tfrecord_pipelines.cli.usage import UsageError
from tfrecord_pipelines.definition.config import EvaluationOptions, EvaluationThresholds


def add_evaluation_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the thresholds that bless a model, the positive class and the slices."""
    group = parser.add_argument_group("evaluation")
    group.add_argument(
        "--min-accuracy",
        type=float,
        help="classification: accuracy that blesses "
        f"(default: {EvaluationThresholds.min_accuracy})",
    )
    group.add_argument("--max-mae", type=float, help="regression: mean absolute error that blesses")
    group.add_argument(
        "--min-auc",
        type=float,
        help="classification: AUC that blesses (two classes: the positive class's; "
        "more: the classes' macro average)",
    )
    group.add_argument(
        "--max-regression",
        type=float,
        metavar="X",
        help="against the last blessed model: the loss allowed, absolute, in accuracy "
        "(classification) or mean absolute error (regression); a model is held back only "
        "when it is worse than this beyond the eval rows' noise (a paired test; default: 0)",
    )
    group.add_argument(
        "--positive-class",
        help="two classes: the label value whose AUC, precision and recall lead the "
        "summary (default: the second of the two values in sorted order, e.g. 'yes' of "
        "no/yes, '1' of 0/1)",
    )
    group.add_argument(
        "--slice-by",
        action="append",
        default=[],
        metavar="COLUMN",
        help="also evaluate the model on each value of this column (repeatable); the report "
        "shows the metrics per value",
    )


def evaluation_options(
    args: argparse.Namespace, source, task, slice_by: tuple[str, ...], schema, module_file
) -> EvaluationOptions:
    """The label's classes (reading the label column) and the positive class of two.

    Args:
      args: the parsed arguments.
      source: the checked DataSource.
      task: the Task.
      slice_by: the checked ``slice_features``.
      schema: the curated schema (it types the label), or None.
      module_file: the user's ModuleFile, or None.

    Raises:
      UsageError: for a positive class the label does not have, or cannot be told.
    """
    classes = _classes(source, task, schema, args.encoding)
    return EvaluationOptions(
        slice_by=slice_by,
        num_classes=len(classes) if classes else None,
        positive_class=_positive_class(args, task, classes, module_file),
    )


def slice_features(args: argparse.Namespace, source) -> tuple[str, ...]:
    """The --slice-by features, each a single-valued feature of the records.

    Raises:
      UsageError: naming a feature the data does not hold, or that holds lists.
    """
    from tfrecord_pipelines.components import data_source
    from tfrecord_pipelines.components.data_source import image_folder

    if not args.slice_by:
        return ()  # no second read of every file's header for nothing
    if source.is_images:
        allowed = {
            image_folder.CLASS_NAME_KEY: False,
            image_folder.HEIGHT_KEY: False,
            image_folder.WIDTH_KEY: False,
            image_folder.CHANNELS_KEY: False,
        }
    else:
        allowed = data_source.tabular_columns(source)
    for name in args.slice_by:
        if name not in allowed:
            raise UsageError(
                f"--slice-by {name}: not a feature of {source.root}; features are: "
                f"{', '.join(allowed)}."
            )
        if allowed[name]:
            raise UsageError(f"--slice-by {name}: the column holds lists; slices need one value.")
    return tuple(dict.fromkeys(args.slice_by))


def _classes(source, task, schema, encoding: str) -> list[str] | None:
    """The label's classes, named as the model will name them, for per-class metrics and
    the positive class: the class names (images), or the label column's distinct values
    as the label's type writes them (tabular; reads that column, and checks it serves the
    task). None for regression or too many classes."""
    from tfrecord_pipelines.components.data_source import image_folder
    from tfrecord_pipelines.components.data_source.label_values import (
        check_label_serves,
        label_column_type,
    )
    from tfrecord_pipelines.components.example_gen.quarantine_limit import (
        DEFAULT_MAX_BAD_FRACTION,
    )
    from tfrecord_pipelines.definition.config import MAX_CLASSES_FOR_PER_CLASS_METRICS

    if source.is_images:
        classes = image_folder.class_names(source.root)
    else:
        column_type = (
            label_column_type(source, task.label, schema, encoding)
            if task.is_classification
            else None
        )
        # Reads the label column: after the checks that read a header or a schema only.
        classes = check_label_serves(
            source,
            task.label,
            task.problem,
            max_classes=MAX_CLASSES_FOR_PER_CLASS_METRICS + 1,
            column_type=column_type,
            encoding=encoding,
            # The run's ExampleGen keeps the default limit (definition/nodes.py).
            max_bad_fraction=DEFAULT_MAX_BAD_FRACTION,
        ).classes
    if not task.is_classification or len(classes) > MAX_CLASSES_FOR_PER_CLASS_METRICS:
        return None
    return sorted(classes)


def thresholds_from_args(args: argparse.Namespace, task) -> EvaluationThresholds:
    """The thresholds that bless a model (the config's defaults where none is given).

    Raises:
      UsageError: for a threshold on a metric the task's model has not got.
    """
    kind = task.problem
    if args.max_regression is not None and not 0 <= args.max_regression < float("inf"):
        raise UsageError(f"--max-regression {args.max_regression}: the loss allowed is 0 or more.")
    wrong = (
        [("--max-mae", args.max_mae)]
        if task.is_classification
        else [("--min-accuracy", args.min_accuracy), ("--min-auc", args.min_auc)]
    )
    for flag, value in wrong:
        if value is not None:
            fits = "--min-accuracy and --min-auc" if task.is_classification else "--max-mae"
            raise UsageError(
                f"{flag} {value}: {task.label!r} is a {kind} label and its model has no such "
                f"metric; a {kind} model is blessed by {fits}."
            )
    given = {
        "min_accuracy": args.min_accuracy,
        "max_mean_absolute_error": args.max_mae,
        "min_auc": args.min_auc,
        "max_regression": args.max_regression,
    }
    return EvaluationThresholds(**{k: v for k, v in given.items() if v is not None})


def _positive_class(
    args: argparse.Namespace, task, classes: list[str] | None, module_file
) -> str | None:
    """Two classes: the one --positive-class names, else the second in sorted order."""
    from tfrecord_pipelines.definition.module_file import PREPROCESSING_FN

    if args.positive_class is not None and module_file and module_file.defines(PREPROCESSING_FN):
        raise UsageError(
            f"--positive-class {args.positive_class}: the preprocessing_fn of "
            f"{module_file.path} makes the label, so the Evaluator cannot find a class's id "
            "in it; leave --positive-class out."
        )
    if args.min_auc is not None and not classes:
        raise UsageError("--min-auc needs a classification label of at most 32 known classes.")
    if not classes or len(classes) != 2:
        if args.positive_class is not None:
            count = f"{len(classes)} classes" if classes else "no known classes"
            raise UsageError(
                f"--positive-class is for a label of two classes; {task.label!r} has {count}."
            )
        return None
    if args.positive_class is None:
        return classes[1]
    if args.positive_class not in classes:
        raise UsageError(
            f"--positive-class {args.positive_class!r} is not a value of {task.label!r}; "
            f"it has {classes[0]!r} and {classes[1]!r}."
        )
    return args.positive_class
