"""argparse's private names: a parser's actions, which hold its sub-commands and options."""

from __future__ import annotations

import argparse

LIBRARY = "python"
VERSION = "3.11"
CHECKED = {
    "argparse._ActionsContainer.__init__": "7594cb77f48677f3",
    "argparse._SubParsersAction": "4c95212a364ff2e3",
}


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """A parser's actions: its options and positional arguments, and its sub-parsers."""
    return parser._actions


def sub_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's sub-commands by name (argparse has no public way to list them)."""
    for action in actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
