"""Kubeflow Pipelines v2: compiling, submitting and the tasks' entry point."""
