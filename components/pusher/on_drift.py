"""What the Pusher does with a model trained on a span that drifted (no TFX imported here)."""

BLOCK = "block"
WARN = "warn"
ON_DRIFT = (BLOCK, WARN)
