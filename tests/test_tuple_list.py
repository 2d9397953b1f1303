"""Lists of tuples of one length written as rows (spec 5.11.1): TUPLE_LIST.

Tuples are made at run time (`fresh_rows` below) where the bytes matter: the extension writes
a list as rows only when CPython's reference counts prove that the list alone holds each
tuple, and a literal's tuples are constants, which the code object holds too.
"""

from __future__ import annotations

import collections
import gc
import tracemalloc
from typing import Any

import amber
import pytest
from _common import HEADER, check_truncations, smallest_budget, varint
from _ref import encode_float, ref_dumps
from _strategies import atoms, checked_fresh_copy, fresh_copy, tuple_lists
from _vector_classes import Pair, Point, Temperature
from amber._compare import graph_diff as diff
from amber._inspect import inspect_lines, trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TUPLE_LIST, LIST, SHORT_LIST, REF, SUPERSEDE = 0x7C, 0x71, 0x58, 0x93, 0x94
TRACKED = 0x80
HUGE = b"\xff" * 9 + b"\x01"  # varint 2**64 - 1
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def fresh_rows(n: int, k: int, start: int = 0) -> list[tuple[Any, ...]]:
    """n new tuples of k items each, ints and strs that nothing else holds."""
    return [
        tuple(int(str(1000 + start + k * r + c)) if c % 2 == 0 else f"r{r}c{c}" for c in range(k))
        for r in range(n)
    ]


def header(n: int, k: int) -> bytes:
    return bytes([TUPLE_LIST]) + varint(n) + varint(k)


def check(value: Any) -> bytes:
    """dumps(value): the reference encoder's bytes, and an exact round trip."""
    data = amber.dumps(value)
    assert data.hex(" ") == ref_dumps(value).hex(" ")
    assert diff(value, amber.loads(data)) is None
    return data


def decode_error(data: bytes, **options: Any) -> tuple[str, int]:
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **options)
    return info.value.kind, info.value.offset


def error_and_peak(data: bytes, **options: Any) -> tuple[tuple[str, int], int]:
    """The (kind, offset) of decoding `data`, which must fail, and the peak of memory that
    Python's allocator saw meanwhile."""
    tracemalloc.start()
    try:
        error = decode_error(data, **options)
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- the form ------------------------------------------------------------------------------


def test_pairs_are_rows_and_one_byte_a_row_shorter():
    value = [((i + 0.1) / 7, f"struct-{i}") for i in range(100)]
    data = check(value)
    items = b"".join(encode_float(x) + bytes([0x40 + len(s)]) + s.encode() for x, s in value)
    assert data == HEADER + header(100, 2) + items
    # The LIST form pays a SHORT_TUPLE tag per row, and no arity.
    assert len(HEADER + bytes([LIST]) + varint(100) + b"\x5e" * 100 + items) == len(data) + 99


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 130])
def test_rows_of_every_arity(k):
    value = fresh_rows(6, k)
    data = check(value)
    assert data[3:4] == bytes([TUPLE_LIST]) and data[4:].startswith(varint(6) + varint(k))
    out = amber.loads(data)
    assert type(out) is list and all(type(row) is tuple and len(row) == k for row in out)
    assert out == value


def test_decoded_rows_are_plain_tuples_of_their_own():
    out = amber.loads(HEADER + header(4, 1) + b"\x05\x05\x05\x05")
    assert out == [(5,), (5,), (5,), (5,)]
    assert type(out) is list and {type(row) for row in out} == {tuple}
    assert len({id(row) for row in out}) == 4  # four tuples, not one shared
    out.append(1)  # an ordinary, mutable list


def test_spec_examples():
    """The examples of spec 5.11.1, with tuples made at run time."""
    a, b, c, d = (str(n) for n in "abcd")
    assert check([(1, a), (2, b), (3, c), (4, d)]).hex(" ") == (
        "ab 41 01 7c 04 02 01 41 61 02 41 62 03 41 63 04 41 64"
    )
    assert check([tuple([n]) for n in range(1, 5)]).hex(" ") == "ab 41 01 7c 04 01 01 02 03 04"
    s = " ".join(["hello", "world"])
    shared = [(s, n) for n in range(1, 5)]
    del s
    assert check(shared).hex(" ") == (
        "ab 41 01 7c 04 02 cb 68 65 6c 6c 6f 20 77 6f 72 6c 64 01 93 03 02 93 03 03 93 03 04"
    )
    pairs = [tuple([n, n + 1]) for n in (1, 3, 5, 7)]
    assert check([pairs, pairs]).hex(" ") == ("ab 41 01 5a fc 04 02 01 02 03 04 05 06 07 08 93 01")
    cycle: list[Any] = []
    cycle += [(cycle,), *(tuple([n]) for n in (5, 6, 7))]
    assert check(cycle).hex(" ") == "ab 41 01 fc 04 01 93 00 05 06 07"
    t = tuple([1, 2])
    value = [t, tuple([3, 4]), tuple([5, 6]), t]
    del t
    assert check(value).hex(" ") == "ab 41 01 71 04 de 01 02 5e 03 04 5e 05 06 93 02"


