"""The command line: ``python -m pipelines`` and its sub-commands, above every runner."""
