"""A synthetic 15-column table with a yes/no label (or 1/0: ``--binary-label``), of any
number of rows, as CSV.

The label depends on the features through a noisy logistic model, so a model
can learn it but never perfectly, and no column is a copy of it: 8 float
columns on different scales, 3 integer columns and 4 categorical columns
(5 to 1,000 values). About 110 bytes a row: 1.5 million rows make about
170 MB, 10 million about 1.1 GB. ``--wide`` adds 4 columns the label does
not depend on (2 floats, 2 categories of 8 and 2,000 values): 19 feature
columns and the label, 20 in all.

    .venv/bin/python benchmarks/scale_table.py --rows 1500000 --out output/table-1.5m
"""

from __future__ import annotations

import argparse
import os

import numpy as np

ROWS_PER_FILE = 2_000_000
CHUNK_ROWS = 250_000
FLOATS = [f"f{i}" for i in range(8)]
INTS = ["i0", "i1", "i2"]
CATEGORIES = {"c0": 5, "c1": 20, "c2": 100, "c3": 1000}
LABEL = "label"
COLUMNS = [*FLOATS, *INTS, *CATEGORIES, LABEL]
WIDE_FLOATS = ["f8", "f9"]
WIDE_CATEGORIES = {"w0": 8, "w1": 2000}


def columns(wide: bool = False) -> list[str]:
    """The header of a table, plain or wide."""
    return COLUMNS + (WIDE_FLOATS + list(WIDE_CATEGORIES) if wide else [])


def _chunk(
    rng: np.random.Generator, rows: int, wide: bool = False, binary: bool = False
) -> list[np.ndarray]:
    floats = rng.normal(size=(rows, len(FLOATS))) * np.array([1, 10, 100, 0.1, 5, 50, 2, 1000])
    ints = np.stack(
        [rng.integers(0, 10, rows), rng.integers(0, 500, rows), rng.poisson(30, rows)], axis=1
    )
    codes = {name: rng.integers(0, size, rows) for name, size in CATEGORIES.items()}
    # Fixed effects (seeded apart from the rows) so every chunk shares one model.
    effects = np.random.default_rng(7)
    weights = effects.normal(size=len(FLOATS)) / np.array([1, 10, 100, 0.1, 5, 50, 2, 1000])
    logit = floats @ weights + 0.3 * (ints[:, 0] - 4.5) + 0.002 * (ints[:, 1] - 250)
    for name, size in CATEGORIES.items():
        logit += effects.normal(scale=0.8, size=size)[codes[name]]
    label = rng.random(rows) < 1 / (1 + np.exp(-logit))
    columns = [np.char.mod("%.5f", floats[:, i]) for i in range(len(FLOATS))]
    columns += [ints[:, i].astype(str) for i in range(len(INTS))]
    columns += [np.char.add(f"{name}_", codes[name].astype(str)) for name in CATEGORIES]
    columns.append(np.where(label, "1", "0") if binary else np.where(label, "yes", "no"))
    if wide:
        columns += [np.char.mod("%.4f", rng.normal(size=rows) * 3) for _ in WIDE_FLOATS]
        columns += [
            np.char.add(f"{name}_", rng.integers(0, size, rows).astype(str))
            for name, size in WIDE_CATEGORIES.items()
        ]
    return columns


def write_table(
    rows: int, folder: str, seed: int = 0, wide: bool = False, binary: bool = False
) -> list[str]:
    """Writes ``rows`` rows as CSV files of at most 2 million rows (the label 1/0 when
    ``binary``, else yes/no); returns their paths."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths, written = [], 0
    while written < rows:
        path = os.path.join(folder, f"part-{len(paths):03d}.csv")
        in_file = min(ROWS_PER_FILE, rows - written)
        with open(path, "w") as f:
            f.write(",".join(columns(wide)) + "\n")
            done = 0
            while done < in_file:
                n = min(CHUNK_ROWS, in_file - done)
                lines = _chunk(rng, n, wide, binary)
                joined = lines[0]
                for column in lines[1:]:
                    joined = np.char.add(np.char.add(joined, ","), column)
                f.write("\n".join(joined.tolist()) + "\n")
                done += n
        paths.append(path)
        written += in_file
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--out", required=True, help="folder for the CSV files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wide", action="store_true", help="20 columns instead of 16")
    parser.add_argument("--binary-label", action="store_true", help="the label 1/0, not yes/no")
    args = parser.parse_args()
    paths = write_table(args.rows, args.out, args.seed, args.wide, args.binary_label)
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{args.rows:,} rows, {size / 1e6:.0f} MB in {len(paths)} file(s): {args.out}")


if __name__ == "__main__":
    main()
