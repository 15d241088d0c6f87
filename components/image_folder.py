"""Image folders: their two layouts, and the features of the records made from them.

Layouts:
- one sub-folder per class: ``SOURCE/<class name>/<image files>``; labels are
  the class names' indices in sorted order;
- a labels file ``SOURCE/labels.csv`` with columns ``filename,label,class_name``
  (file names relative to SOURCE).

Only files with an image format's extension (``IMAGE_EXTENSIONS``, as Keras'
``image_dataset_from_directory`` keeps) are images; hidden files are ignored
and other files skipped, counted and named (``ImageListing.skipped``), never
quarantined. A file the labels file names is always an image.

Each record holds the file's encoded bytes unchanged (``image``), the label,
and what describes the file: ``class_name`` (the label under its name),
``height``, ``width``, ``channels`` and ``filename``. Only the image is a
model input: the description is for statistics, validation and people.
"""

from __future__ import annotations

import csv
import dataclasses
import os

from tfrecord_pipelines.components import filesystem

LABELS_FILE = "labels.csv"
LABELS_COLUMNS = ["filename", "label", "class_name"]
# File name endings of the formats TensorFlow's image decoder reads.
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp")
# Skipped files named in a summary; the rest are counted.
SKIPPED_NAMED = 5

IMAGE_KEY = "image"
DEFAULT_LABEL_KEY = "label"
CLASS_NAME_KEY = "class_name"
HEIGHT_KEY = "height"
WIDTH_KEY = "width"
CHANNELS_KEY = "channels"
FILENAME_KEY = "filename"


@dataclasses.dataclass(frozen=True)
class LabelledFile:
    """An image file and what it shows."""

    path: str
    label: int
    class_name: str


@dataclasses.dataclass(frozen=True)
class ImageListing:
    """An image folder's images, and the files in its class folders that are not images.

    Attributes:
      files: the images, with their labels.
      skipped: paths, relative to the folder, of the class folders' files
        whose names are not an image format's (notes.txt, a .csv): left out.
    """

    files: list[LabelledFile]
    skipped: list[str]


def describe_skipped(count: int, first: list[str]) -> str:
    """One line naming the files skipped as not images, for a command's summary.

    Args:
      count: how many were skipped.
      first: the first of their paths (relative to the image folder).
    """
    named = ", ".join(first[:SKIPPED_NAMED])
    more = f" and {count - SKIPPED_NAMED:,} more" if count > SKIPPED_NAMED else ""
    noun = "file" if count == 1 else "files"
    return f"{count:,} {noun} not named like an image, left out: {named}{more}"


def is_image_name(name: str) -> bool:
    """Whether a file name ends like an image TensorFlow decodes."""
    return name.lower().endswith(IMAGE_EXTENSIONS)


def has_labels_file(source: str) -> bool:
    """Whether ``source`` holds a labels.csv with the labels-file header."""
    path = os.path.join(source, LABELS_FILE)
    if not filesystem.exists(path):
        return False
    with filesystem.open_text(path) as f:
        return next(csv.reader(f), None) == LABELS_COLUMNS


def _visible(names: list[str]) -> list[str]:
    """Drops hidden entries (.DS_Store, .ipynb_checkpoints, ...): no one's images."""
    return [name for name in names if not name.startswith(".")]


def class_folders(source: str) -> list[str]:
    """Returns the sub-folders of ``source`` that hold image files, sorted."""
    folders = []
    for name in _visible(filesystem.listdir(source)):
        folder = os.path.join(source, name)
        if filesystem.isdir(folder) and any(map(is_image_name, filesystem.listdir(folder))):
            folders.append(name)
    return folders


def list_folder(source: str) -> ImageListing:
    """Lists the images of an image folder (either layout) and the files skipped.

    In class folders, files named like images are listed (a file among them
    that does not decode is quarantined by ExampleGen) and others skipped;
    hidden folders and files (names starting with '.': .DS_Store, macOS's
    ._photo.jpg) are ignored.

    Raises:
      ValueError: if the folder is missing, holds no images, or its labels file is malformed.
    """
    if not filesystem.isdir(source):
        raise ValueError(f"Image folder {source} does not exist or is not a folder.")
    labels_path = os.path.join(source, LABELS_FILE)
    skipped = []
    if filesystem.exists(labels_path):
        files = _read_labels_file(source, labels_path)
    else:
        files = []
        classes = [
            name
            for name in _visible(filesystem.listdir(source))
            if filesystem.isdir(os.path.join(source, name))
        ]
        for label, name in enumerate(classes):
            for file in _visible(filesystem.listdir(os.path.join(source, name))):
                if is_image_name(file):
                    files.append(LabelledFile(os.path.join(source, name, file), label, name))
                elif not filesystem.isdir(os.path.join(source, name, file)):
                    skipped.append(os.path.join(name, file))
    if not files:
        raise ValueError(
            f"Image folder {source} holds no images: expected one sub-folder per class "
            f"or a {LABELS_FILE} file; image files end in {', '.join(IMAGE_EXTENSIONS)}."
        )
    return ImageListing(files, skipped)


def list_images(source: str) -> list[LabelledFile]:
    """Lists the labelled images of an image folder (``list_folder``'s files)."""
    return list_folder(source).files


def _read_labels_file(source: str, labels_path: str) -> list[LabelledFile]:
    with filesystem.open_text(labels_path) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != LABELS_COLUMNS:
            raise ValueError(
                f"Labels file {labels_path} must have the header "
                f"{','.join(LABELS_COLUMNS)}, got {reader.fieldnames}."
            )
        try:
            return [
                LabelledFile(os.path.join(source, r["filename"]), int(r["label"]), r["class_name"])
                for r in reader
            ]
        except (TypeError, ValueError) as e:
            raise ValueError(f"Labels file {labels_path}: a label is not an integer ({e}).") from e


def count_classes(source: str) -> int:
    """Returns how many classes an image folder's layout names."""
    return len(class_names(source))


def class_names(source: str) -> list[str]:
    """The class names an image folder's layout gives: its labels file's, or its class folders."""
    labels_path = os.path.join(source, LABELS_FILE)
    if filesystem.exists(labels_path):
        return sorted({f.label for f in _read_labels_file(source, labels_path)})
    return class_folders(source)
