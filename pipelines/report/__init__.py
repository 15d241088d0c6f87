"""What a local run did: the summary ``run`` prints and one self-contained HTML page per run.

``python -m tfrecord_pipelines report`` (and ``run``, when it finishes) reads a run's
executions from ML Metadata and its artifacts (statistics, anomalies, schema,
the shard plan, the quarantine, the Trainer's TensorBoard logs and input
stall, TFMA's evaluation) and writes them as one HTML file: inline CSS, charts
as inline SVG, thumbnails as data URIs, so it shows everything with no network.

On Kubeflow Pipelines, which runs no command after a run, the compiled
pipeline's last task (``component.Reporter``) writes the same page from its
input artifacts, as a ``system.HTML`` output that KFP's UI shows.
"""
