"""make_dataset's image stage: decoded pixels equal a sequential decode, bad images are skipped."""

import collections
import io
import os

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tfrecord_pipelines.components.trainer import make_dataset
from tfrecord_pipelines.components.trainer.image_decoding import ImageDecoding
from tfrecord_pipelines.components.trainer.input_options import InputOptions

SPEC = {
    "image": tf.io.FixedLenFeature([1], tf.string),
    "id": tf.io.FixedLenFeature([1], tf.int64),
}
SHARDS = 3


def _pixels(rng, height, width, channels, dtype=np.uint8):
    top = 65535 if dtype == np.uint16 else 255
    return (rng.random((height, width, channels)) * top).astype(dtype)


def _cmyk_jpeg(rng) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(_pixels(rng, 21, 17, 3)).convert("CMYK").save(buffer, "JPEG")
    return buffer.getvalue()


def _images(rng) -> list[bytes]:
    """Mixed formats, sizes and channel counts, as real folders hold them."""
    return [
        tf.io.encode_jpeg(_pixels(rng, 30, 40, 3)).numpy(),
        tf.io.encode_jpeg(_pixels(rng, 12, 9, 1)).numpy(),
        tf.io.encode_png(_pixels(rng, 16, 16, 1)).numpy(),
        tf.io.encode_png(_pixels(rng, 25, 14, 4)).numpy(),
        tf.io.encode_png(_pixels(rng, 8, 20, 2)).numpy(),
        tf.io.encode_png(_pixels(rng, 11, 13, 3, np.uint16)).numpy(),
        _cmyk_jpeg(rng),
    ]


def _example(image: bytes, i: int) -> bytes:
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }
        )
    ).SerializeToString()


def _write(folder, images_by_id: dict[int, bytes]) -> str:
    os.makedirs(folder, exist_ok=True)
    ids = sorted(images_by_id)
    for shard in range(SHARDS):
        with tf.io.TFRecordWriter(os.path.join(folder, f"data-{shard}")) as writer:
            for i in ids[shard::SHARDS]:
                writer.write(_example(images_by_id[i], i))
    return os.path.join(folder, "data-*")


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(5)
    return {i: image for i, image in enumerate(_images(rng) * 6)}  # 42 images


@pytest.fixture(scope="module")
def shards(images, tmp_path_factory):
    return _write(str(tmp_path_factory.mktemp("images")), images)


def _by_id(dataset) -> dict[int, np.ndarray]:
    decoded = {}
    for features in dataset:
        for i, pixels in zip(
            features["id"].numpy().ravel(), features["image"].numpy(), strict=True
        ):
            decoded[int(i)] = pixels
    return decoded


@pytest.mark.parametrize("augment", [(), ("crop",)], ids=["plain", "crop-margin"])
def test_evaluation_pixels_equal_a_sequential_decode(shards, images, augment):
    decoding = ImageDecoding("image", size=24, augment=augment)
    dataset = make_dataset(shards, SPEC, 5, training=False, num_epochs=1, image=decoding)
    decoded = _by_id(dataset)
    assert sorted(decoded) == sorted(images)
    for i, encoded in images.items():
        expected = decoding.finish(decoding.decode(tf.constant(encoded))[None], training=False)[0]
        assert decoded[i].shape == (24, 24, 3) and decoded[i].dtype == np.uint8
        np.testing.assert_array_equal(decoded[i], expected.numpy())


def test_serving_decoder_gives_the_evaluation_pixels(shards, images):
    decoding = ImageDecoding("image", size=20, channels=1)
    evaluation = _by_id(make_dataset(shards, SPEC, 8, training=False, num_epochs=1, image=decoding))
    ids = sorted(images)
    served = decoding.decode_batch(tf.constant([[images[i]] for i in ids])).numpy()
    assert served.shape == (len(ids), 20, 20, 1)
    for i, pixels in zip(ids, served, strict=True):
        np.testing.assert_array_equal(pixels, evaluation[i])


def test_evaluation_order_is_deterministic(shards):
    decoding = ImageDecoding("image", size=16)
    first, second = (
        [
            f["id"].numpy().ravel().tolist()
            for f in make_dataset(shards, SPEC, 4, training=False, num_epochs=1, image=decoding)
        ]
        for _ in range(2)
    )
    assert first == second


@pytest.mark.parametrize("cache", [None, "memory"], ids=["no-cache", "memory-cache"])
def test_training_yields_every_image_each_epoch_augmented(shards, images, cache):
    decoding = ImageDecoding("image", size=16, augment=("crop", "flip"))
    dataset = make_dataset(
        shards,
        (SPEC),
        6,
        training=True,
        num_epochs=3,
        cache=cache,
        options=InputOptions(seed=1),
        image=decoding,
        label_key="id",
    )
    seen = collections.Counter()
    for features, ids in dataset:
        assert features["image"].shape[1:] == (16, 16, 3)
        assert features["image"].dtype == tf.uint8
        seen.update(ids.numpy().ravel().tolist())
    assert seen == {i: 3 for i in images}


def test_images_that_do_not_decode_are_skipped_and_counted(tmp_path, images, capfd):
    broken = dict(images)
    broken[100] = b""  # zero bytes
    broken[101] = b"not an image at all\n"
    broken[102] = images[0][: len(images[0]) // 2]  # a truncated JPEG
    pattern = _write(str(tmp_path), broken)
    dataset = make_dataset(
        pattern, SPEC, 7, training=False, num_epochs=1, image=ImageDecoding("image", size=16)
    )
    assert sorted(_by_id(dataset)) == sorted(images)
    err = capfd.readouterr().err
    assert "make_dataset: skipped 3 image(s) that did not decode so far." in err


def test_a_corrupt_shard_still_fails(tmp_path, images):
    pattern = _write(str(tmp_path), images)
    path = os.path.join(tmp_path, "data-1")
    data = bytearray(open(path, "rb").read())
    data[40] ^= 0xFF  # inside the first record: its CRC no longer matches
    open(path, "wb").write(bytes(data))
    dataset = make_dataset(
        pattern, SPEC, 4, training=False, num_epochs=1, image=ImageDecoding("image", size=16)
    )
    with pytest.raises(tf.errors.DataLossError):
        _by_id(dataset)


def test_transform_runs_before_decoding(shards, images):
    def transform(features):
        return {"image_xf": features["image"], "double_id": features["id"] * 2}

    decoding = ImageDecoding("image_xf", size=16)
    dataset = make_dataset(
        shards,
        SPEC,
        5,
        training=False,
        num_epochs=1,
        image=decoding,
        transform=transform,
        label_key="double_id",
    )
    labels = sorted(int(v) for _, label in dataset for v in label.numpy().ravel())
    assert labels == sorted(2 * i for i in images)


def test_unknown_image_feature_is_named(shards):
    with pytest.raises(ValueError, match="image feature 'pixels' is not in the feature spec"):
        make_dataset(shards, SPEC, 4, image=ImageDecoding("pixels", size=16))
