"""ShardedExampleGen on Spark: the same converters and shard plan, run as Spark tasks.

``session`` builds the SparkSession from a master and ``--spark-conf``;
``convert_stage`` runs the converters in Spark tasks (units in, spill files
and quarantine out); ``shard_stage`` deals the spilled records to the planned
shards and joins them; ``engine`` drives the three for one conversion.
"""
