"""The daily features on Kubeflow Pipelines: SpanWindow and RecordRun, over the daily state in
the object store (``spans.daily_state``)."""