def test_literal_tuples_are_constants_and_keep_a_list():
    """The note under the spec's examples: the code object holds a literal's tuples, so the
    extension cannot prove them unshared; the reference encoder, counting holders in the
    graph only, writes rows."""
    value = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert amber.dumps(value)[3] == LIST
    assert ref_dumps(value)[3] == TUPLE_LIST
    assert diff(value, amber.loads(amber.dumps(value))) is None


# -- what is written as rows ---------------------------------------------------------------


def test_three_tuples_stay_a_short_list_and_four_are_rows():
    for n in range(4):
        assert check(fresh_rows(n, 2))[3] == SHORT_LIST + n
    assert check(fresh_rows(4, 2))[3] == TUPLE_LIST


class Row(tuple):
    pass


@pytest.mark.parametrize(
    "misfit",
    ["other length", "empty", "list", "None", "named tuple"],
)
@pytest.mark.parametrize("where", [0, 1, 4])
def test_a_misfit_keeps_the_list_a_list(misfit, where):
    value: list[Any] = fresh_rows(4, 2)
    odd: Any = {
        "other length": tuple([7, 8, 9]),
        "empty": (),
        "list": [7, 8],
        "None": None,
        "named tuple": Pair(7, 8),
    }[misfit]
    value.insert(where, odd)
    data = amber.dumps(value)
    assert data[3] == LIST
    if misfit != "named tuple":  # the reference encoder writes no classes
        assert ref_dumps(value)[3] == LIST
    assert diff(value, amber.loads(data, types=[Pair])) is None


def test_empty_tuples_are_never_rows():
    value = [(), (), (), ()]
    assert check(value) == HEADER + bytes([LIST, 4]) + b"\x5c" * 4


def test_named_tuples_are_objects_not_rows():
    value = [Pair(i, str(i)) for i in range(4)]
    data = amber.dumps(value)
    assert data[3] == LIST and data[5] == 0x77
    assert diff(value, amber.loads(data, types=[Pair])) is None


def test_a_tuple_subclass_is_not_written_as_a_row():
    # The scan checks exact types: a subclass after good rows is not slipped into the rows,
    # and keeps its class (VALUE_SUBCLASS).
    value: list[Any] = [*fresh_rows(4, 2), Row((1, 2))]
    back = amber.loads(amber.dumps(value), types=[Row])
    assert [type(r) for r in back] == [tuple] * 4 + [Row]
    assert back == value
    rows = amber.loads(amber.dumps([Row((i, i)) for i in range(4)]), types=[Row])
    assert [type(r) for r in rows] == [Row] * 4


def test_a_tuple_held_by_a_caller_variable_keeps_a_list():
    value = fresh_rows(5, 2)
    held = value[3]
    data = amber.dumps(value)
    assert data[3] == LIST
    assert ref_dumps(value)[3] == TUPLE_LIST  # the graph holds it once
    assert diff(value, amber.loads(data)) is None
    del held
    assert amber.dumps(value)[3] == TUPLE_LIST


def test_a_tuple_held_twice_in_the_graph_is_written_once():
    value = fresh_rows(4, 2)
    value.append(value[1])
    data = check(value)
    assert data[3] == LIST
    out = amber.loads(data)
    assert out[4] is out[1]


def test_refs_off_and_canonical_write_a_shared_tuple_in_every_row():
    t = (str(10**6), 1.5)
    value = [t, t, t, t]
    rows = HEADER + header(4, 2) + amber.dumps(t, refs=False)[4:] * 4
    assert amber.dumps(value, refs=False) == ref_dumps(value, refs=False) == rows
    assert amber.dumps(value, canonical=True) == ref_dumps(value, canonical=True) == rows
    assert amber.dumps(value)[3] == LIST


