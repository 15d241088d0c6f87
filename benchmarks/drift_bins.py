"""Drift measures on TFDV's own bins against common bins: noise and signal by span size.

Two samples of one distribution (no drift) and a shifted one, at several
span sizes: an integer count (Poisson(3), then 3.3), a normal number (mean
moved by 0.3 standard deviations) and a category (one share moved by 0.1).
Prints TFDV's Jensen-Shannon divergence on each span's own equal-width bins,
on the drift check's common bins (``drift.common_bins``), and TFDV's
L-infinity distance for the category. Not a test: it prints figures.

    .venv/bin/python benchmarks/drift_bins.py [--rows 400 10000 100000]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _spans(rows: int, seed: int):
    import numpy as np
    import pandas as pd
    import tensorflow_data_validation as tfdv

    from tfrecord_pipelines.components.example_gen.statistics import QUANTILE_BUCKETS

    rng = np.random.default_rng(seed)
    options = tfdv.StatsOptions(num_quantiles_histogram_buckets=QUANTILE_BUCKETS)

    def span(shift: bool):
        shares = [0.4, 0.3, 0.3] if shift else [0.5, 0.3, 0.2]
        frame = pd.DataFrame(
            {
                "count": rng.poisson(3.3 if shift else 3.0, rows).astype(float),
                "number": rng.normal(0.3 if shift else 0.0, 1.0, rows),
                "category": rng.choice(["x", "y", "z"], rows, p=shares),
            }
        )
        return tfdv.generate_statistics_from_dataframe(frame, options)

    return span(False), span(False), span(True)


def _measures(current, previous, common: bool) -> dict[str, float]:
    import tensorflow_data_validation as tfdv

    from tfrecord_pipelines.components.drift.common_bins import on_common_bins
    from tfrecord_pipelines.components.drift.executor import drift_report, with_comparators

    schema = with_comparators(tfdv.infer_schema(previous), max_js=1.0, max_linf=1.0)
    if common:
        current, previous = on_common_bins(current, previous)
    report = drift_report(tfdv.validate_statistics(current, schema, previous_statistics=previous))
    return {name: r["value"] for name, r in report.items()}


def main() -> None:
    """Prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[400, 10_000, 100_000])
    args = parser.parse_args()
    print("| rows | measure | feature | same distribution | shifted | shifted / same |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows in args.rows:
        before, again, shifted = _spans(rows, seed=rows)
        for bins, common in (("JS, own bins", False), ("JS, common bins", True)):
            same = _measures(again, before, common)
            moved = _measures(shifted, before, common)
            for feature in ("count", "number"):
                ratio = moved[feature] / same[feature] if same[feature] else float("inf")
                print(
                    f"| {rows:,} | {bins} | {feature} | {same[feature]:.4f} | "
                    f"{moved[feature]:.4f} | {ratio:.1f} |"
                )
        same, moved = _measures(again, before, True), _measures(shifted, before, True)
        ratio = moved["category"] / same["category"] if same["category"] else float("inf")
        print(
            f"| {rows:,} | L-infinity | category | {same['category']:.4f} | "
            f"{moved['category']:.4f} | {ratio:.1f} |"
        )


if __name__ == "__main__":
    main()
