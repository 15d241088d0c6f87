"""Cutting CSV files into blocks and records: quote-aware, line numbers exact."""

import codecs

import pytest

from tfrecord_pipelines.components.data_source.csv_records import split_records
from tfrecord_pipelines.components.example_gen.csv_blocks import cut_block, plan_blocks

ROWS = [b"1,plain,0", b'2,"two\nlines",1', b'3,"quote "" inside",0', b"4,last,1"]


def _file(tmp_path, rows, newline=b"\n", bom=False):
    path = tmp_path / "d.csv"
    head = codecs.BOM_UTF8 if bom else b""
    path.write_bytes(head + newline.join([b"id,text,label", *rows]) + newline)
    return str(path)


@pytest.mark.parametrize("block_bytes", [1, 7, 15, 40, 10_000])
def test_blocks_cover_every_record_once_and_never_cut_a_quoted_field(tmp_path, block_bytes):
    path = _file(tmp_path, ROWS * 20)
    blocks = plan_blocks(path, block_bytes)
    data = open(path, "rb").read()
    assert blocks[0].start == data.index(b"\n") + 1
    assert all(a.end == b.start for a, b in zip(blocks, blocks[1:], strict=False))
    assert blocks[-1].end == len(data)
    records = [r for b in blocks for r in split_records(b.read(), b.first_line)]
    assert [r.data for r in records] == ROWS * 20
    assert all(r.complete for r in records)
    # Line numbers: the header is line 1; row k (0-based) of ROWS*20 starts after k
    # rows, each one line but the two-line second.
    expected, line = [], 2
    for row in ROWS * 20:
        expected.append(line)
        line += row.count(b"\n") + 1
    assert [r.line for r in records] == expected


def test_crlf_line_ends_are_not_part_of_the_values(tmp_path):
    path = _file(tmp_path, ROWS, newline=b"\r\n")
    (block,) = plan_blocks(path, 1 << 20)
    records = list(split_records(block.read(), block.first_line))
    assert records[0].data == b"1,plain,0"
    assert records[1].data == b'2,"two\nlines",1'  # inside quotes: the value's own
    assert [r.line for r in records] == [2, 3, 5, 6]


def test_a_file_smaller_than_a_block_is_one_block_and_a_header_only_file_none(tmp_path):
    path = _file(tmp_path, ROWS[:1])
    (block,) = plan_blocks(path, 32 << 20)
    assert block.read() == b"1,plain,0\n"
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "only.csv").write_bytes(b"id,text,label\n")
    assert plan_blocks(str(tmp_path / "h" / "only.csv"), 10) == []


def test_a_last_row_without_line_end_is_kept(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"a,b\n1,2\n3,4")
    blocks = plan_blocks(str(path), 1)
    assert [r.data for b in blocks for r in split_records(b.read(), b.first_line)] == [
        b"1,2",
        b"3,4",
    ]


def test_a_quote_that_never_closes_costs_its_own_line_only():
    # (A stray quote followed by another quote later pairs with it: the lines
    # between become one record, which fails to parse and is quarantined whole.)
    data = b'1,fine,0\n2,"never closed,1\n3,after,0\n4,x,1\n'
    records = list(split_records(data, 2))
    assert [(r.line, r.data, r.complete) for r in records] == [
        (2, b"1,fine,0", True),
        (3, b'2,"never closed,1', False),
        (4, b"3,after,0", True),
        (5, b"4,x,1", True),
    ]


def test_cut_block_cuts_at_record_ends_and_keeps_line_numbers():
    data = b"\n".join(ROWS * 50) + b"\n"
    parts = cut_block(data, 2, 7)
    assert b"".join(p for p, _ in parts) == data
    records = [r for part, line in parts for r in split_records(part, line)]
    assert records == list(split_records(data, 2))
    assert len(parts) > 1
