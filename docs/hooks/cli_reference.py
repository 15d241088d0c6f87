"""MkDocs hook: the command-line reference, written at build time from the argument parsers.

Each command's page section is argparse's own help for it, so the reference
cannot drift from the code. Importing the command line is cheap: it loads no
TensorFlow, TFX or Beam.
"""

from __future__ import annotations

import argparse
import os

from tfrecord_pipelines.cli import data_service, main
from tfrecord_pipelines.components.private_api.argparse_private import sub_commands

PAGE = "reference/cli.md"
# The line of the page that the generated sections replace.
MARKER = "<!-- cli-reference -->"
# The help text's width in the page, whatever the terminal building it.
_COLUMNS = "100"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Writes the parsers' help into the reference page (an MkDocs event)."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} has lost its {MARKER} line: the reference has nowhere to go.")
    return markdown.replace(MARKER, cli_reference())


def cli_reference() -> str:
    """The reference's Markdown: every program, command and option, from argparse's help."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _COLUMNS
    try:
        sections = [
            *_program(main.build_parser(), "The pipeline's commands."),
            *_program(
                data_service.build_parser(),
                "The tf.data service servers for `--data-service` "
                "(on Kubernetes: `k8s/components/data-service`).",
            ),
        ]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(sections) + "\n"


def _program(parser: argparse.ArgumentParser, summary: str) -> list[str]:
    lines = [f"## `{parser.prog}`", "", summary, "", *_help(parser)]
    for name, command in sub_commands(parser).items():
        lines += [f"### `{name}`", "", *_help(command)]
    return lines


def _help(parser: argparse.ArgumentParser) -> list[str]:
    return ["```text", parser.format_help().rstrip(), "```", ""]
