"""TFX's Evaluator, computing TFMA's metrics from batched predictions (``executor``)."""
