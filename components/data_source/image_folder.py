"""Image folders: their two layouts, and the features of the records made from them.

Layouts:
- one sub-folder per class: ``SOURCE/<class name>/<image files>``; labels are
  the class names' indices in sorted order;
- a labels file ``SOURCE/labels.csv`` (file names relative to SOURCE) with the
  columns ``filename,label,class_name`` (each class's integer id and its name)
  or ``filename,label`` (the label alone: the class's name, or its integer
  id, which then names it too; names get ids by their sorted order).

A class is its name (the folder's, or the labels file's): the label a model
learns, the class its metrics and its serving signature name. The id is the
same class by number, for readers that want one (its index among the names,
or the labels file's integer).

Only files with an image format's extension (``IMAGE_EXTENSIONS``, as Keras'
``image_dataset_from_directory`` keeps) are images; hidden files are ignored
and other files skipped, counted and named (``ImageListing.skipped``), never
quarantined. A file the labels file names is always an image.

Each record holds the file's encoded bytes unchanged (``image``), its class
by name (``class_name``) and by id (``label``, or the name ExampleGen is
given), and what describes the file: ``height``, ``width``, ``channels`` and
``filename``. Only the image is a model input: the rest is for the label,
statistics, validation and people.
"""

from __future__ import annotations

import csv
import dataclasses
import os

from tfrecord_pipelines.components.storage import filesystem

LABELS_FILE = "labels.csv"
LABELS_COLUMNS = ["filename", "label", "class_name"]
# The labels file's headers: each class's id and name, or the label alone.
LABELS_HEADERS = (LABELS_COLUMNS, LABELS_COLUMNS[:2])
# File name endings of the formats TensorFlow's image decoder reads.
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp")
# Skipped files named in a summary; the rest are counted.
SKIPPED_NAMED = 5

IMAGE_KEY = "image"
# The class by id; a model learns the class by name (CLASS_NAME_KEY).
DEFAULT_LABEL_KEY = "label"
CLASS_NAME_KEY = "class_name"
HEIGHT_KEY = "height"
WIDTH_KEY = "width"
CHANNELS_KEY = "channels"
FILENAME_KEY = "filename"


def class_id_key(label_key: str | None) -> str:
    """The feature an image record holds its class's id in.

    ``label_key`` names it, unless it names the class by name (``class_name``,
    which every record holds: the label a pipeline's model learns) or nothing;
    then ``label``.

    Raises:
      ValueError: if ``label_key`` is another of the record's own features.
    """
    if label_key in (None, CLASS_NAME_KEY):
        return DEFAULT_LABEL_KEY
    taken = (IMAGE_KEY, HEIGHT_KEY, WIDTH_KEY, CHANNELS_KEY, FILENAME_KEY)
    if label_key in taken:
        raise ValueError(
            f"Label key {label_key!r} is taken: image records hold {', '.join(taken)} "
            f"beside the class ({CLASS_NAME_KEY}) and its id."
        )
    return label_key


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
    """Whether ``source`` holds a labels.csv with one of the labels file's headers."""
    path = os.path.join(source, LABELS_FILE)
    if not filesystem.exists(path):
        return False
    with filesystem.open_text(path) as f:
        return next(csv.reader(f), None) in LABELS_HEADERS


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
        if reader.fieldnames not in LABELS_HEADERS:
            raise ValueError(
                f"Labels file {labels_path} must have the header "
                f"{' or '.join(','.join(h) for h in LABELS_HEADERS)}, got {reader.fieldnames}."
            )
        # (line, file name, label, class name or None); a short row's missing fields are None.
        rows = [
            (reader.line_num, r["filename"] or "", (r["label"] or "").strip(), r.get("class_name"))
            for r in reader
        ]
    for line, name, label, _ in rows:
        if not label:
            raise ValueError(f"Labels file {labels_path}, line {line}: {name} has no label.")
    if reader.fieldnames == LABELS_COLUMNS:
        files = [
            LabelledFile(
                os.path.join(source, name),
                _label_id(labels_path, line, label),
                (class_name or "").strip() or label,
            )
            for line, name, label, class_name in rows
        ]
        _check_one_name_per_id(labels_path, files)
        return files
    if all(_is_integer(label) for _, _, label, _ in rows):
        return [
            LabelledFile(os.path.join(source, name), int(label), str(int(label)))
            for _, name, label, _ in rows
        ]
    ids = {label: i for i, label in enumerate(sorted({label for _, _, label, _ in rows}))}
    return [
        LabelledFile(os.path.join(source, name), ids[label], label) for _, name, label, _ in rows
    ]


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _label_id(labels_path: str, line: int, label: str) -> int:
    if not _is_integer(label):
        raise ValueError(
            f"Labels file {labels_path}, line {line}: label {label!r} is not an integer id; "
            "with a class_name column the label is the class's id (or drop class_name and "
            "give the class's name as the label)."
        )
    return int(label)


def _check_one_name_per_id(labels_path: str, files: list[LabelledFile]) -> None:
    """Each id names one class and each class has one id, or the two would disagree."""
    names: dict[int, str] = {}
    ids: dict[str, int] = {}
    for file in files:
        name = names.setdefault(file.label, file.class_name)
        if name != file.class_name:
            raise ValueError(
                f"Labels file {labels_path}: label {file.label} is named both {name!r} and "
                f"{file.class_name!r}; each label needs one class name."
            )
        label = ids.setdefault(file.class_name, file.label)
        if label != file.label:
            raise ValueError(
                f"Labels file {labels_path}: class {file.class_name!r} has the labels {label} "
                f"and {file.label}; each class needs one label."
            )


def count_classes(source: str) -> int:
    """Returns how many classes an image folder's layout names."""
    return len(class_names(source))


def class_names(source: str) -> list[str]:
    """The class names an image folder's layout gives, sorted: its labels file's, or its
    class folders."""
    labels_path = os.path.join(source, LABELS_FILE)
    if filesystem.exists(labels_path):
        return sorted({f.class_name for f in _read_labels_file(source, labels_path)})
    return class_folders(source)
