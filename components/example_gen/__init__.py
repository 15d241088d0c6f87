"""ShardedExampleGen: CSV, Parquet and image folders into planned TFRecord shards."""

__all__ = ["Quarantine", "ShardedExampleGen", "ShardingOptions", "parse_size", "plan_shards"]


def __getattr__(name: str):
    # Loaded on first use: the CLI checks sizes with parse_size before anything
    # imports TFX, whose import the component classes pay.
    if name in ("Quarantine", "ShardedExampleGen"):
        from tfrecord_pipelines.components.example_gen import component

        return getattr(component, name)
    if name in __all__:
        from tfrecord_pipelines.components.example_gen import shard_plan

        return getattr(shard_plan, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
