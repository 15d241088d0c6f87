"""One flat listing of a bucket's folder answers the look-ups under it (storage.object_listing):
folders from the objects' names, placeholders, and what it cannot tell. The stores' clients
are exercised on real servers in tests/test_object_store_gcs.py and test_object_store_s3.py."""

import pytest

from tfrecord_pipelines.components.storage.object_listing import listed_folder, listing_of

OBJECTS = [
    ("gs://lake/hive/day=1/region=a/part-0.parquet", 10),
    ("gs://lake/hive/day=1/region=b/part-0.parquet", 20),
    ("gs://lake/hive/day=2/region=a/part-0.parquet", 30),
    # A folder's placeholder object, as TensorFlow's makedirs writes one.
    ("gs://lake/hive/day=3/", 0),
]


def test_folders_are_the_prefixes_of_the_objects_names():
    listing = listing_of("gs://lake/hive/", OBJECTS)
    assert listing.listdir("gs://lake/hive") == ["day=1", "day=2", "day=3"]
    assert listing.listdir("gs://lake/hive/day=1/") == ["region=a", "region=b"]
    assert listing.isdir("gs://lake/hive/day=1/region=b")
    assert listing.isdir("gs://lake/hive/day=3") and listing.listdir("gs://lake/hive/day=3") == []
    assert not listing.isdir("gs://lake/hive/day=1/region=a/part-0.parquet")
    assert listing.exists("gs://lake/hive/day=2/region=a/part-0.parquet")
    assert not listing.exists("gs://lake/hive/day=4")
    assert listing.sizes["gs://lake/hive/day=1/region=b/part-0.parquet"] == 20
    assert listing.walk_files("gs://lake/hive/day=1") == [
        "gs://lake/hive/day=1/region=a/part-0.parquet",
        "gs://lake/hive/day=1/region=b/part-0.parquet",
    ]
    with pytest.raises(FileNotFoundError, match="day=4"):
        listing.listdir("gs://lake/hive/day=4")


def test_it_answers_only_under_its_folder():
    listing = listing_of("gs://lake/hive", OBJECTS)
    assert listing.covers("gs://lake/hive/day=9/x.csv")  # under it: known not to exist
    assert listing.covers("gs://lake/hive/")
    assert not listing.covers("gs://lake/hive2/day=1")
    assert not listing.covers("gs://lake")


def test_a_folder_with_nothing_under_it_may_be_a_file():
    """Listing ``gs://lake/data.csv`` as a folder finds nothing under it; whether the object
    itself exists is left to the file system."""
    listing = listing_of("gs://lake/data.csv", [])
    assert not listing.covers("gs://lake/data.csv")
    assert listing.covers("gs://lake/data.csv/part")


@pytest.mark.parametrize(
    "path, folder",
    [
        ("gs://lake/hive/", "gs://lake/hive"),
        ("gs://lake/events/day-{SPAN}/", "gs://lake/events"),
        ("s3://lake/exports/*.csv.gz", "s3://lake/exports"),
        ("gs://lake/hive/day=*/region=a/", "gs://lake/hive"),
        ("gs://lake", "gs://lake"),
        ("/data/penguins", None),
        ("ram://x/y", None),
        ("gs://", None),
    ],
)
def test_the_folder_listed_for_a_path(path, folder):
    assert listed_folder(path) == folder
