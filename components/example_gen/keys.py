"""ShardedExampleGen's parameter and channel names, defined once."""

SOURCE_FORMAT_KEY = "source_format"
TARGET_SHARD_BYTES_KEY = "target_shard_bytes"
NUM_READERS_KEY = "num_readers"
NUM_SHARDS_KEY = "num_shards"
COMPRESSION_KEY = "compression"
MAX_BAD_FRACTION_KEY = "max_bad_fraction"
LABEL_KEY = "label_key"
SCHEMA_KEY = "schema"
QUARANTINE_KEY = "quarantine"
STATISTICS_KEY = "statistics"
# The page KFP's UI shows (system.Markdown): shards, quarantine, feature statistics.
SUMMARY_KEY = "summary"
CODE_VERSION_KEY = "code_version"
BLOCK_BYTES_KEY = "block_bytes"
ENCODING_KEY = "encoding"
ENGINE_KEY = "engine"
SPARK_MASTER_KEY = "spark_master"
SPARK_CONF_KEY = "spark_conf"
EVAL_ROWS_KEY = "eval_rows"
# The span to convert ("" the latest); TFX's driver sets "span" to the one it resolved.
REQUESTED_SPAN_KEY = "requested_span"

# The engines that convert: Beam (the runner of beam_pipeline_args) or Spark.
BEAM = "beam"
SPARK = "spark"
ENGINES = (BEAM, SPARK)

# The shard plan and counts each conversion writes beside its Split-* folders.
SHARD_PLAN_FILE = "shard_plan.json"
# ... and the same plan as the Examples artifact's custom property.
SHARD_PLAN_KEY = "shard_plan"
