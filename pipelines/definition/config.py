"""The pipeline's settings, validated when they are made."""

from __future__ import annotations

import dataclasses
import math
import re

from tfrecord_pipelines.components.data_source import DataSource, check_encoding
from tfrecord_pipelines.components.drift.thresholds import DEFAULT_MAX_JS, DEFAULT_MAX_LINF
from tfrecord_pipelines.components.example_gen.engines import ENGINES
from tfrecord_pipelines.components.example_gen.shard_compression import (
    default_compression,
    parse_compression,
)
from tfrecord_pipelines.components.example_gen.shard_plan import (
    ShardingOptions,
    requested_sharding,
)
from tfrecord_pipelines.components.example_gen.spark import session as spark_session
from tfrecord_pipelines.components.pusher.on_drift import BLOCK, ON_DRIFT
from tfrecord_pipelines.components.spans import check_span_settings
from tfrecord_pipelines.components.task import Task
from tfrecord_pipelines.components.trainer.options import TrainingOptions
from tfrecord_pipelines.definition.module_file import RUN_FN, ModuleFile

# Validation steps the Trainer runs after training.
DEFAULT_EVAL_STEPS = 20
_NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclasses.dataclass(frozen=True)
class EvaluationThresholds:
    """When the Evaluator blesses a model (and so when the Pusher pushes it).

    Attributes:
      min_accuracy: classification: the lowest accuracy on the eval split that
        blesses a model.
      max_mean_absolute_error: regression: the highest mean absolute error that
        blesses a model; None blesses any error (only the baseline comparison applies).
      min_auc: classification with known classes: the lowest AUC that blesses
        (of the positive class for two classes, else the classes' macro average);
        None: AUC does not bless.
      max_regression: where a previously blessed model exists (a baseline), the
        loss against it that is allowed, in the gated metric's units (accuracy
        for classification, mean absolute error for regression): a model is
        held back only when it is worse than this beyond the eval rows' noise
        (components/evaluator/paired_change.py).
    """

    min_accuracy: float = 0.6
    max_mean_absolute_error: float | None = None
    min_auc: float | None = None
    max_regression: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.min_accuracy <= 1.0:
            raise ValueError(f"min_accuracy must be within [0, 1], got {self.min_accuracy}.")
        if self.min_auc is not None and not 0.0 <= self.min_auc <= 1.0:
            raise ValueError(f"min_auc must be within [0, 1], got {self.min_auc}.")
        if not 0.0 <= self.max_regression < math.inf:
            raise ValueError(f"max_regression must be 0 or more, got {self.max_regression}.")
        if self.max_mean_absolute_error is not None and self.max_mean_absolute_error <= 0:
            raise ValueError(
                f"max_mean_absolute_error must be positive, got {self.max_mean_absolute_error}."
            )


# Per-class metrics cost the Evaluator per class; past this many classes, accuracy alone.
MAX_CLASSES_FOR_PER_CLASS_METRICS = 32


@dataclasses.dataclass(frozen=True)
class EvaluationOptions:
    """What the Evaluator reports beyond its thresholds.

    Attributes:
      num_classes: classification: the label's classes, when known; AUC,
        precision and recall are then reported per class and macro-averaged.
      slice_by: features whose every value gets its own metrics (one value
        per row, e.g. a region or a device type).
      positive_class: two classes: the label value whose AUC, precision and
        recall the summary leads with (the Evaluator finds its class id in
        the model's label vocabulary).
    """

    num_classes: int | None = None
    slice_by: tuple[str, ...] = ()
    positive_class: str | None = None

    def __post_init__(self):
        if self.num_classes is not None and self.num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {self.num_classes}.")
        if self.positive_class is not None and self.num_classes != 2:
            raise ValueError(
                "positive_class is for a label of two classes, not "
                f"{self.num_classes or 'unknown'}."
            )
        object.__setattr__(self, "slice_by", tuple(self.slice_by))


