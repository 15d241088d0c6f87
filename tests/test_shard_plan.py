"""Shard planning: counts from sizes and readers, and the record-to-shard assignment."""

import collections

import pytest

from tfrecord_pipelines.components.example_gen.shard_plan import (
    DEFAULT_NUM_READERS,
    DEFAULT_TARGET_SHARD_BYTES,
    MIN_RECORDS_PER_SHARD,
    ShardingOptions,
    parse_size,
    plan_shards,
    requested_sharding,
)

MIB = 2**20


@pytest.mark.parametrize(
    "text, size",
    [("128MiB", 128 * MIB), ("64 KiB", 65536), ("1GB", 10**9), ("4096", 4096), ("1.5MiB", 1572864)],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "12 parsecs", "-5MiB", "0"])
def test_parse_size_rejects_non_sizes(text):
    with pytest.raises(ValueError, match="Size .* (is not a byte size|must be at least 1 byte)"):
        parse_size(text)


def test_a_gigabyte_at_128_mib_is_eight_equal_shards():
    plan = plan_shards(1024 * MIB, 10_000_000, ShardingOptions(128 * MIB))
    assert plan.num_shards == 8
    assert plan.weights == pytest.approx([1 / 8] * 8)


def test_small_remainder_is_spread_over_full_shards():
    plan = plan_shards(int(8.2 * 128 * MIB), 10_000_000, ShardingOptions(128 * MIB))
    assert plan.num_shards == 8
    assert max(plan.weights) * plan.estimated_bytes <= 1.25 * 128 * MIB


def test_large_remainder_gets_a_last_smaller_shard():
    plan = plan_shards(int(2.5 * 128 * MIB), 10_000_000, ShardingOptions(128 * MIB))
    assert plan.num_shards == 3
    full, last = plan.weights[0] * plan.estimated_bytes, plan.weights[-1] * plan.estimated_bytes
    assert full == pytest.approx(128 * MIB, rel=1e-6)
    assert last == pytest.approx(64 * MIB, rel=1e-6)


def test_readers_raise_the_shard_count_and_the_plan_says_so():
    plan = plan_shards(200 * MIB, 1_000_000, ShardingOptions(128 * MIB, num_readers=10))
    assert plan.num_shards == 10
    assert plan.adjusted == "raised from 2 to 10 shards: one per reader, 10 readers"
    assert not plan_shards(2000 * MIB, 1_000_000, ShardingOptions(128 * MIB, 10)).adjusted
    floor_then_cap = plan_shards(MIB, 5 * MIN_RECORDS_PER_SHARD, ShardingOptions(128 * MIB, 10))
    assert floor_then_cap.adjusted == (
        "capped at 5 shards, not 10 (one per reader): 160 records fill 5 of at least 32 records"
    )


def test_few_records_cap_the_shard_count_so_no_shard_is_empty():
    plan = plan_shards(100 * MIB, 3 * MIN_RECORDS_PER_SHARD, ShardingOptions(MIB, num_readers=50))
    assert plan.num_shards == 3
    assert plan.adjusted == (
        "capped at 3 shards, not 100: 96 records fill 3 of at least 32 records"
    )


def test_an_explicit_shard_count_replaces_the_size_rule():
    plan = plan_shards(100 * MIB, 1_000_000, requested_sharding(num_shards=4))
    assert (plan.num_shards, plan.adjusted) == (4, "")
    capped = plan_shards(100 * MIB, 100, requested_sharding(num_shards=4))
    assert capped.num_shards == 3
    assert capped.adjusted.startswith("capped at 3 shards, not 4: 100 records")


def test_what_the_user_set_wins_over_the_default_reader_floor():
    # Nothing set: the default size and floor.
    assert requested_sharding() == ShardingOptions(
        DEFAULT_TARGET_SHARD_BYTES, num_readers=DEFAULT_NUM_READERS
    )
    # 60 MB split at 8 MiB: 7 shards by size, not the default floor's 10.
    by_size = requested_sharding(target_shard_bytes=8 * MIB)
    assert by_size.num_readers is None
    assert plan_shards(60_000_000, 400_000, by_size).num_shards == 7
    # Both set: the reader count is the user's too, and raises the count, saying so.
    both = plan_shards(60_000_000, 400_000, requested_sharding(8 * MIB, num_readers=10))
    assert (both.num_shards, both.adjusted) == (
        10,
        "raised from 7 to 10 shards: one per reader, 10 readers",
    )
    with pytest.raises(ValueError, match="a target shard size or a shard count, not both"):
        requested_sharding(8 * MIB, num_shards=3)


