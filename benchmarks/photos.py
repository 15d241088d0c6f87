"""Photo-like JPEGs for the image benchmarks, cut from photographs that ship in installed packages.

Three photographs are in the lock's packages (matplotlib's grace_hopper.jpg,
scikit-learn's china.jpg and flower.jpg). Each generated image is a window
cut from one of them, resized so that its longer side is 256-640 px,
flipped left to right half the time, and encoded at a JPEG quality of
60-95 (one in ten progressive): real JPEG statistics at the sizes users'
photos are trained at, from no download. Its class is its photograph and
the horizontal band (top, middle, bottom) the window's centre lies in:
nine classes, ``class0`` to ``class8``, that a small network can tell apart.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import random
from pathlib import Path

CLASSES = 9
_BANDS = 3


def _photographs() -> list[Path]:
    import matplotlib
    import sklearn

    sklearn_images = Path(sklearn.__file__).parent / "datasets" / "images"
    return [
        Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg",
        sklearn_images / "china.jpg",
        sklearn_images / "flower.jpg",
    ]


_SOURCES: list = []


def _load_sources() -> None:
    from PIL import Image

    _SOURCES[:] = [Image.open(path).convert("RGB") for path in _photographs()]


def _photo(index: int, seed: int) -> tuple[int, bytes]:
    """The class and JPEG bytes of photo ``index``."""
    from PIL import Image

    rng = random.Random(seed * 1_000_003 + index)
    label = index % CLASSES
    source = _SOURCES[label // _BANDS]
    band = label % _BANDS
    width = int(source.width * rng.uniform(0.45, 0.9))
    height = int(source.height * rng.uniform(0.3, 0.45))
    centre_y = int(source.height * (band + rng.uniform(0.25, 0.75)) / _BANDS)
    top = min(max(0, centre_y - height // 2), source.height - height)
    left = rng.randint(0, source.width - width)
    window = source.crop((left, top, left + width, top + height))
    longer = rng.randint(256, 640)
    scale = longer / max(width, height)
    window = window.resize(
        (max(1, round(width * scale)), max(1, round(height * scale))), Image.BILINEAR
    )
    if rng.random() < 0.5:
        window = window.transpose(Image.FLIP_LEFT_RIGHT)
    encoded = io.BytesIO()
    window.save(encoded, "JPEG", quality=rng.randint(60, 95), progressive=rng.random() < 0.1)
    return label, encoded.getvalue()


def _write(task: tuple[str, int, int]) -> int:
    folder, index, seed = task
    label, encoded = _photo(index, seed)
    with open(os.path.join(folder, f"class{label}", f"{index:07d}.jpg"), "wb") as f:
        f.write(encoded)
    return len(encoded)


def write_photos(folder: str, count: int, seed: int = 7) -> int:
    """Writes ``count`` photo-like JPEGs into class folders on every core; returns their bytes.

    The same ``count`` and ``seed`` give the same files.
    """
    for label in range(CLASSES):
        os.makedirs(os.path.join(folder, f"class{label}"), exist_ok=True)
    tasks = [(folder, index, seed) for index in range(count)]
    with multiprocessing.get_context("fork").Pool(
        os.cpu_count(), initializer=_load_sources
    ) as pool:
        return sum(pool.imap_unordered(_write, tasks, chunksize=256))
