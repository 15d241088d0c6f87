"""CuratedSchemaGen: a curated schema.pbtxt imported, and imported again when it is edited."""

__all__ = ["CuratedSchemaGen", "CuratedSchemaGenSpec", "file_digest"]


def __getattr__(name: str):
    # Loaded on first use, as the other rooms' components: the component imports TFX.
    if name in __all__:
        from tfrecord_pipelines.components.curated_schema import component

        return getattr(component, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
