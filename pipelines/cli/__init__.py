"""The command line: ``python -m tfrecord_pipelines`` and its sub-commands, above every runner."""
