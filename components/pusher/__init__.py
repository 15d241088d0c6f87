"""A Pusher executor that never shows a serving folder a half-copied or unrecorded model."""
