"""tfrecord_pipelines: the pipeline's definition, its local and Kubeflow runners, report, CLI.

This folder is the package ``tfrecord_pipelines``; ``components/`` is
``tfrecord_pipelines.components`` (see setup.py). ``python -m
tfrecord_pipelines run`` runs the pipeline locally, ``python -m
tfrecord_pipelines compile`` writes it as a Kubeflow Pipelines v2 spec; both
build it with ``tfrecord_pipelines.definition.pipeline.create_pipeline``.
"""

if __name__ != "tfrecord_pipelines":
    # Imported by its folder's name (from the repository's root): the same files
    # under a second name would be second copies of every module and class.
    raise ImportError(
        f"{__name__!r} is a folder of tfrecord-pipelines, not an import name: use "
        "tfrecord_pipelines (python -m tfrecord_pipelines ...)"
    )
