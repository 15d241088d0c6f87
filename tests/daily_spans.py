"""Daily spans of events for the window's tests: the days share one distribution until
SHIFTED_DAY, which drifts."""

import csv
import random
import re
from pathlib import Path

ROWS = 2_000
SHIFTED_DAY = 3


def write_day(folder: Path, seed: int, rows: int = ROWS) -> None:
    """A day of rows: x, a colour, z, and a label that follows z. The days share one
    distribution until SHIFTED_DAY, whose x is one standard deviation higher and whose
    colours are blue twice as often."""
    rng = random.Random(seed)
    shifted = seed == SHIFTED_DAY
    folder.mkdir(parents=True)
    with open(folder / "rows.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["x", "colour", "z", "label"])
        for _ in range(rows):
            x = rng.gauss(12 if shifted else 10, 2)
            colour = rng.choices(["red", "green", "blue"], [1, 1, 2 if shifted else 1])[0]
            z = rng.gauss(0, 1)
            writer.writerow([round(x, 4), colour, round(z, 4), int(z + rng.gauss(0, 0.3) > 0)])


def page_window_and_drift(report: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A report page's window, each span with its row's cells, and its drifted features."""
    window = re.search(r'<table id="window">(.*?)</table>', report, re.S).group(1)
    rows = re.findall(r'<tr data-span="(\d+)">(.*?)</tr>', window, re.S)
    return rows, re.findall(r'data-feature="(\w+)" data-drifted="true"', report)