def test_refs_off_a_cycle_through_a_row_is_an_encode_error():
    value: list[Any] = fresh_rows(3, 1)
    value.insert(0, (value,))
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value, refs=False)
    assert "cycle" in str(info.value)


# -- identity ------------------------------------------------------------------------------


def test_items_shared_across_rows_and_outside_stay_shared():
    word = "-".join(["shared", "word"])
    inner: list[Any] = []
    value = {"before": inner, "rows": [(word, inner, i) for i in range(5)], "after": word}
    data = check(value)
    out = amber.loads(data)
    rows = out["rows"]
    assert all(row[0] is out["after"] for row in rows)
    assert all(row[1] is out["before"] for row in rows)
    out["before"].append(1)
    assert rows[4][1] == [1]


def test_a_tracked_tuple_list_is_one_list():
    rows = fresh_rows(4, 2)
    value = [rows, {"k": rows}, (rows,)]
    data = check(value)
    assert data[4] == TUPLE_LIST | TRACKED
    out = amber.loads(data)
    assert out[0] is out[1]["k"] is out[2][0]
    out[0].append("new")
    assert out[2][0][-1] == "new"


def test_cycles_through_the_list_and_through_its_rows():
    value: list[Any] = []
    d: dict[str, Any] = {"list": value}
    value.extend([(value, 1), (d, 2), (value, 3), (d, 4)])
    data = check(value)
    assert data[3] == TUPLE_LIST | TRACKED
    out = amber.loads(data)
    assert out[0][0] is out and out[2][0] is out
    assert out[1][0] is out[3][0] and out[1][0]["list"] is out


def test_rows_inside_a_tuple_cycle_are_written_once():
    """A tuple met again while it is written is written twice (SUPERSEDE); the list of rows
    inside it is a list, written once, whose rows lose nothing."""
    rows = fresh_rows(4, 2)
    t: tuple[Any, ...] = ([], rows)
    t[0].append(t)
    del rows
    data = check(t)
    assert data[3] == SUPERSEDE
    assert data.count(bytes([TUPLE_LIST | TRACKED, 4, 2])) == 1
    out = amber.loads(data)
    assert out[0][0] is out and out[1] == fresh_rows(4, 2)


def test_a_ref_to_where_a_row_starts_is_its_first_item():
    # [[("ab",), ("cd",), ("ef",), ("gh",)], "ab"], the first item tracked (spec 6.3)
    body = bytes.fromhex("5a 7c 04 01 c26162 426364 426566 426768 9304")
    out = amber.loads(HEADER + body)
    assert out[1] == "ab" and out[1] is out[0][0][0]
    # the same REF to an untracked first item has nothing to point at
    assert decode_error(HEADER + body.replace(b"\xc2", b"\x42")) == ("bad_reference", 19)


# -- the Python encoder's paths ------------------------------------------------------------


def test_deque_items_are_rows():
    q = collections.deque(fresh_rows(5, 3), maxlen=9)
    data = amber.dumps(q)
    assert diff(q, amber.loads(data)) is None
    assert data[3:6] == bytes([0x76, 0x09, 0x09])  # EXT DEQUE, maxlen 9
    assert data[6:9] == header(5, 3)
    shared = q[2]
    data = amber.dumps([q, shared])
    assert data[7] == LIST
    out = amber.loads(data)
    assert out[0][2] is out[1]


def test_object_attributes_are_rows():
    p = Point(fresh_rows(4, 2), fresh_rows(4, 1))
    data = amber.dumps(p)
    assert data.count(header(4, 2)) == 1 and data.count(header(4, 1)) == 1
    assert diff(p, amber.loads(data, types=[Point])) is None


def test_an_error_in_a_row_names_its_place():
    value: list[Any] = fresh_rows(4, 3)
    value[2] = (1, 2, object())
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value)
    assert info.value.path == "root[2][2]"
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"q": collections.deque(value)})
    assert info.value.path == 'root["q"][2][2]'


class Meddler(Temperature):
    """Changes the list it sits in when it is written (its __getstate__ runs mid-list)."""

    def __init__(self, target: list[Any], change: str) -> None:
        super().__init__(1, "C")
        self.target, self.change = target, change

    def __getstate__(self) -> tuple[Any, Any]:
        if self.change == "shrink":
            self.target.clear()
        elif self.change == "arity":
            self.target[-1] = (1, 2, 3)
        elif self.change == "replace":
            self.target[-1] = (7, 8)
        gc.collect()  # the rows the list dropped are gone, unless the encoder holds them
        return (1, "C")


