"""Small generated inputs for the ExampleGen tests."""

import csv
import random
from pathlib import Path

import tensorflow as tf

CSV_HEADER = ["id", "amount", "count", "colour", "note", "label"]
# (line written into the CSV, reason prefix the quarantine must give)
PLANTED_BAD_ROWS = [
    ("900001,1.5,3,red,short", "wrong column count: 5 fields, expected 6"),
    ("900002,abc,3,red,x,1", "bad value: column 'amount' value 'abc' is not float"),
    ("900003,2.5,3.7,blue,x,0", "bad value: column 'count' value '3.7' is not int"),
    ("900004,2.5,3,blue,x,", "missing value: column 'label' is empty"),
]


def write_csv(folder: Path, rows: int, bad_rows=PLANTED_BAD_ROWS, seed: int = 3) -> Path:
    """Writes rows of random values (incompressible enough to size shards), bad rows spread in."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    bad_every = rows // (len(bad_rows) + 1) if bad_rows else 0
    with open(folder / "data.csv", "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        planted = list(bad_rows)
        for i in range(rows):
            if bad_every and i and i % bad_every == 0 and planted:
                f.write(planted.pop(0)[0] + "\n")
            writer.writerow(
                [
                    i,
                    round(rng.uniform(0, 1000), 3),
                    rng.randint(0, 50),
                    rng.choice(["red", "green", "blue"]),
                    "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20)),
                    rng.randint(0, 1),
                ]
            )
    return folder


def write_images(folder: Path) -> dict[str, bytes]:
    """Writes PNGs and JPEGs into class folders, plus files that are not images.

    Beside the images: ``cats/notes.txt`` (not named like an image: skipped),
    and hidden files (``.DS_Store``; ``._cats-0.jpg``, as macOS leaves them)
    that are ignored.

    Returns:
      The bytes of each valid image, by file name.
    """
    written = {}
    for label, (name, channels) in enumerate([("cats", 3), ("dogs", 1)]):
        (folder / name).mkdir(parents=True)
        for i in range(3):
            pixels = tf.random.stateless_uniform(
                [8 + i, 12, channels], seed=[label, i], maxval=255, dtype=tf.int32
            )
            image = tf.cast(pixels, tf.uint8)
            encoded = (tf.io.encode_png(image) if i % 2 else tf.io.encode_jpeg(image)).numpy()
            file = f"{name}-{i}.{'png' if i % 2 else 'jpg'}"
            (folder / name / file).write_bytes(encoded)
            written[file] = encoded
    (folder / "cats" / "notes.txt").write_text("not an image\n")
    (folder / "cats" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (folder / "dogs" / "._cats-0.jpg").write_bytes(b"\0\5\26\7 AppleDouble")
    return written


def read_split(folder: Path) -> list[tf.train.Example]:
    """Reads every example of a Split-<name> folder."""
    examples = []
    for path in sorted(folder.iterdir()):
        compression = "GZIP" if path.name.endswith(".gz") else ""
        for record in tf.data.TFRecordDataset(str(path), compression_type=compression):
            examples.append(tf.train.Example.FromString(record.numpy()))
    return examples


DIGITS = Path(__file__).resolve().parents[1] / "data" / "digits"
# Files that are no image TensorFlow decodes, planted among the digits, and
# the reason the quarantine must give for each.
# A file in a class folder that is not named like an image: skipped, named in summaries.
STRAY_FILE = "README.txt"
PLANTED_BAD_IMAGES = {
    "empty.jpg": b"",
    "notes.jpg": b"a text file named like a JPEG\n",
}


def _odd_encodings(png: bytes) -> dict[str, bytes]:
    """The same digit as a CMYK JPEG, a 16-bit PNG, an RGBA PNG and a larger grayscale JPEG."""
    import io

    import numpy as np
    from PIL import Image

    gray = np.array(Image.open(io.BytesIO(png)))
    larger = np.kron(gray, np.ones((3, 3), dtype=np.uint8))  # 24x24
    rgba = np.dstack([larger] * 3 + [np.full_like(larger, 255)])
    cmyk = io.BytesIO()
    Image.fromarray(np.dstack([gray] * 3)).convert("CMYK").save(cmyk, "JPEG", quality=95)
    return {
        "cmyk.jpg": cmyk.getvalue(),
        "deep.png": tf.io.encode_png((gray.astype(np.uint16) * 257)[..., None]).numpy(),
        "rgba.png": tf.io.encode_png(rgba).numpy(),
        "large.jpg": tf.io.encode_jpeg(larger[..., None], quality=95).numpy(),
    }


def write_digit_images(
    folder: Path, digits=(0, 1, 7), per_class: int = 120, names: tuple[str, ...] | None = None
) -> dict[str, str]:
    """Copies bundled digits into class folders, with odd encodings and bad files planted.

    Each class gets ``per_class`` of its PNGs, the first of them also in four
    other encodings (CMYK JPEG, 16-bit PNG, 24x24 RGBA, 24x24 JPEG); the
    first class gets the PLANTED_BAD_IMAGES and a truncated JPEG, and a
    STRAY_FILE and a hidden file that are not images.

    Args:
      names: each digit's class folder (default: the digit itself).

    Returns:
      The class (its folder's name) of every valid image, by file name.
    """
    names = names or tuple(str(d) for d in digits)
    labels = {}
    for digit, name in zip(digits, names, strict=True):
        target = folder / name
        target.mkdir(parents=True)
        pngs = sorted((DIGITS / str(digit)).glob("*.png"))[:per_class]
        for png in pngs:
            (target / png.name).write_bytes(png.read_bytes())
            labels[png.name] = name
        for suffix, encoded in _odd_encodings(pngs[0].read_bytes()).items():
            stem = f"{pngs[0].stem}-{suffix}"
            (target / stem).write_bytes(encoded)
            labels[stem] = name
    first = folder / names[0]
    for bad, content in PLANTED_BAD_IMAGES.items():
        (first / bad).write_bytes(content)
    large = (first / next(n for n in labels if n.endswith("large.jpg"))).read_bytes()
    (first / "truncated.jpg").write_bytes(large[: len(large) // 2])
    (first / STRAY_FILE).write_text("where these digits came from\n")
    (first / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    return labels


# A photograph that ships with scikit-learn (in the lock): real JPEG statistics.
PHOTO = Path(__import__("sklearn").__file__).parent / "datasets" / "images" / "china.jpg"


def trainer_decodes(encoded: bytes) -> bool:
    """Whether the Trainer's decoder (``ImageDecoding.decode``'s call) reads the image."""
    try:
        tf.io.decode_image(encoded, channels=3, expand_animations=False)
        return True
    except tf.errors.InvalidArgumentError:
        return False


def corrupt_in_the_middle(encoded: bytes, rng: random.Random) -> bytes:
    """The JPEG with 32 random bytes written over its compressed data's middle 60%.

    Its header and its end marker are left intact: only a decode finds the damage.
    """
    at = rng.randint(len(encoded) // 5, len(encoded) * 4 // 5)
    damaged = bytearray(encoded)
    damaged[at : at + 32] = bytes(rng.getrandbits(8) for _ in range(32))
    return bytes(damaged)


def write_corrupt_photos(folder: Path, count: int = 40) -> dict[str, bool]:
    """Writes crops of PHOTO into two class folders, each JPEG damaged in the middle.

    Returns:
      Whether the Trainer's decoder reads each file, by file name (some it
      rejects, most it decodes into damaged pixels).
    """
    import io

    from PIL import Image

    rng = random.Random(11)
    photo = Image.open(PHOTO).convert("RGB")
    decodes = {}
    for i in range(count):
        x, y = rng.randint(0, photo.width - 200), rng.randint(0, photo.height - 200)
        encoded = io.BytesIO()
        photo.crop((x, y, x + 200, y + 200)).save(encoded, "JPEG", quality=90)
        damaged = corrupt_in_the_middle(encoded.getvalue(), rng)
        assert damaged.startswith(b"\xff\xd8\xff") and damaged.endswith(b"\xff\xd9")
        name = f"photo-{i:02d}.jpg"
        (folder / f"class{i % 2}").mkdir(parents=True, exist_ok=True)
        (folder / f"class{i % 2}" / name).write_bytes(damaged)
        decodes[name] = trainer_decodes(damaged)
    return decodes


def write_photo_tiles(
    folder: Path, per_class: int = 60, side: int = 32, layout: str = "folders"
) -> dict[str, str]:
    """Writes JPEG tiles of scikit-learn's two photographs, one class each: china, flower.

    Args:
      per_class: tiles of each photograph, at random places.
      side: the tiles' side in pixels.
      layout: ``folders`` (``china/``, ``flower/``) or ``labels-file`` (the tiles in
        ``folder`` and a labels.csv naming each tile's class, with ids that are not
        the names' sorted order: flower 0, china 1).

    Returns:
      Each tile's class, by file name.
    """
    import io

    from PIL import Image

    rng = random.Random(5)
    classes = {}
    rows = ["filename,label,class_name"]
    for class_id, name in enumerate(("flower", "china")):
        photo = Image.open(PHOTO.with_name(f"{name}.jpg")).convert("RGB")
        target = folder / name if layout == "folders" else folder
        target.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            x, y = rng.randint(0, photo.width - 4 * side), rng.randint(0, photo.height - 4 * side)
            tile = photo.crop((x, y, x + 4 * side, y + 4 * side)).resize((side, side))
            encoded = io.BytesIO()
            tile.save(encoded, "JPEG", quality=90)
            file = f"{name}-{i:03d}.jpg"
            (target / file).write_bytes(encoded.getvalue())
            classes[file] = name
            rows.append(f"{file},{class_id},{name}")
    if layout != "folders":
        (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return classes


# convert()'s own arguments; the rest of a test's options are ExampleGenSettings'.
_CONVERT_ARGUMENTS = ("schema_path", "splits", "split_key", "beam_pipeline_args", "overwrite")
_CSV_OPTIONS = ("block_bytes", "encoding", "delimiter")
_SPARK_OPTIONS = {"spark_master": "master", "spark_conf": "conf"}


def convert_as_written(source, dest, **options) -> dict:
    """Runs ``convert`` with ``options`` named flat (``delimiter``, ``spark_master``, ...), as
    the tests set them; returns the shard plan as ``shard_plan.json`` holds it."""
    from tfrecord_pipelines.components.example_gen.convert import convert
    from tfrecord_pipelines.components.example_gen.settings import (
        CsvOptions,
        ExampleGenSettings,
        SparkOptions,
    )

    arguments = {k: options.pop(k) for k in _CONVERT_ARGUMENTS if k in options}
    csv_options = CsvOptions(**{k: options.pop(k) for k in _CSV_OPTIONS if k in options})
    spark = {name: options.pop(k) for k, name in _SPARK_OPTIONS.items() if k in options}
    settings = ExampleGenSettings(
        **options, csv=csv_options, spark=SparkOptions(**{k: v for k, v in spark.items() if v})
    )
    return convert(str(source), str(dest), settings, **arguments).to_json()


BUNDLES = 3


def write_bundled_shards(folder: Path) -> dict[str, tuple[str, list[bytes]]]:
    """One shard per compression (gzip, gzip:6, none) joined from BUNDLES bundles' pieces,
    as ExampleGen writes it; returns compression -> (its path, the records in order)."""
    from tfrecord_pipelines.components.example_gen.shard_plan import ShardPlan
    from tfrecord_pipelines.components.example_gen.sharded_writer import (
        PieceWriter,
        merge_pieces,
    )
    from tfrecord_pipelines.components.example_gen.spill import SpillWriter

    one_shard = ShardPlan(num_shards=1, weights=(1.0,), estimated_bytes=0)
    records = [f"record {i} ".encode() * (1 + i % 40) for i in range(3_000)]
    in_order = [r for bundle in range(BUNDLES) for r in records[bundle::BUNDLES]]
    written = {}
    for compression in ("gzip", "gzip:6", "none"):
        pieces = []
        for bundle in range(BUNDLES):
            name = f"{compression}-{bundle}"
            spill = SpillWriter(str(folder / "spill"), name)
            spill.add("train", records[bundle::BUNDLES])
            (spilled,) = spill.close()
            writer = PieceWriter(str(folder / "pieces"), compression, name)
            writer.write(spilled.path, one_shard)
            pieces += [piece for _, piece in writer.close()]
        suffix = "" if compression == "none" else ".gz"
        path = folder / f"shard-{compression.replace(':', '')}{suffix}"
        merge_pieces(pieces, str(path), remove=True)
        written[compression] = (str(path), in_order)
    return written
