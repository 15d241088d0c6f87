"""The CSV dialect's options, shared by run, compile, submit and convert."""

from __future__ import annotations

import argparse

# Names a shell user can type without quoting.
_NAMED = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|"}


def delimiter_argument(text: str) -> str:
    """argparse type: one character, or its name (``tab``, ``semicolon``, ``comma``, ``pipe``)."""
    from tfrecord_pipelines.components.data_source.csv_dialect import check_delimiter

    delimiter = _NAMED.get(text.lower(), text)
    try:
        check_delimiter(delimiter)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} Names: {', '.join(_NAMED)}.") from None
    return delimiter


def add_delimiter_argument(parser) -> None:
    """Adds ``--delimiter`` to a parser or argument group."""
    parser.add_argument(
        "--delimiter",
        type=delimiter_argument,
        help="CSV: the field delimiter, a character or tab, semicolon, comma, pipe (default: "
        "sniffed from the first rows among , ; tab |; tab for .tsv)",
    )
