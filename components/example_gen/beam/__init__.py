"""ExampleGen on Beam: the engine-neutral converters and shard writer run as Beam transforms.

``sources`` reads a source plan's units and converts them; ``shards`` writes
the converted records into sized shards. ``spark/`` runs the same steps on Spark.
"""
