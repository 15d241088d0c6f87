"""Pipeline definitions, their local and Kubeflow runners, and the CLI.

``python -m pipelines run`` runs the pipeline locally; ``python -m pipelines
compile`` writes it as a Kubeflow Pipelines v2 spec. Both build the pipeline
with ``pipelines.definition.pipeline.create_pipeline``.
"""
