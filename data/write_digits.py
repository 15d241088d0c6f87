"""Writes data/digits: scikit-learn's handwritten digits as PNG files in class folders.

The 1,797 images are the test set of the UCI "Optical Recognition of
Handwritten Digits" data (E. Alpaydin, C. Kaynak, 1998; CC BY 4.0), which
scikit-learn ships inside its package: nothing is downloaded. Each 8x8 image
of counts 0..16 becomes an 8-bit grayscale PNG (count * 255 / 16), saved as
``digits/<digit>/<index>.png``. Run once; the output is committed.

    .venv/bin/python data/write_digits.py
"""

from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def main() -> None:
    digits = load_digits()
    root = Path(__file__).resolve().parent / "digits"
    for index, (pixels, digit) in enumerate(zip(digits.images, digits.target, strict=True)):
        folder = root / str(digit)
        folder.mkdir(parents=True, exist_ok=True)
        gray = np.round(pixels * 255 / 16).astype(np.uint8)
        Image.fromarray(gray, mode="L").save(folder / f"{index:04d}.png", optimize=True)
    print(f"Wrote {len(digits.images)} PNG files under {root}")


if __name__ == "__main__":
    main()
