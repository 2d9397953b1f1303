"""The ``amber`` command line: inspect, stats, to-json, from-json.

Most cases call ``amber._cli.main`` in this process (a fresh interpreter per case would take
minutes); a few run the real program, as ``python -m amber`` and as the installed ``amber``
script, for what only a process shows: exit codes, stdin and stdout as pipes, broken pipes.
"""

from __future__ import annotations

import datetime
import io
import json
import math
import os
import re
import struct
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import amber
import pytest
from _notation import load_vectors, missing_requirements, vector_bytes, vector_options
from _ref import varint, zigzag
from _rich_strategies import mixtures, rich_diff
from _samples import sample_objects
from _strategies import cyclic_graphs, graphs
from amber._cli import main
from hypothesis import HealthCheck, given, settings

H = b"\xab\x41\x01"
LINE = re.compile(r"^ *(\d+)  (.{26})( *)(\S+)  (.*)$")
LINE_NO_HEX = re.compile(r"^ *(\d+)  ( *)(\S+)  (.*)$")


class Run:
    """What one command did: exit status, stdout bytes, stderr text."""

    def __init__(self, status: int, out: bytes, err: str) -> None:
        self.status = status
        self.out = out
        self.err = err

    @property
    def text(self) -> str:
        return self.out.decode("utf-8")

    def lines(self) -> list[str]:
        return self.text.splitlines()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    """Runs ``amber ARGS`` in this process, with ``stdin`` as its standard input."""

    def run(*args: str, stdin: bytes = b"") -> Run:
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
        err = io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        status = main(list(args))
        out.flush()
        return Run(status, out.buffer.getvalue(), err.getvalue())

    return run


def amber_process(
    *args: str, stdin: bytes = b"", script: bool = False
) -> subprocess.CompletedProcess:
    """Runs the real program: ``python -m amber`` or the installed ``amber`` script."""
    command = (
        [str(Path(sys.executable).parent / "amber")] if script else [sys.executable, "-m", "amber"]
    )
    return subprocess.run(command + list(args), input=stdin, capture_output=True, timeout=60)


