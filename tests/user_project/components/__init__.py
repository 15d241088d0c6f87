"""A user's own ``components`` package."""