def test_small_split_gets_one_shard():
    assert plan_shards(1000, 10, ShardingOptions(128 * MIB)).num_shards == 1


def test_assignment_is_deterministic_and_follows_the_weights():
    plan = plan_shards(int(2.5 * MIB), 100_000, ShardingOptions(MIB))
    records = [f"record-{i}".encode() for i in range(30_000)]
    first = [plan.shard_of(r) for r in records]
    assert first == [plan.shard_of(r) for r in records]
    counts = collections.Counter(first)
    assert sorted(counts) == [0, 1, 2]
    for shard, weight in enumerate(plan.weights):
        assert counts[shard] / len(records) == pytest.approx(weight, abs=0.02)


def test_options_are_validated():
    with pytest.raises(ValueError, match="num_readers must be at least 1, got 0"):
        ShardingOptions(num_readers=0)
    with pytest.raises(ValueError, match="target_shard_bytes must be at least 1"):
        ShardingOptions(target_shard_bytes=0)
    with pytest.raises(ValueError, match="num_shards must be at least 1, got 0"):
        ShardingOptions(num_shards=0)


def test_a_shard_plan_an_earlier_version_wrote_reads_with_its_defaults():
    """Before spans, a report had no span, version or input pattern; without options, no
    sizing, readers or skipped files."""
    from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport

    split = {
        "planned_shards": 2,
        "shards_adjusted": "",
        "estimated_bytes": 900,
        "records_measured": 5,
        "shards": [
            {"file": "a.gz", "records": 3, "bytes": 500},
            {"file": "b.gz", "records": 2, "bytes": 400},
        ],
        "records": 5,
        "bytes": 900,
    }
    old = {
        "target_shard_bytes": 1024,
        "compression": "GZIP",
        "records_read": 6,
        "records_written": 5,
        "quarantined": 1,
        "splits": {"train": split},
    }
    report = ShardPlanReport.from_json(old)
    assert (report.span, report.version, report.input_pattern) == (0, None, None)
    assert report.split_records == {"train": 5}
    assert report.splits["train"].shards[1].bytes == 400
    assert report.skipped_files is None and report.split_sizing is None
    assert "skipped_files" not in report.to_json()


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_pieces_hold_each_shards_records_in_spill_order(tmp_path, monkeypatch, compression):
    import bisect
    import itertools
    import zlib

    import tensorflow as tf

    from tfrecord_pipelines.components.example_gen import sharded_writer
    from tfrecord_pipelines.components.example_gen.spill import SpillWriter

    # Several chunks per spill file, records of many sizes (an empty one too).
    monkeypatch.setattr(sharded_writer, "_CHUNK_BYTES", 4096)
    records = [b"x" * (i % 300) + str(i).encode() for i in range(5_000)] + [b""]
    spill = SpillWriter(str(tmp_path / "spill"), "bundle")
    for start in range(0, len(records), 700):
        spill.add("train", records[start : start + 700])
    (spilled,) = spill.close()
    plan = plan_shards(int(2.5 * MIB), 100_000, ShardingOptions(MIB))
    writer = sharded_writer.PieceWriter(str(tmp_path / "pieces"), compression, "bundle")
    writer.write(spilled.path, plan)
    pieces = dict(writer.close())
    bounds = list(itertools.accumulate(plan.weights[:-1]))
    for shard in range(plan.num_shards):
        # The rule shards_of vectorizes, written out per record.
        expected = [
            r
            for r in records
            if min(bisect.bisect(bounds, zlib.crc32(r) / 2**32), plan.num_shards - 1) == shard
        ]
        path, count = pieces[shard]
        kind = "GZIP" if compression == "gzip" else ""
        # TensorFlow's reader checks each record's length and data CRC32Cs.
        read = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=kind)]
        assert (read, count) == (expected, len(expected))
