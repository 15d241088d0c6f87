"""The command line's error for a bad argument."""


class UsageError(Exception):
    """A bad command-line argument; printed as one line, exit status 2."""
