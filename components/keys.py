"""Every component's input, output and parameter names, and the artifact properties others read.

Defined once, as TFX's ``tfx.types.standard_component_specs`` defines its
components' names: TFX's own names are TFX's (tests/test_keys.py holds them
to it), and this project's components keep them wherever they mean the same
artifact. Nothing here imports TFX, so the pipeline's definition, the report,
the KFP components and the command line name a channel without importing an
executor.
"""

# TFX's folder of each split inside an artifact: Split-train/, Split-eval/.
SPLIT_FOLDER_PREFIX = "Split-"

# Artifacts, as TFX's components name them.
EXAMPLES_KEY = "examples"
STATISTICS_KEY = "statistics"
SCHEMA_KEY = "schema"
ANOMALIES_KEY = "anomalies"
TRANSFORM_GRAPH_KEY = "transform_graph"
TRANSFORMED_EXAMPLES_KEY = "transformed_examples"
ANALYZER_CACHE_KEY = "analyzer_cache"
UPDATED_ANALYZER_CACHE_KEY = "updated_analyzer_cache"
MODEL_KEY = "model"
MODEL_RUN_KEY = "model_run"
BASE_MODEL_KEY = "base_model"
BASELINE_MODEL_KEY = "baseline_model"
EVALUATION_KEY = "evaluation"
BLESSING_KEY = "blessing"
MODEL_BLESSING_KEY = "model_blessing"
PUSHED_MODEL_KEY = "pushed_model"
# The pages KFP's UI shows for a component (system.Markdown): ExampleGen's, the Evaluator's;
# named apart, as the UI's graph and artifact list show the output's name alone.
EXAMPLES_SUMMARY_KEY = "examples_summary"
EVALUATION_SUMMARY_KEY = "evaluation_summary"
# Every component that runs this project's code: its version, so that caching notices new code.
CODE_VERSION_KEY = "code_version"

# TFX's other component and parameter names this project's executors read.
CUSTOM_CONFIG_KEY = "custom_config"
EVAL_CONFIG_KEY = "eval_config"
EXAMPLE_SPLITS_KEY = "example_splits"
INPUT_BASE_KEY = "input_base"
INPUT_CONFIG_KEY = "input_config"
MODULE_FILE_KEY = "module_file"
MODULE_PATH_KEY = "module_path"
OUTPUT_CONFIG_KEY = "output_config"
PUSH_DESTINATION_KEY = "push_destination"
RANGE_CONFIG_KEY = "range_config"

# TFX's artifact properties: a span's number and version (ExampleGen's driver), the
# Evaluator's verdict (1 blessed) and the component it came from.
SPAN_PROPERTY = "span"
VERSION_PROPERTY = "version"
BLESSED_PROPERTY = "blessed"
CURRENT_COMPONENT_ID_KEY = "current_component_id"
COMPONENT_ID_PROPERTY = "component_id"

# ShardedExampleGen: TFX's examples, with their statistics and quarantine beside them.
QUARANTINE_KEY = "quarantine"
SOURCE_FORMAT_KEY = "source_format"
TARGET_SHARD_BYTES_KEY = "target_shard_bytes"
NUM_READERS_KEY = "num_readers"
NUM_SHARDS_KEY = "num_shards"
COMPRESSION_KEY = "compression"
MAX_BAD_FRACTION_KEY = "max_bad_fraction"
LABEL_KEY = "label_key"
# The label names classes (classification): ExampleGen's statistics count an integer
# label's values too, as the custom statistic below (as they do a schema's categorical
# integers), so that Transform reads no record.
CATEGORICAL_LABEL_KEY = "categorical_label"
VALUE_COUNTS_STATISTIC = "tfrecord_pipelines.value_counts"
BLOCK_BYTES_KEY = "block_bytes"
ENCODING_KEY = "encoding"
DELIMITER_KEY = "delimiter"
ENGINE_KEY = "engine"
SPARK_MASTER_KEY = "spark_master"
SPARK_CONF_KEY = "spark_conf"
EVAL_ROWS_KEY = "eval_rows"
# The span to convert ("" the latest); TFX's driver sets "span" to the one it resolved.
REQUESTED_SPAN_KEY = "requested_span"
# The Examples artifact's custom property: the shard plan and counts of its conversion.
SHARD_PLAN_KEY = "shard_plan"
# ... and its counts: on the Examples, the records written and quarantined; on the
# quarantine, the records it holds.
RECORDS_WRITTEN_PROPERTY = "records_written"
QUARANTINED_COUNT_PROPERTY = "quarantined_count"
QUARANTINE_COUNT_PROPERTY = "count"
# ... and the task it converted for: the label and the problem (classification when the
# label names classes), which Transform, the Trainer and the Evaluator read from their
# examples when they are not given (the KFP components).
LABEL_PROPERTY = "label"
PROBLEM_PROPERTY = "problem"
# Beam's tagged output of a source's read that carries the examples (beside the quarantine's).
EXAMPLES_TAG = "examples"

