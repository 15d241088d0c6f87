"""What Kubeflow Pipelines' UI checks in the metadata of the artifacts it draws, and what the
KFP SDK writes: the layout the project's UI outputs are held to.

The UI (frontend ``MetricsVisualizations.tsx``, kubeflow/pipelines at
7b70c7b) draws a ``system.ClassificationMetrics`` confusion matrix when its
``confusionMatrix`` holds ``annotationSpecs`` of ``{displayName: string}``
and as many ``rows`` of ``{row: number[]}`` as there are annotation specs,
each row as long; a ROC curve from ``confidenceMetrics``, a list of
``{confidenceThreshold, recall, falsePositiveRate}``. The SDK's
``log_confusion_matrix`` and ``log_roc_curve`` write that layout; the
checks below compare with what the SDK writes for the same numbers.

Read with the UI's own code or its rules, the same frontend:

- ``render_markdown``: a system.Markdown page as MarkdownViewer.tsx renders it, by the
  same library at the frontend's locked version (markdown-to-jsx 7.7.17, React 19.2.4:
  ``tests/ui_readers``, which ``make ui-readers`` installs from its lock), with the
  viewer's option ``disableParsingRawHTML``; ``shown_text`` is what a reader sees of it.
- ``metrics_table_pages``: a system.Metrics artifact's table as MetricsVisualizations.tsx
  (ScalarMetricsSection) and PagedTable.tsx build it: one row per custom property but
  ``display_name`` and the reserved ``store_session_info`` (ReservedArtifactProperties.ts),
  its value JSON-encoded, sorted by name ascending (a stable sort comparing strings with
  JavaScript's ``<``: UTF-16 code units, Python's order on these names), 10 rows a page.
- ``compare_scalar_table``: the Compare-runs page's Scalar Metrics table of several runs'
  system.Metrics artifacts (lib/v2/CompareUtils.ts, getScalarTableProps): one row per
  property name any run has (jspb's Map.getEntryList gives each artifact's names sorted),
  ordered by how many runs have it (a stable sort), one column per run, not paged.
"""

from __future__ import annotations

import html
import json
import re
import subprocess

from kfp import dsl

from conftest import REPO_ROOT

UI_READERS = REPO_ROOT / "tests" / "ui_readers"
ROWS_PER_PAGE = 10
_HIDDEN_PROPERTIES = ("display_name", "store_session_info")


def check_confusion_matrix(matrix: dict) -> tuple[list[str], list[list[float]]]:
    """Asserts the UI's checks and the SDK's layout; returns (categories, rows)."""
    assert set(matrix) == {"annotationSpecs", "rows"}, matrix.keys()
    categories = [spec["displayName"] for spec in matrix["annotationSpecs"]]
    assert all(isinstance(c, str) for c in categories)
    rows = [row["row"] for row in matrix["rows"]]
    assert len(rows) == len(categories) and all(len(row) == len(categories) for row in rows)
    assert all(isinstance(n, int | float) for row in rows for n in row)
    sdk = dsl.ClassificationMetrics()
    sdk.log_confusion_matrix(categories, rows)
    assert sdk.metadata["confusionMatrix"] == matrix
    return categories, rows


def check_roc_curve(points: list) -> list[dict]:
    """Asserts the SDK's layout of a ROC curve and that it is one; returns the points."""
    sdk = dsl.ClassificationMetrics()
    sdk.log_roc_curve(
        [p["falsePositiveRate"] for p in points],
        [p["recall"] for p in points],
        [p["confidenceThreshold"] for p in points],
    )
    assert sdk.metadata["confidenceMetrics"] == points
    ordered = sorted(points, key=lambda p: p["confidenceThreshold"])
    # A higher threshold never finds more positives, right or wrong.
    for low, high in zip(ordered, ordered[1:], strict=False):
        assert high["recall"] <= low["recall"] + 1e-9
        assert high["falsePositiveRate"] <= low["falsePositiveRate"] + 1e-9
    return ordered


def area_under(points: list[dict]) -> float:
    """The area under a ROC curve's points, by trapezoids, from (0, 0) to (1, 1) as TFMA's AUC.

    TFMA's plot stops at the threshold 1.0, where negatives the model scored exactly 1.0 still
    count; its AUC goes on to a threshold above every score, the curve's (0, 0).
    """
    found = [(p["falsePositiveRate"], p["recall"]) for p in points]
    curve = sorted([(0.0, 0.0), (1.0, 1.0), *found])
    pairs = zip(curve, curve[1:], strict=False)
    return sum((x2 - x1) * (y1 + y2) / 2 for (x1, y1), (x2, y2) in pairs)


def render_markdown(text: str) -> str:
    """TEXT as KFP's Markdown viewer renders it, as HTML."""
    if not (UI_READERS / "node_modules" / "markdown-to-jsx").is_dir():
        raise RuntimeError("KFP's Markdown renderer is not installed: run `make ui-readers`")
    ran = subprocess.run(
        ["node", str(UI_READERS / "render_markdown.mjs")],
        input=text, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    if ran.returncode:
        raise RuntimeError(f"markdown-to-jsx failed: {ran.stderr.strip()[-2000:]}")
    return ran.stdout


def shown_text(rendered: str) -> str:
    """What a reader sees of rendered HTML: its text, tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", " ", rendered))


def metrics_table_pages(properties: dict) -> list[list[tuple[str, str]]]:
    """The UI's Metrics table of a system.Metrics artifact's custom PROPERTIES, page by
    page: (name, value as shown) rows."""
    rows = sorted(
        (name, json.dumps(value)) for name, value in properties.items()
        if name not in _HIDDEN_PROPERTIES
    )  # fmt: skip
    return [rows[i : i + ROWS_PER_PAGE] for i in range(0, len(rows), ROWS_PER_PAGE)]


def compare_scalar_table(runs: list[dict]) -> list[tuple[str, list[str]]]:
    """The Compare page's Scalar Metrics rows for RUNS' system.Metrics custom properties:
    (name, one JSON value per run, "" where a run has none)."""
    cells: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for column, properties in enumerate(runs):
        for name in sorted(properties):
            if name in _HIDDEN_PROPERTIES:
                continue
            cells.setdefault(name, [""] * len(runs))[column] = json.dumps(properties[name])
            counts[name] = counts.get(name, 0) + 1
    return sorted(cells.items(), key=lambda row: -counts[row[0]])
