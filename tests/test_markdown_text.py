"""What the data names, on a Markdown page KFP's UI renders, shows as written (issue 91,
finding 2): read with the UI's own renderer (``kfp_ui_layout.render_markdown``)."""

from __future__ import annotations

import pytest

from kfp_ui_layout import render_markdown, shown_text
from tfrecord_pipelines.components.markdown_text import markdown_text

NAMES = [
    "sparse_categorical_accuracy",
    "bill_length_mm",
    "__private__",
    "a*b*c",
    "pipe|in|name",
    "[link](http://x)",
    "<b>bold</b>",
    "back\\slash",
    "`tick`",
    "# not a heading",
    "auc (Chinstrap)",
    "1. not a list",
    "~~struck~~",
]


@pytest.fixture(scope="module")
def rendered() -> str:
    rows = "".join(f"| {markdown_text(name)} | 1 |\n" for name in NAMES)
    items = "".join(f"- {markdown_text(name)}\n" for name in NAMES)
    return render_markdown(f"| name | value |\n| --- | --- |\n{rows}\n{items}")


def test_every_name_shows_as_written_in_a_table_and_a_list(rendered):
    cells = [c.strip() for c in shown_text(rendered).split("  ") if c.strip()]
    for name in NAMES:
        assert cells.count(name) == 2, (name, rendered)


def test_nothing_the_data_names_becomes_markup(rendered):
    for tag in ("<em>", "<strong>", "<a ", "<code>", "<del>", "<h1>", "<ol>", "<b>"):
        assert tag not in rendered, tag
    assert rendered.count("<tr>") == len(NAMES) + 1


def test_unescaped_the_ui_reads_underscores_as_emphasis():
    """The finding itself, as the UI renders a name written plain."""
    assert "sparse<em>categorical</em>accuracy" in render_markdown(
        "| m |\n| --- |\n| sparse_categorical_accuracy |\n"
    )
