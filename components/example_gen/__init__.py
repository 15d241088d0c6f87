"""ShardedExampleGen: CSV, Parquet and image folders into planned TFRecord shards."""

from components.example_gen.component import Quarantine, ShardedExampleGen
from components.example_gen.shard_plan import ShardingOptions, parse_size, plan_shards

__all__ = ["Quarantine", "ShardedExampleGen", "ShardingOptions", "parse_size", "plan_shards"]
