"""The report's charts: matplotlib figures written as inline SVG.

Figures are made with ``matplotlib.figure.Figure`` rather than pyplot, so no
global state or GUI backend is involved; text stays text in the SVG (smaller,
searchable), and ids are salted the same way every time, so a report is
reproducible.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import matplotlib
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport

# One colour per split (and per train / validation curve), the same everywhere.
SPLIT_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "tfrecord-pipelines-report",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# Every chart is drawn and saved under the report's style, nothing else is.
_styled = matplotlib.rc_context(_STYLE)


def colour_of(index: int) -> str:
    """The colour of the index-th split or series."""
    return SPLIT_COLOURS[index % len(SPLIT_COLOURS)]


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    # No date in the SVG's metadata: the same data draws the same chart, whoever draws it.
    figure.savefig(
        buffer, format="svg", bbox_inches="tight", transparent=True, metadata={"Date": None}
    )
    text = buffer.getvalue()
    # Inline in HTML: the <svg> element alone, without the XML prolog and doctype.
    return text[text.index("<svg") :]


def _legend(axes) -> None:
    # Beside the plot, never over the bars or lines.
    axes.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height))
    figure.add_subplot()
    return figure


@_styled
def histogram(buckets_by_split: dict[str, list[tuple[float, float, float]]]) -> str:
    """Overlaid histograms, one per split, as the share of each split's values per bucket.

    Args:
      buckets_by_split: each split's (low, high, count) buckets, in order.
    """
    figure = _figure(3.2, 1.5)
    (axes,) = figure.axes
    for i, (split, buckets) in enumerate(buckets_by_split.items()):
        colour = colour_of(i)
        total = sum(count for _, _, count in buckets) or 1
        edges = [buckets[0][0]] + [high for _, high, _ in buckets]
        shares = [count / total for _, _, count in buckets]
        if edges[0] == edges[-1]:  # one value only: a bar of visible width
            edges = [edges[0] - 0.5] + [edges[0] + 0.5] * (len(edges) - 1)
        axes.stairs(shares, edges, label=split, color=colour, fill=True, alpha=0.35)
        axes.stairs(shares, edges, color=colour)
    axes.set_ylabel("share")
    _legend(axes)
    return _svg(figure)


@_styled
def top_values(shares_by_split: dict[str, dict[str, float]], limit: int = 8) -> str:
    """Grouped horizontal bars: each split's share of its commonest values."""
    values: list[str] = []
    for shares in shares_by_split.values():
        for value in shares:
            if value not in values:
                values.append(value)
    values = values[:limit]
    figure = _figure(3.2, 0.4 + 0.22 * len(values))
    (axes,) = figure.axes
    height = 0.8 / max(len(shares_by_split), 1)
    for i, (split, shares) in enumerate(shares_by_split.items()):
        colour = colour_of(i)
        positions = [row + i * height for row in range(len(values))]
        axes.barh(
            positions, [shares.get(v, 0.0) for v in values], height, label=split, color=colour
        )
    axes.set_yticks([row + 0.4 - height / 2 for row in range(len(values))])
    axes.set_yticklabels([v if len(v) <= 24 else v[:23] + "…" for v in values])
    axes.invert_yaxis()
    axes.set_xlabel("share")
    _legend(axes)
    return _svg(figure)


@_styled
def per_epoch(
    series: dict[str, list[float]], ylabel: str, line: tuple[float, str] | None = None
) -> str:
    """Lines over epochs, one per series (e.g. train and validation).

    Args:
      series: values by name, one per epoch from epoch 1.
      ylabel: what the values are.
      line: a horizontal reference (value, label), e.g. the input-bound threshold.
    """
    figure = _figure(4.6, 2.0)
    (axes,) = figure.axes
    for i, (name, values) in enumerate(series.items()):
        axes.plot(range(1, len(values) + 1), values, marker="o", label=name, color=colour_of(i))
    if line is not None:
        axes.axhline(line[0], color="#d62728", linestyle="--", linewidth=1, label=line[1])
    axes.set_xlabel("epoch")
    axes.set_ylabel(ylabel)
    axes.xaxis.get_major_locator().set_params(integer=True)
    _legend(axes)
    return _svg(figure)


@_styled
def shard_sizes(plan: ShardPlanReport) -> str:
    """One bar per shard file, split after split, against the planned shard size.

    Args:
      plan: ShardedExampleGen's ``shard_plan.json``. Its target is drawn only
        where it is within twice the largest shard (small data never reaches
        a 128 MiB target).
    """
    bytes_by_split = {
        name: [shard.bytes for shard in split.shards] for name, split in plan.splits.items()
    }
    target_bytes = plan.target_shard_bytes
    figure = _figure(4.6, 1.8)
    (axes,) = figure.axes
    largest = max((max(sizes) for sizes in bytes_by_split.values() if sizes), default=0)
    unit, scale = ("MiB", 1024 * 1024) if largest >= 1024 * 1024 else ("KiB", 1024)
    start = 0
    for i, (split, sizes) in enumerate(bytes_by_split.items()):
        positions = range(start, start + len(sizes))
        bars = axes.bar(positions, [b / scale for b in sizes], 0.8, label=split, color=colour_of(i))
        for number, bar in enumerate(bars):
            bar.set_gid(f"shard-{split}-{number}")  # an id in the SVG: one per shard file
        start += len(sizes) + 1
    if target_bytes <= 2 * largest:
        axes.axhline(
            target_bytes / scale, color="#d62728", linestyle="--", linewidth=1, label="target"
        )
    axes.set_xticks([])
    axes.set_xlabel("shard files")
    axes.set_ylabel(unit)
    _legend(axes)
    return _svg(figure)
