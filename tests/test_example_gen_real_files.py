"""ShardedExampleGen on the rows real files hold: quoting, encodings, big fields, block edges.

One crafted CSV (Excel's UTF-8 BOM, CRLF line ends, quoted fields spanning
lines, a latin-1 byte, a 10 MB field, bad rows) is converted in blocks of
4 KiB, so that bad rows and multi-line fields fall on block edges.
"""

import codecs
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from example_data import convert_as_written, read_split
from tfrecord_pipelines.components.example_gen.destination import DestinationInUse
from tfrecord_pipelines.components.example_gen.shard_plan import ShardingOptions
from tfrecord_pipelines.local.beam_args import local_beam_args

# In memory, one process; TFX not packaged for workers (what convert passes).
IN_MEMORY = local_beam_args()
BIG_FIELD = 10 * 2**20
BAD = {
    b"s0,abc,n,1": "bad value: column 'mass' value 'abc' is not float",
    b"s0,1.0,1": "wrong column count: 3 fields, expected 4",
    b"s0,1.0,n,": "missing value: column 'label' is empty",
    b"s2,3.0,caf\xe9,0": "not valid utf-8: byte 0xe9 at position 10",
}


def _write(folder: Path) -> tuple[dict[int, bytes], dict[int, str]]:
    """Writes the crafted CSV; returns the note of each good row by mass, and bad lines' reasons."""
    folder.mkdir()
    rows, good, bad, line = [b"species,mass,note,label"], {}, {}, 1
    bad_rows = list(BAD.items())
    for i in range(3_000):
        if i % 7 == 3:
            note = f'"line one {i}\r\nline two, with a comma and ""quotes"""'.encode()
            value = f'line one {i}\r\nline two, with a comma and "quotes"'.encode()
        elif i == 1_500:
            note = value = b"x" * BIG_FIELD
        else:
            note = value = f"note {i}".encode()
        if i % 500 == 250 and bad_rows:
            row, reason = bad_rows.pop()
            rows.append(row)
            line += 1
            bad[line] = reason
        rows.append(b"s%d,%d.5,%s,%d" % (i % 3, i, note, i % 2))
        line += 1 + note.count(b"\n")
        good[i] = value
    (folder / "data.csv").write_bytes(codecs.BOM_UTF8 + b"\r\n".join(rows) + b"\r\n")
    return good, bad


def _convert(source, dest, **overrides):
    settings = dict(
        source_format="csv",
        sharding=ShardingOptions(target_shard_bytes=256 * 1024),
        compression="gzip",
        label_key="label",
        block_bytes=4096,
        beam_pipeline_args=IN_MEMORY,
    )
    settings.update(overrides)
    return convert_as_written(source, dest, **settings)


def _examples(out: Path):
    return read_split(out / "Split-train") + read_split(out / "Split-eval")


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    good, bad = _write(root / "csv")
    report = _convert(root / "csv", root / "out")
    return root, good, bad, report


def test_every_good_row_is_written_as_the_file_holds_it(crafted):
    root, good, _, report = crafted
    notes = {}
    for example in _examples(root / "out"):
        features = example.features.feature
        assert set(features) == {"species", "mass", "note", "label"}  # no "\ufeffspecies"
        notes[int(features["mass"].float_list.value[0])] = features["note"].bytes_list.value[0]
    assert notes == good
    assert report["records_written"] == len(good)
    assert len(notes[1_500]) == BIG_FIELD


def test_every_bad_row_is_quarantined_with_its_line_and_reason(crafted):
    root, _, bad, report = crafted
    records = [
        json.loads(line)
        for path in sorted((root / "out" / "quarantine").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert {r["line"]: r["reason"].split(" (")[0] for r in records} == bad
    assert report["quarantined"] == len(bad)
    latin = next(r for r in records if r["reason"].startswith("not valid"))
    assert latin["content"] == "s2,3.0,caf\ufffd,0"


def test_a_rerun_writes_byte_identical_shards_and_replaces_only_when_asked(crafted):
    root, _, _, first = crafted
    again = _convert(root / "csv", root / "again")
    assert again == first
    for split in ("train", "eval"):
        names = sorted(p.name for p in (root / "out" / f"Split-{split}").iterdir())
        assert names == sorted(p.name for p in (root / "again" / f"Split-{split}").iterdir())
        for name in names:
            ours = (root / "out" / f"Split-{split}" / name).read_bytes()
            assert ours == (root / "again" / f"Split-{split}" / name).read_bytes(), name
    with pytest.raises(DestinationInUse, match="already holds files .* pass --overwrite"):
        _convert(root / "csv", root / "again")
    smaller = _convert(
        root / "csv",
        root / "again",
        overwrite=True,
        sharding=ShardingOptions(target_shard_bytes=64 * 1024),
    )
    for split, outcome in smaller["splits"].items():
        on_disk = sorted(p.name for p in (root / "again" / f"Split-{split}").iterdir())
        assert on_disk == [s["file"] for s in outcome["shards"]]
    assert len(_examples(root / "again")) == first["records_written"]
    assert sorted(p.name for p in root.iterdir()) == ["again", "csv", "out"]  # no leftovers


def test_an_encoding_reads_what_utf8_quarantines(tmp_path):
    (tmp_path / "csv").mkdir()
    rows = b"".join(b"%d,caf\xe9,1\n%d,na\xefve,0\n" % (i, -i) for i in range(40))
    (tmp_path / "csv" / "d.csv").write_bytes(b"id,name,label\n" + rows)
    report = _convert(tmp_path / "csv", tmp_path / "out", encoding="latin-1")
    assert report["quarantined"] == 0
    names = {e.features.feature["name"].bytes_list.value[0] for e in _examples(tmp_path / "out")}
    assert names == {"café".encode(), "naïve".encode()}


def test_parquet_lists_with_nulls_are_quarantined_not_shifted(tmp_path):
    (tmp_path / "pq").mkdir()
    values = [[1.0, None, 3.0] if i % 50 == 0 else [float(i), 2.0] for i in range(200)]
    table = pa.table(
        {
            "id": pa.array(range(200)),
            "v": pa.array(values, pa.list_(pa.float32())),
            "label": [1] * 200,
        }
    )
    pq.write_table(table, tmp_path / "pq" / "a.parquet", row_group_size=64)
    report = _convert(
        tmp_path / "pq", tmp_path / "out", source_format="parquet", max_bad_fraction=0.1
    )
    records = [
        json.loads(line)
        for path in (tmp_path / "out" / "quarantine").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sorted(r["line"] for r in records) == [1, 51, 101, 151]
    assert {r["reason"].split(":")[0] for r in records} == {"null in a list"}
    assert report["records_written"] == 196
    lengths = {len(e.features.feature["v"].float_list.value) for e in _examples(tmp_path / "out")}
    assert lengths == {2}


def test_a_bad_row_larger_than_the_fallback_part_is_quarantined(tmp_path):
    (tmp_path / "csv").mkdir()
    rows = [b"id,text,label", *(b"%d,t,1" % i for i in range(30)), b"x," + b"y" * 200_000 + b",1"]
    (tmp_path / "csv" / "d.csv").write_bytes(b"\n".join(rows) + b"\n")
    report = _convert(tmp_path / "csv", tmp_path / "out", block_bytes=1 << 20, max_bad_fraction=0.5)
    assert (report["records_written"], report["quarantined"]) == (30, 1)