# Transform: ExampleGen's statistics in (optional); on the graph, what it analyzed:
# {"analyzed": [...], "from_cache": [...], "from_statistics": [...]} (file patterns).
ANALYSIS_KEY = "analysis"

# Evaluator: the label vocabulary's file among the model's assets and the positive class
# of two, and the outputs KFP's UI draws (beside its summary page).
LABEL_VOCABULARY_KEY = "label_vocabulary"
POSITIVE_CLASS_KEY = "positive_class"
METRICS_KEY = "metrics"
CLASSIFICATION_METRICS_KEY = "classification_metrics"

# Pusher: the span's drift (DriftCheck's anomalies, optional), what to do about it, and when
# the staged model is published; on the pushed model, the drift that blocked it.
DRIFT_KEY = "drift"
ON_DRIFT_KEY = "on_drift"
PUBLISH_KEY = "publish"
# ... its value that leaves the staged model to the orchestrator, once the push is recorded.
PUBLISH_AFTER_METADATA = "after_metadata"
BLOCKED_PROPERTY = "blocked_by_drift"
# ... and where the model waits until it is published.
STAGED_PATH_PROPERTY = "staged_path"

# DriftCheck: this span's statistics against the previous span's.
PREVIOUS_STATISTICS_KEY = "previous_statistics"
# ... and on its anomalies: the span compared with, each feature's measures (JSON) and the
# drifted features (comma-separated).
PREVIOUS_SPAN_PROPERTY = "previous_span"
DRIFT_REPORT_PROPERTY = "drift"
DRIFTED_PROPERTY = "drifted"
MAX_JS_KEY = "max_js"
MAX_LINF_KEY = "max_linf"

# CuratedSchemaGen: the imported schema's digest, its cache key.
SCHEMA_DIGEST_KEY = "schema_digest"

# Reporter (Kubeflow's last task): its page, its training figures for KFP's scalar table, and
# what it is told beside the artifacts.
REPORT_KEY = "report"
TRAINING_METRICS_KEY = "training"
PIPELINE_NAME_KEY = "pipeline_name"
IMAGES_KEY = "images"

# SpanWindow and RecordRun (Kubeflow's daily state): the state's folder, the window's length in
# spans and the data's span pattern; the window's examples and their statistics (its other
# outputs have TFX's names).
STATE_DIR_KEY = "state_dir"
NUM_SPANS_KEY = "num_spans"
DATA_PATTERN_KEY = "data_pattern"
WINDOW_KEY = "window"
WINDOW_STATISTICS_KEY = "window_statistics"
# An artifact that stands for others (0 or more, TFX's JSON of each): Kubeflow's backend hands
# a task one artifact per input, and the entry point puts these in its place.
MEMBERS_PROPERTY = "members"
# On a conversion's Examples on Kubeflow: a digest of ExampleGen's settings and schema, which a
# re-run of the day must match to reuse the conversion from the daily state.
CONVERSION_KEY_PROPERTY = "conversion_key"

# The pipeline's node ids: ML Metadata records each node's executions under its id, by
# which the Resolvers, the daily state, the runners and the report find earlier runs.
SCHEMA_IMPORT_ID = "ImportSchemaGen"
EXAMPLE_GEN_ID = "ShardedExampleGen"
EXAMPLE_VALIDATOR_ID = "ExampleValidator"
TRANSFORM_ID = "Transform"
TRAINER_ID = "Trainer"
EVALUATOR_ID = "Evaluator"
PUSHER_ID = "Pusher"
DRIFT_CHECK_ID = "DriftCheck"
SPAN_WINDOW_ID = "SpanWindow"
RECORD_RUN_ID = "RecordRun"
# TFX's ML Metadata context type of a pipeline's node (``{pipeline}.{node id}``).
NODE_CONTEXT = "node"