@dataclasses.dataclass(frozen=True)
class DriftOptions:
    """When a span's data has drifted from the previous span's, and what follows.

    Attributes:
      max_js: numeric features: the Jensen-Shannon divergence, on common bins,
        above which a feature has drifted (a schema's drift_comparator wins).
      max_linf: categorical features: the L-infinity distance of the values'
        shares above which a feature has drifted.
      on_drift: ``block``: a model trained on a drifted span is not pushed;
        ``warn``: it is, and the summary says the span drifted.
    """

    max_js: float = DEFAULT_MAX_JS
    max_linf: float = DEFAULT_MAX_LINF
    on_drift: str = BLOCK

    def __post_init__(self):
        for name in ("max_js", "max_linf"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name} must be within (0, 1], got {value}.")
        if self.on_drift not in ON_DRIFT:
            raise ValueError(
                f"on_drift must be one of {', '.join(ON_DRIFT)}, got {self.on_drift!r}."
            )


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    """How ShardedExampleGen writes the data's TFRecords.

    Attributes:
      num_readers: workers expected to read the data in parallel (about 10
        per training server): each split gets at least this many shards,
        data allowing, so reads overlap even when the data is smaller than
        one shard's target size. None: ``DEFAULT_NUM_READERS``, unless a
        shard size or count is set (that setting then wins).
      target_shard_bytes: bytes per shard file; None: the default 128 MiB.
      num_shards: shards per split, instead of a target size.
      compression: ``gzip`` (ISA-L's fast deflate), ``gzip:LEVEL`` (zlib's, 1
        fastest to 9 smallest) or ``none``; None: the format's default, GZIP for tabular data (text
        compresses several-fold) and none for images (encoded images shrink
        by a few percent under GZIP, which doubles the CPU of reading them).
      encoding: CSV: the files' text encoding (a Python codec name); rows
        that do not decode are quarantined.
      engine: ``beam`` (the runner of the pipeline's Beam arguments) or
        ``spark``: the same conversion on Spark, the engine tabular data at
        scale often lives on already.
      spark_master: Spark: local[N], local-cluster[N,CORES,MB], spark://...
        or k8s://... (None: ``local[*]``, every core of the machine).
      spark_conf: Spark: ``(key, value)`` session settings, e.g.
        ``(("spark.executor.memory", "4g"),)``.
    """

    num_readers: int | None = None
    target_shard_bytes: int | None = None
    num_shards: int | None = None
    compression: str | None = None
    encoding: str = "utf-8"
    engine: str = "beam"
    spark_master: str | None = None
    spark_conf: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        self.sharding()  # checks the three shard settings together
        if self.compression is not None:
            parse_compression(self.compression)
        check_encoding(self.encoding)
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}.")
        if self.spark_master:
            spark_session.check_master(self.spark_master)
        spark_session.parse_conf([f"{key}={value}" for key, value in self.spark_conf])

    def sharding(self) -> ShardingOptions:
        """The shard settings ExampleGen gets (``shard_plan.requested_sharding``)."""
        return requested_sharding(self.target_shard_bytes, self.num_shards, self.num_readers)

    def compression_for(self, source: DataSource) -> str:
        """The compression the shards of ``source`` get."""
        return self.compression or default_compression(source.is_images)


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """What the pipeline reads, learns and keeps.

    Attributes:
      name: pipeline name (lower-case letters, digits and '-'): names the
        metadata contexts, the pipeline root folder and the pushed model.
      source: the data folder (local path or gs:// / s3:// URI) and its
        format: CSV, Parquet or images.
      task: the label, the problem kind and the model's inputs.
      serving_dir: where the Pusher writes blessed models, one numbered
        version folder each.
      schema_path: a curated schema.pbtxt to import; None infers one from
        the data's statistics with SchemaGen.
      train_steps: training steps (batches of the Trainer's batch size);
        None: ``training.epochs`` passes over the training split, or, neither
        set, at least one epoch and at least 1,000 steps. A module file's
        run_fn gets 1,000 (it is told steps, never epochs).
      eval_steps: validation steps run by the Trainer after training.
      thresholds: what blesses a model.
      evaluation: per-class metrics and slices the Evaluator adds.
      training: the Trainer's batch sizes, cache, precision and image settings.
      ingest: the shards ExampleGen writes.
      module_file: the user's module file, whose preprocessing_fn and/or
        run_fn replace the built-in ones; None: the built-in ones.
      span: data in spans: the span to convert, by number (parsed where the
        user's text entered: ``spans.parse_span``); None: the latest on disk
        when the run starts.
      drift: data in spans: this span against the previous one (local runs).
      window: data in spans: Transform and the Trainer read this span (which
        ``span`` must then name) and the window - 1 spans before it, converted
        by earlier runs (ExampleGen converts one span per run) and analyzed
        once each through Transform's analyzer cache; None: this span alone.
      warm_start: data in spans (local runs): the Trainer starts from the
        latest blessed model trained on earlier spans when its inputs and
        vocabularies are this model's, and trains for the new data's share
        of the steps; False: always from scratch.
    """

    name: str
    source: DataSource
    task: Task
    serving_dir: str
    schema_path: str | None = None
    train_steps: int | None = None
    eval_steps: int = DEFAULT_EVAL_STEPS
    thresholds: EvaluationThresholds = dataclasses.field(default_factory=EvaluationThresholds)
    evaluation: EvaluationOptions = dataclasses.field(default_factory=EvaluationOptions)
    training: TrainingOptions = dataclasses.field(default_factory=TrainingOptions)
    ingest: IngestOptions = dataclasses.field(default_factory=IngestOptions)
    module_file: ModuleFile | None = None
    span: int | None = None
    window: int | None = None
    drift: DriftOptions = dataclasses.field(default_factory=DriftOptions)
    warm_start: bool = True

    def __post_init__(self):
        check_span_settings(self.source.root, self.source.spans, span=self.span, window=self.window)
        if self.window is not None and self.window < 1:
            raise ValueError(f"window must be at least 1 span, got {self.window}.")
        if self.span is not None and self.span < 0:
            raise ValueError(f"span must be a span number (0 or more), got {self.span}.")
        if not _NAME_PATTERN.match(self.name):
            raise ValueError(
                f"Pipeline name {self.name!r} must be 1-63 lower-case letters, digits or "
                "'-', starting and ending with a letter or digit."
            )
        for field in ("train_steps", "eval_steps"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise ValueError(f"{field} must be at least 1, got {value}.")
        if self.train_steps is not None and self.training.epochs is not None:
            raise ValueError("Give train_steps or epochs, not both.")
        if (
            self.training.epochs is not None
            and self.module_file
            and self.module_file.defines(RUN_FN)
        ):
            raise ValueError(
                f"epochs needs the built-in run_fn; {self.module_file.path}'s run_fn is told "
                "fn_args.train_steps: give train_steps instead."
            )
        if self.source.is_images and not self.task.image_feature:
            raise ValueError(
                f"{self.source.root} holds images: the task must name its image_feature."
            )