def write(tmp_path: Path, data: bytes, name: str = "in.amb") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def assert_one_line_error(run: Run | subprocess.CompletedProcess, *parts: str) -> None:
    err = run.err if isinstance(run, Run) else run.stderr.decode()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("amber: error: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in lines[0], (part, lines[0])


def listing(run: Run) -> list[tuple[int, str, int, str, str]]:
    """(offset, hex bytes, depth, tag name, summary) of each value line of an inspect."""
    rows = []
    for line in run.lines():
        match = LINE.match(line)
        if match and match.group(4) != "HEADER":
            offset, raw, indent, name, text = match.groups()
            rows.append((int(offset), raw.strip(), len(indent) // 2, name, text))
    return rows


# -- inspect: offsets and names from hand-assembled payloads --------------------------------


def test_inspect_shared_list(cli, tmp_path):
    # `l = []; [l, l]` (spec 5.14): list of 2 at 3, the tracked empty list at 4, REF to 4.
    run = cli("inspect", write(tmp_path, H + bytes.fromhex("5a d8 93 01")))
    assert run.status == 0, run.err
    assert run.lines()[0].split()[:5] == ["0", "ab", "41", "01", "HEADER"]
    assert listing(run) == [
        (3, "5a", 0, "SHORT_LIST", "list of 2 items"),
        (4, "d8", 1, "SHORT_LIST", "list of 0 items  [tracked #0]"),
        (5, "93 01", 1, "REF", "-> 4 (table #0)"),
    ]
    assert run.lines()[-1] == "end: 7 bytes, 3 values"


def test_inspect_supersede(cli, tmp_path):
    # `t = ([],); t[0].append(t)`, spec 6.5: body offsets 0..6 are absolute 3..9.
    run = cli("inspect", write(tmp_path, H + bytes.fromhex("94 5d d9 dd 93 02 93 03")))
    assert run.status == 0, run.err
    rows = [(offset, depth, name) for offset, _, depth, name, _ in listing(run)]
    assert rows == [
        (3, 0, "SUPERSEDE"),
        (4, 1, "SHORT_TUPLE"),
        (5, 2, "SHORT_LIST"),
        (6, 3, "SHORT_TUPLE"),
        (7, 4, "REF"),
        (9, 1, "REF"),
    ]
    summaries = {offset: text for offset, _, _, _, text in listing(run)}
    assert summaries[5].endswith("[tracked #0]") and summaries[6].endswith("[tracked #1]")
    assert summaries[7] == "-> 5 (table #0)"
    assert summaries[9] == "-> 6 (table #1)"


def test_inspect_objects_and_ext(cli, tmp_path):
    # [date(2024, 5, 17), Point(1, 2), Point(3, 4)]: a DATE blob of 4 bytes at 4, the first
    # OBJECT at 11 with a 1+3 byte module, 1+5 byte qualname, kind, count and two 2-byte
    # field names (18 bytes in all), its values at 29 and 30, the second OBJECT at 31.
    body = bytes.fromhex("5b 76 01 04 e8 0f 05 11 77 00 03") + b"app"
    body += bytes.fromhex("05") + b"Point" + bytes.fromhex("00 02 01 78 01 79 01 02 77 01 03 04")
    run = cli("inspect", write(tmp_path, H + body))
    assert run.status == 0, run.err
    rows = listing(run)
    assert [(offset, depth, name) for offset, _, depth, name, _ in rows] == [
        (3, 0, "SHORT_LIST"),
        (4, 1, "EXT"),
        (11, 1, "OBJECT"),
        (29, 2, "SMALL_INT"),
        (30, 2, "SMALL_INT"),
        (31, 1, "OBJECT"),
        (33, 2, "SMALL_INT"),
        (34, 2, "SMALL_INT"),
    ]
    assert rows[1][1] == "76 01 04"
    assert rows[1][4] == "DATE, 4 bytes: datetime.date(2024, 5, 17)"
    assert rows[2][1] == "77 00 03 61 70 70 05 50 .."
    assert rows[2][4] == "app:Point ATTRS, shape 0 (defined here: x, y)"
    assert rows[5][4] == "app:Point ATTRS, shape 0"


def _shape(module: str, qualname: str, kind: int, tracked: bool = False) -> bytes:
    """An OBJECT tag with a shape definition of no fields (spec 5.17.2)."""
    names = b"".join(bytes([len(n)]) + n.encode() for n in (module, qualname))
    return bytes([0xF7 if tracked else 0x77, 0]) + names + bytes([kind])


def test_inspect_namespace_and_singletons(cli, tmp_path):
    # [..., NotImplemented, ns] where ns = SimpleNamespace(a=1); ns.me = ns (spec 5.16):
    # SINGLETON blobs of one byte (0, 1); a tracked NAMESPACE with one dict, whose REF is
    # to body offset 9 (absolute 12).
    body = bytes.fromhex("5b 76 18 01 00 76 18 01 01 f6 17 62 41 61 01 42 6d 65 93 09")
    run = cli("inspect", write(tmp_path, H + body))
    assert run.status == 0, run.err
    assert listing(run) == [
        (3, "5b", 0, "SHORT_LIST", "list of 3 items"),
        (4, "76 18 01", 1, "EXT", "SINGLETON, 1 byte: Ellipsis"),
        (8, "76 18 01", 1, "EXT", "SINGLETON, 1 byte: NotImplemented"),
        (12, "f6 17", 1, "EXT", "NAMESPACE  [tracked #0]"),
        (14, "62", 2, "SHORT_DICT", "dict of 2 pairs"),
        (15, "41", 3, "SHORT_STR", "'a'"),
        (17, "01", 3, "SMALL_INT", "1"),
        (18, "42", 3, "SHORT_STR", "'me'"),
        (21, "93 09", 3, "REF", "-> 12 (table #0)"),
    ]
    assert run.lines()[-1] == "end: 23 bytes, 9 values"
    run = cli("stats", "--json", write(tmp_path, H + body))
    stats = json.loads(run.text)
    assert stats["ext"] == {
        "SINGLETON": {"count": 2, "bytes": 8, "total_bytes": 8},
        "NAMESPACE": {"count": 1, "bytes": 2, "total_bytes": 11},
    }
    assert stats["max_depth"] == 3


def test_inspect_object_kinds(cli, tmp_path):
    # One OBJECT of each kind of issue 21 (spec 5.17.3), in a list; the values of the kinds
    # with several are named by their place in the kind's table.
    parts = [
        _shape("builtins", "int", 7),  # GLOBAL: no values
        _shape("builtins", "ValueError", 10) + bytes.fromhex("5d 43 62 61 64 90 90 90 91"),
        bytes.fromhex("77 02 5c 90 90 90 91"),  # ValueError() by shape 1
        _shape("app", "Label", 6) + bytes.fromhex("42 68 69 90"),
        _shape("app", "Bag", 5) + bytes.fromhex("60 90"),
        _shape("app", "make", 8) + bytes.fromhex("5d 01 90 59 02 90"),
        _shape("app", "Thing", 9) + bytes.fromhex("5c 90 90 90"),
        _shape("app", "Struct", 11) + bytes.fromhex("5e 5c 61 41 78 01 90 90 90"),
        _shape("app", "Kw", 12) + bytes.fromhex("5e 5c 60 90 90 61 01 02"),
    ]
    body = bytes([0x71, len(parts)]) + b"".join(parts)
    run = cli("inspect", write(tmp_path, H + body))
    assert run.status == 0, run.err
    assert [(depth, name, text) for _, _, depth, name, text in listing(run)] == [
        (0, "LIST", "list of 9 items"),
        (1, "OBJECT", "builtins:int GLOBAL, shape 0 (defined here)"),
        (1, "OBJECT", "builtins:ValueError EXCEPTION, shape 1 (defined here)"),
        (2, "SHORT_TUPLE", "arguments: tuple of 1 item"),
        (3, "SHORT_STR", "'bad'"),
        (2, "NONE", "state: None"),
        (2, "NONE", "cause: None"),
        (2, "NONE", "context: None"),
        (2, "FALSE", "suppress context: False"),
        (1, "OBJECT", "builtins:ValueError EXCEPTION, shape 1"),
        (2, "SHORT_TUPLE", "arguments: tuple of 0 items"),
        (2, "NONE", "state: None"),
        (2, "NONE", "cause: None"),
        (2, "NONE", "context: None"),
        (2, "FALSE", "suppress context: False"),
        (1, "OBJECT", "app:Label VALUE_SUBCLASS, shape 2 (defined here)"),
        (2, "SHORT_STR", "builtin value: 'hi'"),
        (2, "NONE", "state: None"),
        (1, "OBJECT", "app:Bag MUTABLE_SUBCLASS, shape 3 (defined here)"),
        (2, "SHORT_DICT", "builtin value: dict of 0 pairs"),
        (2, "NONE", "state: None"),
        (1, "OBJECT", "app:make REDUCE, shape 4 (defined here)"),
        (2, "SHORT_TUPLE", "arguments: tuple of 1 item"),
        (3, "SMALL_INT", "1"),
        (2, "NONE", "state: None"),
        (2, "SHORT_LIST", "list items: list of 1 item"),
        (3, "SMALL_INT", "2"),
        (2, "NONE", "dict items: None"),
        (1, "OBJECT", "app:Thing NEWOBJ, shape 5 (defined here)"),
        (2, "SHORT_TUPLE", "arguments: tuple of 0 items"),
        (2, "NONE", "state: None"),
        (2, "NONE", "list items: None"),
        (2, "NONE", "dict items: None"),
        (1, "OBJECT", "app:Struct REDUCE_KW, shape 6 (defined here)"),
        (2, "SHORT_TUPLE", "call: tuple of 2 items"),
        (3, "SHORT_TUPLE", "tuple of 0 items"),
        (3, "SHORT_DICT", "dict of 1 pair"),
        (4, "SHORT_STR", "'x'"),
        (4, "SMALL_INT", "1"),
        (2, "NONE", "state: None"),
        (2, "NONE", "list items: None"),
        (2, "NONE", "dict items: None"),
        (1, "OBJECT", "app:Kw NEWOBJ_KW, shape 7 (defined here)"),
        (2, "SHORT_TUPLE", "call: tuple of 2 items"),
        (3, "SHORT_TUPLE", "tuple of 0 items"),
        (3, "SHORT_DICT", "dict of 0 pairs"),
        (2, "NONE", "state: None"),
        (2, "NONE", "list items: None"),
        (2, "SHORT_DICT", "dict items: dict of 1 pair"),
        (3, "SMALL_INT", "1"),
        (3, "SMALL_INT", "2"),
    ]
    run = cli("stats", "--json", write(tmp_path, H + body))
    stats = json.loads(run.text)
    assert stats["shapes"] == 8
    assert {name: count["count"] for name, count in stats["objects"].items()} == {
        "builtins:int": 1,
        "builtins:ValueError": 2,
        "app:Label": 1,
        "app:Bag": 1,
        "app:make": 1,
        "app:Thing": 1,
        "app:Struct": 1,
        "app:Kw": 1,
    }
    # A GLOBAL object is its shape: it spans its tag, shape number and definition alone.
    assert stats["objects"]["builtins:int"]["total_bytes"] == len(parts[0])
    assert stats["max_depth"] == 4  # list, OBJECT, the call tuple, its dict


def test_inspect_object_made_from_its_first_value(cli, tmp_path):
    # r = R(); r.me = r with its own __reduce__: a tracked REDUCE (at 4) whose state refers
    # to it; the tuple in its arguments is tracked too, and comes second in the table, its
    # tag being later, though the decoder records it before the object (spec 6.2).
    body = _shape("app", "R", 8, tracked=True) + bytes.fromhex("dc 61 42 6d 65 93 00 90 90")
    offset = 3 + len(_shape("app", "R", 8))
    run = cli("inspect", write(tmp_path, H + body))
    assert run.status == 0, run.err
    assert listing(run)[:4] == [
        (
            3,
            "f7 00 03 61 70 70 01 52 ..",
            0,
            "OBJECT",
            "app:R REDUCE, shape 0 (defined here)  [tracked #0]",
        ),
        (offset, "dc", 1, "SHORT_TUPLE", "arguments: tuple of 0 items  [tracked #1]"),
        (offset + 1, "61", 1, "SHORT_DICT", "state: dict of 1 pair"),
        (offset + 2, "42", 2, "SHORT_STR", "'me'"),
    ]
    assert listing(run)[4:] == [
        (offset + 5, "93 00", 2, "REF", "-> 3 (table #0)"),
        (offset + 7, "90", 1, "NONE", "list items: None"),
        (offset + 8, "90", 1, "NONE", "dict items: None"),
    ]
    assert run.lines()[-1] == f"end: {len(body) + 3} bytes, 7 values"


def test_inspect_strings_and_lengths(cli, tmp_path):
    # A 24-byte str takes STR with a 1-byte length; "a\ud800b" STR_SURROGATES (spec 5.8).
    text = "abcdefghijklmnopqrstuvwx"
    body = b"\x5a\x68\x18" + text.encode() + bytes.fromhex("69 05 61 ed a0 80 62")
    run = cli("inspect", write(tmp_path, H + body))
    rows = listing(run)
    assert rows[1][:4] == (4, "68 18", 1, "STR")
    assert rows[1][4] == repr(text)
    assert rows[2][:4] == (30, "69 05", 1, "STR_SURROGATES")
    assert rows[2][4] == repr("a\ud800b")


def test_inspect_packed_lists(cli, tmp_path):
    # {"i": ints, "f": floats, "g": floats}: a packed list is one line, with its tag and count
    # as its bytes and its first items in its summary; its items have no lines of their own.
    ints = [64, -65, *range(66, 74)]  # zigzag codes of two bytes each
    floats = [0.25, 0.1, 0.2, math.nan]
    body = bytes.fromhex("63 4169 78 0a") + b"".join(varint(zigzag(v)) for v in ints)
    body += bytes.fromhex("4166 f9 04") + struct.pack("<4d", *floats)  # the list is at 30
    body += bytes.fromhex("4167 93 1b")  # a REF to body offset 27: absolute 30
    assert len(body) == 1 + 2 + 2 + 20 + 2 + 2 + 32 + 2 + 2
    run = cli("inspect", write(tmp_path, H + body))
    assert run.status == 0, run.err
    rows = listing(run)
    assert [(offset, depth, name) for offset, _, depth, name, _ in rows] == [
        (3, 0, "SHORT_DICT"),
        (4, 1, "SHORT_STR"),
        (6, 1, "PACKED_INT_LIST"),
        (28, 1, "SHORT_STR"),
        (30, 1, "PACKED_FLOAT_LIST"),
        (64, 1, "SHORT_STR"),
        (66, 1, "REF"),
    ]
    assert rows[2][1] == "78 0a"
    assert rows[2][4] == "list of 10 ints, packed: 64, -65, 66, 67, 68, 69, 70, 71, ..."
    assert rows[4][1] == "f9 04"
    assert rows[4][4] == (
        "list of 4 floats, packed: 0.25, 0.1, 0.2, nan (bits 7ff8000000000000)  [tracked #0]"
    )
    assert rows[6][4] == "-> 30 (table #0)"
    assert run.lines()[-1] == f"end: {3 + len(body)} bytes, 7 values"


def test_stats_of_packed_lists(cli, tmp_path):
    # A list of two packed lists: 4 ints of 1 byte, 4 floats of 8 bytes, nothing shared.
    data = amber.dumps([[1, 2, 3, 4], [x / 3 for x in range(1, 5)]])
    assert data[3:6] == bytes.fromhex("5a 78 04") and data[10:12] == bytes.fromhex("79 04")
    run = cli("stats", "--json", write(tmp_path, data))
    assert run.status == 0, run.err
    stats = json.loads(run.text)
    assert stats["values"] == 3
    assert stats["max_depth"] == 2
    assert stats["types"] == {"list": {"count": 3, "bytes": 1 + 6 + 34, "total_bytes": 41 + 6 + 34}}


def test_inspect_tuple_lists(cli, tmp_path):
    # [rows, rows, [("ab",), ("cd",)] * 2 as rows] where rows = [("hello world", 0), (REF, 1000),
    # (REF, 2000), (REF, 3000)]: a TUPLE_LIST is one line, its items two levels deeper, and
    # each row a line of its own (no bytes, no value) at its first item.
    body = bytes.fromhex("5b fc 04 02 cb") + b"hello world" + bytes.fromhex("00")
    body += bytes.fromhex("9304 6cd00f 9304 6ca01f 9304 6cf02e")
    body += bytes.fromhex("9301")  # the second item: a REF to the tracked TUPLE_LIST at 4
    body += bytes.fromhex("7c 04 01 c26162 c26364 9325 9328")  # the third, at 37
    data = H + body
    assert amber.loads(data)[2] == [("ab",), ("cd",), ("ab",), ("cd",)]
    run = cli("inspect", write(tmp_path, data))
    assert run.status == 0, run.err
    rows = listing(run)
    assert [(offset, raw, depth, name) for offset, raw, depth, name, _ in rows] == [
        (3, "5b", 0, "SHORT_LIST"),
        (4, "fc 04 02", 1, "TUPLE_LIST"),
        (7, "cb", 3, "SHORT_STR"),
        (19, "00", 3, "SMALL_INT"),
        (20, "93 04", 3, "REF"),
        (22, "6c d0 0f", 3, "INT"),
        (25, "93 04", 3, "REF"),
        (27, "6c a0 1f", 3, "INT"),
        (30, "93 04", 3, "REF"),
        (32, "6c f0 2e", 3, "INT"),
        (35, "93 01", 1, "REF"),
        (37, "7c 04 01", 1, "TUPLE_LIST"),
        (40, "c2", 3, "SHORT_STR"),
        (43, "c2", 3, "SHORT_STR"),
        (46, "93 25", 3, "REF"),
        (48, "93 28", 3, "REF"),
    ]
    assert rows[1][4] == "list of 4 tuples of 2 items, as rows  [tracked #0]"
    assert rows[11][4] == "list of 4 tuples of 1 item, as rows"
    assert rows[10][4] == "-> 4 (table #0)"
    assert (rows[4][4], rows[14][4]) == ("-> 7 (table #1)", "-> 40 (table #2)")
    # The row lines: indented one level below their list, with an empty bytes column.
    row_lines = [line for line in run.lines() if " row " in line]
    starts = [(7, 0, 2), (20, 1, 2), (25, 2, 2), (30, 3, 2)]
    starts += [(40, 0, 1), (43, 1, 1), (46, 2, 1), (48, 3, 1)]
    assert [line.split() for line in row_lines] == [
        [str(offset), "row", str(i), "tuple", "of", str(k), "item" + ("s" if k > 1 else "")]
        for offset, i, k in starts
    ]
    assert row_lines[0] == f"{7:>6}  {'':26}    row 0  tuple of 2 items"
    assert run.lines()[-1] == f"end: {len(data)} bytes, 16 values"


def test_inspect_tuple_list_rows_restart_after_a_nested_one(cli, tmp_path):
    # A TUPLE_LIST of 2 rows whose first item is itself a TUPLE_LIST of 1 row: after the inner
    # one, the outer rows are counted on.
    body = bytes.fromhex("7c 02 02 7c 01 01 05 06 07 08")
    data = H + body
    assert amber.loads(data) == [([(5,)], 6), (7, 8)]
    run = cli("inspect", "--no-hex", write(tmp_path, data))
    assert run.status == 0, run.err
    assert run.lines()[1:-1] == [
        "     3  TUPLE_LIST  list of 2 tuples of 2 items, as rows",
        "     6    row 0  tuple of 2 items",
        "     6      TUPLE_LIST  list of 1 tuple of 1 item, as rows",
        "     9        row 0  tuple of 1 item",
        "     9          SMALL_INT  5",
        "    10      SMALL_INT  6",
        "    11    row 1  tuple of 2 items",
        "    11      SMALL_INT  7",
        "    12      SMALL_INT  8",
    ]


def test_stats_of_tuple_lists(cli, tmp_path):
    # 4 rows of (float, str): one list value, no tuple values, eight items; two levels.
    value = [((i + 0.1) / 3, f"s{i}") for i in range(4)]  # no float is FLOAT32-exact
    data = amber.dumps(value)
    assert data[3:6] == bytes.fromhex("7c 04 02")
    run = cli("stats", "--json", write(tmp_path, data))
    assert run.status == 0, run.err
    stats = json.loads(run.text)
    assert stats["values"] == 9
    assert stats["max_depth"] == 2
    body = len(data) - 3
    assert stats["types"] == {
        "list": {"count": 1, "bytes": 3, "total_bytes": body},
        "float": {"count": 4, "bytes": 4 * 9, "total_bytes": 4 * 9},
        "str": {"count": 4, "bytes": 4 * 3, "total_bytes": 4 * 3},
    }
    # Inside a list: three levels.
    run = cli("stats", "--json", write(tmp_path, amber.dumps([value])))
    assert json.loads(run.text)["max_depth"] == 3
    # A TUPLE_LIST of no rows has no items to be deeper, and still opens two levels.
    run = cli("stats", "--json", write(tmp_path, H + bytes.fromhex("59 7c 00 01")))
    assert json.loads(run.text)["max_depth"] == 3


def test_inspect_max_lines_and_no_hex(cli, tmp_path):
    # [0, 1, ..., 9] as a LIST: eleven values, two shown.
    path = write(tmp_path, H + bytes([0x71, 10, *range(10)]))
    run = cli("inspect", "--max-lines", "2", "--no-hex", path)
    assert run.status == 0, run.err
    lines = run.lines()
    assert LINE_NO_HEX.match(lines[1]).groups() == ("3", "", "LIST", "list of 10 items")
    assert LINE_NO_HEX.match(lines[2]).groups() == ("5", "  ", "SMALL_INT", "0")
    assert lines[3:] == ["... 9 more values", "end: 15 bytes, 11 values"]
    assert "71 0a" not in run.text


def test_inspect_every_value_vector(cli, tmp_path):
    """Each value vector lists in offset order, starting after the header, with each line's
    bytes taken from the payload at that offset, and ends at the payload's length."""
    checked = 0
    for vec in load_vectors("values.json"):
        if missing_requirements(vec) or "buffers" in vector_options(vec):
            continue
        data = vector_bytes(vec)
        options = vector_options(vec)
        extra = ["--max-depth", str(options["max_depth"])] if "max_depth" in options else []
        run = cli("inspect", write(tmp_path, data), *extra)
        assert run.status == 0, (vec["name"], run.err)
        rows = listing(run)
        offsets = [offset for offset, *_ in rows]
        assert offsets[0] == 3 and offsets == sorted(set(offsets)), vec["name"]
        for offset, raw, *_ in rows:
            shown = bytes.fromhex(raw.removesuffix(" ..").replace(" ", ""))
            assert data[offset:].startswith(shown) and shown, (vec["name"], offset)
        assert run.lines()[-1].startswith(f"end: {len(data)} bytes"), vec["name"]
        checked += 1
    assert checked > 200


# -- errors ---------------------------------------------------------------------------------

ERROR_VECTORS = [v for v in load_vectors("errors.json") if not missing_requirements(v)]
# Kinds that depend on the classes a caller allows: the CLI allows none and decodes such
# payloads with placeholders instead.
CLASS_KINDS = {"class_not_allowed", "missing_field", "unknown_field", "bad_state"}


def _expected_error(vec: dict[str, Any]) -> tuple[str, int] | None:
    """The error the CLI must give for an error vector, or None when it decodes it."""
    data = vector_bytes(vec)
    options = vector_options(vec)
    if vec.get("python_only") and "types" in options:
        return None
    if vec["error"] in CLASS_KINDS and not (
        vec["error"] == "bad_state" and not vec.get("python_only")
    ):
        # A bad_state that is not python_only breaks a kind's value rules, which hold for
        # placeholders too (spec 5.17.6); the others depend on the class.
        return None
    if vec["error"] in ("missing_buffer", "buffer_mismatch") or "buffers" in options:
        # No buffers are passed: the first OUT_OF_BAND value (EXT code 0x16) misses its own.
        match = re.search(b"[\x76\xf6]\x16", data[3:])
        assert match is not None
        return "missing_buffer", match.start() + 3
    return vec["error"], vec["offset"]


@pytest.mark.parametrize("command", ["inspect", "stats", "to-json"])
def test_error_vectors(cli, tmp_path, command):
    path = write(tmp_path, b"")
    for vec in ERROR_VECTORS:
        Path(path).write_bytes(vector_bytes(vec))
        options = vector_options(vec)
        limits = []
        if "max_depth" in options:
            limits += ["--max-depth", str(options["max_depth"])]
        if "max_alloc" in options:
            limits += ["--max-alloc", str(options["max_alloc"])]
        run = cli(command, path, *limits)
        expected = _expected_error(vec)
        if expected is None:
            assert run.status == 0 and run.err == "", (vec["name"], run.err)
            continue
        kind, offset = expected
        assert run.status == 1, vec["name"]
        assert_one_line_error(run, f"(at byte {offset}, {kind})")
        if command == "inspect":
            assert run.lines()[-1] == "error: " + run.err.strip().split("invalid payload: ")[1]
        else:
            assert run.out == b"", vec["name"]


def test_inspect_shows_values_before_the_error(cli, tmp_path):
    # A list of 2: the int 1, then a str of 2 bytes with 1 byte left (truncated at its tag).
    run = cli("inspect", write(tmp_path, H + bytes.fromhex("5a 01 42 61")))
    assert run.status == 1
    assert [(o, n) for o, _, _, n, _ in listing(run)] == [
        (3, "SHORT_LIST"),
        (4, "SMALL_INT"),
        (5, "SHORT_STR"),
    ]
    assert run.lines()[-1].startswith("error: ") and "(at byte 5, truncated)" in run.lines()[-1]
    assert_one_line_error(run, "truncated", "at byte 5")


def test_bad_header_has_no_header_line(cli, tmp_path):
    run = cli("inspect", write(tmp_path, b"{}"))
    assert run.status == 1
    assert run.lines() == ["error: " + run.err.split("invalid payload: ")[1].strip()]
    assert_one_line_error(run, "(at byte 0, bad_magic)")


def test_missing_and_unreadable_files(cli, tmp_path):
    run = cli("stats", str(tmp_path / "nope.amb"))
    assert run.status == 1
    assert_one_line_error(run, "cannot read", "nope.amb")
    run = cli("inspect", str(tmp_path))
    assert run.status == 1
    assert_one_line_error(run, "cannot read")


def test_usage_errors(cli):
    for args in ([], ["frobnicate"], ["inspect", "--max-lines", "-1"], ["stats", "--bogus"]):
        with pytest.raises(SystemExit) as info:
            cli(*args)
        assert info.value.code == 2, args
    with pytest.raises(SystemExit) as info:
        cli("to-json", "--max-depth", "10001")
    assert info.value.code == 2


# -- stats ----------------------------------------------------------------------------------


def test_stats_of_a_shared_str(cli, tmp_path):
    # [s, s, s] with a 30-byte s: SHORT_LIST (1 byte), the tracked STR (tag, length, 30
    # bytes: 32), two REFs to body offset 1 (2 bytes each). Each REF saves 32 - 2 bytes.
    s = "".join(["x"] * 30)
    data = amber.dumps([s, s, s])
    assert data == H + b"\x5b\xe8\x1e" + b"x" * 30 + b"\x93\x01\x93\x01"
    run = cli("stats", "--json", write(tmp_path, data))
    assert run.status == 0, run.err
    stats = json.loads(run.text)
    assert stats["bytes"] == 3 + 1 + 32 + 4
    assert stats["values"] == 4
    assert stats["max_depth"] == 1
    assert stats["tracked"] == 1
    assert stats["types"] == {
        "list": {"count": 1, "bytes": 1, "total_bytes": 37},
        "str": {"count": 1, "bytes": 32, "total_bytes": 32},
        "ref": {"count": 2, "bytes": 4, "total_bytes": 4},
    }
    assert stats["refs"] == {"count": 2, "bytes": 4, "saved_bytes": 2 * (32 - 2)}
    own = sum(row["bytes"] for row in stats["types"].values())
    assert own + stats["header_bytes"] == stats["bytes"]


def test_stats_of_ext_and_objects(cli, tmp_path):
    point = amber.Placeholder("app", "Point", "ATTRS", {"x": 1, "y": 2})
    other = amber.Placeholder("app", "Point", "ATTRS", {"x": 3, "y": 4})
    data = amber.dumps([datetime.date(2024, 5, 17), point, other])
    # The DATE is 7 bytes (spec 5.16.5); the first OBJECT defines shape 0 in 18 bytes
    # (tag, 0, "app" and "Point" with lengths, kind, count, "x" and "y" with lengths), the
    # second refers to it in 2; each has two 1-byte ints.
    run = cli("stats", "--json", write(tmp_path, data))
    stats = json.loads(run.text)
    assert stats["bytes"] == 3 + 1 + 7 + (18 + 2) + (2 + 2)
    assert stats["ext"] == {"DATE": {"count": 1, "bytes": 7, "total_bytes": 7}}
    assert stats["objects"] == {"app:Point": {"count": 2, "bytes": 20, "total_bytes": 24}}
    assert stats["shapes"] == 1
    assert stats["types"]["int"]["count"] == 4
    assert stats["max_depth"] == 2


def test_stats_text(cli, tmp_path):
    data = amber.dumps([[[]]])  # three nested lists: depth 3
    run = cli("stats", write(tmp_path, data))
    assert run.status == 0, run.err
    assert run.lines()[0] == "payload: 6 bytes (3 header, 3 body), 3 values, nesting depth 3"
    # Three lists of one byte each, spanning 3, 2 and 1 bytes with their children.
    rows = {line.split()[0]: line.split()[1:] for line in run.lines()[3:4]}
    assert rows == {"list": ["3", "3", "50.0%", "6"]}


# -- to-json and from-json ------------------------------------------------------------------


def round_trip(cli, tmp_path: Path, obj: Any, *options: str) -> Any:
    """obj as a payload, through to-json and from-json; returns the final payload's value."""
    source = write(tmp_path, amber.dumps(obj))
    as_json, back = str(tmp_path / "v.json"), str(tmp_path / "back.amb")
    run = cli("to-json", source, "-o", as_json, *options)
    assert run.status == 0, run.err
    run = cli("from-json", as_json, "-o", back)
    assert run.status == 0, run.err
    return amber.loads(Path(back).read_bytes(), placeholders=True)


def test_round_trip_keeps_the_payload_of_issue_21_forms(cli, tmp_path):
    """Builtin exceptions and types, namespaces, singletons and placeholders of the new
    kinds (a function by name, a str subclass) go through JSON and back to the same bytes."""
    error = ValueError("bad", 3)
    error.add_note("checked")
    error.__cause__ = KeyError("k")
    space = types.SimpleNamespace(level=2)
    space.me = space
    value = [error, error, int, space, ..., NotImplemented, _issue_21_placeholders()]
    data = amber.dumps(value)
    source, as_json = write(tmp_path, data), str(tmp_path / "v.json")
    assert cli("to-json", source, "-o", as_json).status == 0
    text = Path(as_json).read_text()
    assert '{"$id":1,"$object":"builtins:ValueError","kind":"EXCEPTION",' in text
    assert '{"$ref":1},{"$object":"builtins:int","kind":"GLOBAL"}' in text
    assert '{"$id":2,"$namespace":{"level":2,"me":{"$ref":2}}}' in text
    assert '{"$singleton":"Ellipsis"},{"$singleton":"NotImplemented"}' in text
    back = str(tmp_path / "back.amb")
    assert cli("from-json", as_json, "-o", back).status == 0
    assert Path(back).read_bytes() == data


def _issue_21_placeholders() -> list[Any]:
    """Placeholders as a decoder without the classes makes them: a GLOBAL, a VALUE_SUBCLASS."""
    return [
        amber.Placeholder("app", "report", "GLOBAL", None),
        amber.Placeholder("app", "Label", "VALUE_SUBCLASS", ("hi", {"lang": "en"})),
    ]


@pytest.mark.parametrize("indent", [None, "2"])
def test_round_trip_samples(cli, tmp_path, graph_diff, indent):
    options = ["--indent", indent] if indent else []
    for obj in sample_objects():
        back = round_trip(cli, tmp_path, obj, *options)
        assert graph_diff(obj, back) is None, (obj, graph_diff(obj, back))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(graphs())
def test_round_trip_graphs(cli, tmp_path_factory, graph_diff, obj):
    back = round_trip(cli, tmp_path_factory.mktemp("g"), obj)
    assert graph_diff(obj, back) is None


@SETTINGS
@given(cyclic_graphs())
def test_round_trip_cycles(cli, tmp_path_factory, graph_diff, obj):
    back = round_trip(cli, tmp_path_factory.mktemp("c"), obj)
    assert graph_diff(obj, back) is None


@SETTINGS
@given(mixtures)
def test_round_trip_rich_values(cli, tmp_path_factory, obj):
    """Every EXT type and class instances (as placeholders), with their sharing."""
    try:
        data = amber.dumps(obj)
    except amber.EncodeError:
        return  # values of the strategy that amber itself refuses
    try:
        value = amber.loads(data, placeholders=True)
    except amber.DecodeError as exc:
        # Placeholders are not hashable: a class instance as a key fails (mapping 9.4).
        assert exc.kind == "unhashable"
        return
    back = round_trip(cli, tmp_path_factory.mktemp("r"), value)
    assert rich_diff(value, back) is None


def test_to_json_text(cli, tmp_path):
    t = (1, 2)
    value = {"when": datetime.date(2024, 5, 17), "pair": t, "again": t, "keys": {1: "one"}}
    run = cli("to-json", write(tmp_path, amber.dumps(value)))
    assert run.status == 0, run.err
    assert run.text == (
        '{"when":{"$date":"2024-05-17"},"pair":{"$id":1,"$tuple":[1,2]},'
        '"again":{"$ref":1},"keys":{"$dict":[[1,"one"]]}}\n'
    )
    run = cli("to-json", "--indent", "1", write(tmp_path, amber.dumps({"a": [1]})))
    assert run.text == '{\n "a": [\n  1\n ]\n}\n'


def test_from_json_errors(cli, tmp_path):
    cases = {
        '{"a": 1, "a": 2}': "member 'a' twice",
        '{"$tuple": [1], "$set": [2]}': "two tags",
        '{"$nope": 1}': "unknown tag",
        '[{"$ref": 1}]': "names no earlier $id",
        '{"$bytes": "AAE"}': "base64",
        "[NaN]": "NaN is not JSON",
        '{"$set": [[1]]}': "not hashable",
        '{"$id": 1, "$tuple": [{"$ref": 1}]}': "cycle through tuples",
        "[1,": "invalid JSON at line 1 column 4",
    }
    for text, message in cases.items():
        run = cli("from-json", "-o", str(tmp_path / "out.amb"), write(tmp_path, text.encode()))
        assert run.status == 1, text
        assert_one_line_error(run, message)
    run = cli("from-json", write(tmp_path, b"\xff\xfe"))
    assert_one_line_error(run, "not UTF-8")
    run = cli("from-json", write(tmp_path, b'{"$object": "a b:C", "kind": "ENUM", "state": 1}'))
    assert_one_line_error(run, "cannot encode")
    assert not (tmp_path / "out.amb").exists()


# -- files, stdin, stdout -------------------------------------------------------------------


def test_stdin_and_output_file(cli, tmp_path):
    data = amber.dumps({"k": [1, 2]})
    for args in (["to-json"], ["to-json", "-"]):
        run = cli(*args, stdin=data)
        assert run.status == 0 and run.text == '{"k":[1,2]}\n'
    out = tmp_path / "out.json"
    out.write_text("old")
    run = cli("to-json", "-o", str(out), stdin=data)
    assert run.status == 0 and run.out == b"" and out.read_text() == '{"k":[1,2]}\n'
    # Bad input leaves the file as it was, and no temporary file behind.
    run = cli("to-json", "-o", str(out), stdin=H + b"\x95")
    assert run.status == 1
    assert out.read_text() == '{"k":[1,2]}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    run = cli("inspect", "-o", str(out), stdin=H + b"\x95")
    assert run.status == 1 and out.read_text() == '{"k":[1,2]}\n'
    run = cli("stats", "-o", "-", stdin=data)
    assert run.status == 0 and run.text.startswith("payload: ")


def test_output_file_mode(cli, tmp_path):
    """The temporary file is private, the output is not: a new file gets the mode the umask
    gives, and a replaced file keeps its own."""
    umask = os.umask(0o022)
    try:
        out = tmp_path / "new.json"
        assert cli("to-json", "-o", str(out), stdin=amber.dumps(1)).status == 0
        assert out.stat().st_mode & 0o777 == 0o644
        out.chmod(0o640)
        assert cli("to-json", "-o", str(out), stdin=amber.dumps(2)).status == 0
        assert out.stat().st_mode & 0o777 == 0o640 and out.read_text() == "2\n"
    finally:
        os.umask(umask)


def test_progress(cli, tmp_path):
    run = cli("to-json", "--progress", write(tmp_path, amber.dumps([1])))
    assert run.status == 0
    assert "amber: read 0.0 MiB" in run.err
    assert cli("to-json", write(tmp_path, amber.dumps([1]))).err == ""


def test_module_and_script(tmp_path):
    data = amber.dumps([1, "two"])
    done = amber_process("inspect", "--no-hex", write(tmp_path, data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[1:3] == [
        "     3  SHORT_LIST  list of 2 items",
        "     4    SMALL_INT  1",
    ]
    done = amber_process("from-json", stdin=b'[1, "two"]', script=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == data
    # A list of 2 whose second item is missing: the input ends at byte 7, after INT 64.
    done = amber_process("to-json", stdin=H + bytes.fromhex("5a 6c 80 01"), script=True)
    assert done.returncode == 1 and done.stdout == b""
    assert_one_line_error(done, "(at byte 7, truncated)")
    done = amber_process("inspect", "--max-lines")
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_broken_pipe(tmp_path):
    # The None keeps the ints out of a packed list: a line for every item.
    path = write(tmp_path, amber.dumps([None, *range(100, 30_000)]))
    with subprocess.Popen(
        [sys.executable, "-m", "amber", "inspect", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.read(64)
        proc.stdout.close()
        err = proc.stderr.read()
        status = proc.wait(timeout=60)
    assert first.startswith(b"     0  ab 41 01")
    assert err == b""
    assert status == 1
    assert os.path.exists(path)


# -- signed, compressed and streamed inputs ---------------------------------------------------

SECRET = b"a test secret of 32 bytes, ok!!!"


def _key_file(tmp_path: Path, secret: bytes = SECRET) -> str:
    return write(tmp_path, secret + b"\n", "key")


def test_verify_accepts_the_right_key_and_names_it(cli, tmp_path):
    key = amber.SigningKey(SECRET, id=b"2026-11")
    path = write(tmp_path, amber.dumps([1, 2], key=key))
    run = cli("verify", path, "--key-file", _key_file(tmp_path), "--key-id", "2026-11")
    assert run.status == 0, run.err
    assert run.text == "signature OK: signed with key id 2026-11\n"


def test_verify_with_a_derived_key_id_from_the_environment(cli, tmp_path, monkeypatch):
    path = write(tmp_path, amber.dumps({"a": 1}, key=SECRET, compress="zstd"))
    monkeypatch.setenv("AMBER_TEST_KEY", SECRET.decode())
    run = cli("verify", path, "--key-env", "AMBER_TEST_KEY")
    assert run.status == 0, run.err
    assert run.text.startswith("signature OK: signed with key id ")


@pytest.mark.parametrize(
    ("secret", "kind"),
    [(b"another secret of 32 bytes, ok!!", "unknown_key")],
)
def test_verify_refuses_a_foreign_key(cli, tmp_path, secret, kind):
    path = write(tmp_path, amber.dumps([1], key=SECRET))
    run = cli("verify", path, "--key-file", _key_file(tmp_path, secret))
    assert run.status == 1
    assert kind in run.err and "Traceback" not in run.err
    assert run.out == b""


def test_verify_refuses_a_tampered_payload(cli, tmp_path):
    data = bytearray(amber.dumps({"amount": 10}, key=SECRET))
    data[-40] ^= 0x01  # a body byte, before the 32-byte tag
    run = cli("verify", write(tmp_path, bytes(data)), "--key-file", _key_file(tmp_path))
    assert run.status == 1
    assert "bad_signature" in run.err


def test_verify_refuses_unsigned_input_and_needs_a_key(cli, tmp_path):
    path = write(tmp_path, amber.dumps([1]))
    assert "signature_required" in cli("verify", path, "--key-file", _key_file(tmp_path)).err
    run = cli("verify", path)
    assert run.status == 1 and "needs a key" in run.err


def test_verify_refuses_a_short_key_and_checks_the_age(cli, tmp_path, monkeypatch):
    short = write(tmp_path, b"short", "short")
    run = cli("verify", write(tmp_path, amber.dumps(1, key=SECRET)), "--key-file", short)
    assert run.status == 1 and "at least 16" in run.err
    monkeypatch.setattr("amber._clock.now", lambda: 1_000_000)
    old = write(tmp_path, amber.dumps(1, key=SECRET, timestamp=True), "old.amb")
    monkeypatch.setattr("amber._clock.now", lambda: 1_000_100)
    args = ("verify", old, "--key-file", _key_file(tmp_path))
    assert cli(*args, "--max-age", "200").status == 0
    run = cli(*args, "--max-age", "50")
    assert run.status == 1 and "expired" in run.err


def test_inspect_a_signed_payload_needs_its_key(cli, tmp_path):
    key = amber.SigningKey(SECRET, id=b"k1")
    data = amber.dumps([7], key=key)
    path = write(tmp_path, data)
    run = cli("inspect", path)
    assert run.status == 1 and "key_required" in run.err
    assert run.lines()[0] == "envelope: signed with key id k1"
    run = cli("inspect", path, "--key-file", _key_file(tmp_path), "--key-id", "k1")
    assert run.status == 0, run.err
    # header, key id length and id, signature flags: the list's tag is at 3 + 1 + 2 + 1.
    rows = [LINE.match(line) for line in run.lines()[1:3]]
    assert [(int(m.group(1)), m.group(4)) for m in rows if m] == [(0, "HEADER"), (7, "SHORT_LIST")]


def test_inspect_a_compressed_payload_shows_the_body(cli, tmp_path):
    value = list(range(100, 400))
    data = amber.dumps(value, compress="zstd")
    assert data[2] & 0x10, "expected the payload to be compressed"
    run = cli("inspect", write(tmp_path, data), "--max-lines", "2")
    assert run.status == 0, run.err
    lines = run.lines()
    assert lines[0].startswith("envelope: zstd-compressed")
    assert "decompressed body" in lines[1]
    plain = amber.dumps(value)
    first = LINE.match(lines[2])
    assert first is not None
    # The body's first value is the list, at body offset 0: its tag and count, from the
    # uncompressed payload (a packed list: its items are not values of their own).
    assert int(first.group(1)) == 0 and first.group(4) == "PACKED_INT_LIST"
    assert first.group(2).split() == [f"{b:02x}" for b in plain[3:6]]
    assert lines[-1] == f"end: {len(plain) - 3} bytes, 1 value"


def test_a_stream_is_shown_message_by_message(cli, tmp_path):
    buffer = io.BytesIO()
    with amber.StreamWriter(buffer) as writer:
        writer.write(None)
        writer.write([1, 2])
        stream = buffer.getvalue()
    stream += b"\x00"
    path = write(tmp_path, stream, "s.ambs")
    run = cli("inspect", path)
    assert run.status == 0, run.err
    lines = run.lines()
    # ab 53 01 | 04 payload(4) | 06 payload(6) | 00: payloads start at 4 and 9.
    assert lines[0] == "message 0 at 4:"
    assert "message 1 at 9:" in lines
    assert LINE.match(lines[lines.index("message 1 at 9:") + 2]).group(1) == "12"
    stats = cli("stats", path, "--json")
    assert stats.status == 0
    documents = [json.loads(part) for part in re.split(r"(?m)^(?=\{)", stats.text) if part]
    assert [d["label"] for d in documents] == ["message 0 at 4", "message 1 at 9"]
    cut = cli("inspect", write(tmp_path, stream[:-3], "cut.ambs"))
    assert cut.status == 1 and "truncated" in cut.err