@pytest.mark.parametrize("change", ["shrink", "arity"])
def test_a_list_changed_by_class_code_is_an_error(change):
    value: list[Any] = fresh_rows(4, 2)
    value[1] = (1, Meddler(value, change))
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value)
    assert "changed" in str(info.value)


def test_a_row_replaced_by_one_of_the_same_length_is_written():
    value: list[Any] = fresh_rows(4, 2)
    value[1] = (1, Meddler(value, "replace"))
    data = amber.dumps(value)
    out = amber.loads(data, types=[Meddler])
    assert out[3] == (7, 8)


# -- depth ---------------------------------------------------------------------------------


def test_max_depth_counts_the_rows_level():
    value = fresh_rows(4, 2)
    with pytest.raises(amber.EncodeError):
        amber.dumps(value, max_depth=1)
    data = amber.dumps(value, max_depth=2)
    assert amber.loads(data, max_depth=2) == value
    assert decode_error(data, max_depth=1) == ("depth_limit", 3)
    # both levels are checked at the tag, rows or not, before the count is read
    assert decode_error(HEADER + header(0, 1), max_depth=1) == ("depth_limit", 3)
    assert decode_error(HEADER + b"\x7c", max_depth=1) == ("depth_limit", 3)
    assert amber.loads(HEADER + header(0, 1), max_depth=2) == []


# -- hostile input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind", "offset"),
    [
        ("7c", "truncated", 4),
        ("7c 8000 01", "overlong_varint", 4),
        ("7c 04", "truncated", 5),
        ("7c 04 ffffffffffffffffff02", "varint_overflow", 5),
        ("7c 04 00", "length_too_large", 3),
        ("7c 00 00", "length_too_large", 3),
        # arity 0 is found before the count is compared with the input
        ("7c ffffffffffffffffff01 00", "length_too_large", 3),
        ("7c 04 02 01020304050607", "length_too_large", 3),
        ("7c 04 02 0102030405060708", None, None),
        ("7c 8080808010 8080808010 00", "length_too_large", 3),
        ("7c 02 02 6cd00f 01 02", "truncated", 11),
        ("7c 04 01 01 02 03 95", "unknown_tag", 9),
        ("5a 7c 01 03 01 01", "length_too_large", 4),
        ("dd 7c 04 01 9300 01 02 03", "incomplete_reference", 7),
        ("5a fc 00 c101 9303", "bad_reference", 8),
        ("61 7c 00 01 01", "unhashable", 4),
    ],
)
def test_each_decoder_check(body, kind, offset):
    data = HEADER + bytes.fromhex(body)
    if kind is None:
        assert amber.loads(data) == [(1, 2), (3, 4), (5, 6), (7, 8)]
    else:
        assert decode_error(data) == (kind, offset)


@pytest.mark.parametrize(
    "data",
    [
        HEADER + b"\x7c" + HUGE + b"\x01" + b"\x00" * 64,
        HEADER + b"\x7c\x01" + HUGE + b"\x00" * 64,
        HEADER + b"\x7c" + HUGE + HUGE + b"\x00" * 64,
        HEADER + b"\x7c" + HUGE + b"\x00",
        HEADER + b"\x7c" + varint(2**40) + varint(2**30) + b"\x00" * 64,
    ],
    ids=["rows", "arity", "both", "empty rows", "product beyond 2^64"],
)
def test_huge_counts_fail_before_allocating(data):
    error, peak = error_and_peak(data)
    assert error == ("length_too_large", 3)
    assert peak < 64 * 1024


def test_the_charge_for_every_tuple_comes_before_the_list():
    n = 200_000
    data = HEADER + header(n, 1) + b"\x00" * n
    # the list's own slots fit in the budget, its tuples do not
    error, peak = error_and_peak(data, max_alloc=8 * n)
    assert error == ("alloc_limit", 3)
    assert peak < 1024 * 1024  # no list of n slots, no tuple, was made
    assert len(amber.loads(data)) == n  # the default budget holds them


@pytest.mark.parametrize(
    "value",
    [
        [(i,) for i in range(300)],
        [(i, str(i) * 3, i / 7) for i in range(300)],
        [tuple([None] * 5) for _ in range(40)],
    ],
    ids=["one-tuples", "triples", "rows of five Nones"],
)
def test_max_alloc_charges_like_the_list(value):
    """Rows need the same allocation budget as the LIST of the same tuples."""
    rows = amber.dumps(value)
    assert rows[3] == TUPLE_LIST
    plain = HEADER + bytes([LIST]) + varint(len(value))
    plain += b"".join(amber.dumps(row)[3:] for row in value)
    assert amber.loads(plain) == value
    assert smallest_budget(rows) == smallest_budget(plain)


def test_every_truncation_fails_cleanly():
    nested: list[Any] = fresh_rows(4, 2)
    nested.append((fresh_rows(4, 1),) * 2)
    for data in (
        amber.dumps(nested),
        amber.dumps(fresh_rows(6, 3)),
        amber.dumps([fresh_rows(5, 1), {"k": fresh_rows(4, 4)}]),
        HEADER + header(2, 2) + header(1, 1) + b"\x05\x06\x07\x08",
    ):
        check_truncations(data)


# -- inspect -------------------------------------------------------------------------------


def test_trace_and_inspect_lines():
    s = "-".join(["shared", "str"])
    data = amber.dumps([(s, i) for i in range(4)])
    del s
    result = trace(data, max_depth=1000, max_alloc=None, max_events=None)
    assert result.error is None
    assert [(e.offset, e.depth, e.name, e.info) for e in result.events] == [
        (3, 0, "TUPLE_LIST", ("tuple_list", 4, 2)),
        (6, 2, "SHORT_STR", ("data", 10)),
        (17, 2, "SMALL_INT", ("scalar",)),
        (18, 2, "REF", ("ref", 6, 0)),
        (20, 2, "SMALL_INT", ("scalar",)),
        (21, 2, "REF", ("ref", 6, 0)),
        (23, 2, "SMALL_INT", ("scalar",)),
        (24, 2, "REF", ("ref", 6, 0)),
        (26, 2, "SMALL_INT", ("scalar",)),
    ]
    assert result.events[0].head_end == 6 and result.events[0].end == len(data)
    lines = list(inspect_lines(data, result, show_hex=False))
    assert lines[1] == "     3  TUPLE_LIST  list of 4 tuples of 2 items, as rows"
    assert lines[2] == "     6    row 0  tuple of 2 items"
    assert lines[3] == "     6      SHORT_STR  'shared-str'  [tracked #0]"
    assert [line.split()[:3] for line in lines if " row " in line] == [
        ["6", "row", "0"],
        ["18", "row", "1"],
        ["21", "row", "2"],
        ["24", "row", "3"],
    ]
    assert lines[-1] == f"end: {len(data)} bytes, 9 values"


# -- properties ----------------------------------------------------------------------------


@st.composite
def row_graphs(draw):
    """Lists of tuples of one length whose items come from a small pool (shared across rows,
    lists and a dict), some of them tuples taken from another list, some lists holding
    themselves."""
    pool = draw(st.lists(st.one_of(atoms, st.builds(list)), min_size=1, max_size=3))
    lists = draw(st.lists(tuple_lists(st.one_of(atoms, st.sampled_from(pool))), max_size=4))
    lists.append(fresh_rows(draw(st.integers(4, 6)), draw(st.integers(1, 3))))
    for target in lists:
        if draw(st.integers(0, 4)) == 0 and lists[0]:
            target.insert(draw(st.integers(0, len(target))), draw(st.sampled_from(lists[0])))
        if draw(st.integers(0, 9)) == 0:
            target.append((target,) * len(target[0]) if target and type(target[0]) is tuple else ())
    return {"lists": lists, "pool": pool, "again": lists[: draw(st.integers(0, len(lists)))]}


@SETTINGS
@given(row_graphs())
def test_row_graphs_round_trip_and_match_the_reference(x):
    y = checked_fresh_copy(x)
    assert amber.dumps(y, canonical=True) == ref_dumps(y, canonical=True)
    if not any(
        item is lst for lst in y["lists"] for row in lst if type(row) is tuple for item in row
    ):
        assert amber.dumps(y, refs=False) == ref_dumps(y, refs=False)
    assert amber.dumps(amber.loads(amber.dumps(y))) == amber.dumps(y)


@SETTINGS
@given(st.integers(4, 20), st.integers(1, 6), st.data())
def test_qualifying_lists_are_rows(n, k, data):
    value = [tuple(data.draw(st.lists(atoms, min_size=k, max_size=k))) for _ in range(n)]
    value = fresh_copy(value)
    encoded = check(value)
    assert encoded[3] == TUPLE_LIST
    assert encoded[4:].startswith(varint(n) + varint(k))
