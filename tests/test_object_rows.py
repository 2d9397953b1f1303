"""Lists of instances of one class written as object rows (spec 5.17.9): OBJECT_ROWS.

The instances of a list made by a comprehension are held by the list alone, which CPython's
reference counts prove: such a list of instances of one class with the same attributes is
written with its shape once, then each instance's field values, a float field whose values
need FLOAT64 as a column of raw binary64.
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import math
import struct
from typing import Any

import amber
import pytest
from _common import HEADER, check_truncations, smallest_budget
from _vector_classes import Empty, Person, Point, Slotted, Temperature
from amber._compare import graph_diff as diff
from amber._inspect import inspect_lines, stats, trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROWS, OBJECT, LIST, SHORT_LIST, SHORT_TUPLE = 0x7D, 0x77, 0x71, 0x58, 0x5C
TRACKED = 0x80
FLOAT64, FLOAT32 = 0x6E, 0x6F
MODULE = bytes([15]) + b"_vector_classes"
POINT_SHAPE = MODULE + bytes([5]) + b"Point" + bytes([0, 2, 1]) + b"x" + bytes([1]) + b"y"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
TYPES = [Point, Person, Empty, Slotted, Temperature]


def points(n: int, start: int = 0) -> list[Point]:
    """n new Points whose x is a float nothing else holds, y an int."""
    return [Point(float(i) / 7 + 0.001, i) for i in range(start, start + n)]


def roundtrip(value: Any, **options: Any) -> bytes:
    data = amber.dumps(value, **options)
    out = amber.loads(data, types=TYPES)
    if options.get("refs", True):
        assert diff(value, out) is None
    else:
        assert out == value
    return data


def f64(x: float) -> bytes:
    return struct.pack("<d", x)


def decode_error(data: bytes, **options: Any) -> tuple[str, int]:
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=TYPES, **options)
    return info.value.kind, info.value.offset


# -- the spec's examples and the rule ------------------------------------------------------


def test_spec_examples():
    assert amber.dumps([Point(1, 2), Point(3, 4)]) == HEADER + bytes(
        [ROWS, 2, 0, *POINT_SHAPE, 0, 1, 2, 3, 4]
    )
    x0, x1 = float("0.1"), float("0.2")  # not constants of this code: nothing else holds them
    value = [Point(x0, "a"), Point(x1, "b")]
    del x0, x1
    expected = HEADER + bytes([ROWS, 2, 0, *POINT_SHAPE, 1, 0])
    expected += f64(0.1) + b"\x41a" + f64(0.2) + b"\x41b"
    assert amber.dumps(value) == expected
    # In a tuple, each instance is an OBJECT, the second referring to the shape.
    assert amber.dumps((Point(1, 2), Point(3, 4))) == HEADER + bytes(
        [SHORT_TUPLE + 2, OBJECT, 0, *POINT_SHAPE, 1, 2, OBJECT, 1, 3, 4]
    )


def test_rows_drop_each_instance_tag_shape_number_and_float_tag():
    value = points(100)
    rows = roundtrip(value)
    assert rows[3] == ROWS
    objects = amber.dumps(tuple(points(100)))
    # Per instance: the OBJECT tag and shape number, and the float's tag; the rows pay for
    # their shape reference (the OBJECTs' first one is in their first instance) and for the
    # column count and index.
    assert len(objects) - len(rows) == 100 * 3 - 3


def test_decoded_rows_are_instances_of_the_class():
    out = amber.loads(amber.dumps(points(5)), types=[Point])
    assert all(type(p) is Point for p in out)
    assert [p.y for p in out] == list(range(5))
    assert len({id(p) for p in out}) == 5


def test_one_instance_two_classes_or_no_fields_stay_a_list():
    assert amber.dumps([Point(1, 2)])[3] == SHORT_LIST + 1
    assert amber.dumps([Point(1, 2), Person("a", 1, None)])[3] == SHORT_LIST + 2
    assert amber.dumps([Empty(), Empty()])[3] == SHORT_LIST + 2
    assert amber.dumps([Point(1, 2), 5])[3] == SHORT_LIST + 2
    assert amber.dumps([5, Point(1, 2)])[3] == SHORT_LIST + 2


def test_instances_with_other_attributes_keep_the_list_a_list():
    value = points(4)
    value[2].extra = 1  # type: ignore[attr-defined]
    data = amber.dumps(value)
    assert data[3] == LIST
    assert data.count(b"Point") == 2
    # Point is a dataclass: the field its class lacks is dropped (spec 5.17.5).
    assert amber.loads(data, types=[Point]) == value
    value = points(4)
    del value[3].y
    data = amber.dumps(value)
    assert data[3] == LIST
    assert decode_error(data)[0] == "missing_field"


def test_slots_and_frozen_slotted_dataclasses_are_rows():
    slotted = []
    for i in range(3):
        s = Slotted()
        s.a = i
        slotted.append(s)
    del s
    data = amber.dumps(slotted)
    assert data[3] == ROWS
    assert [s.a for s in amber.loads(data, types=[Slotted])] == [0, 1, 2]
    # A slot left unset is no field: that instance has another shape.
    slotted.append(Slotted())
    assert amber.dumps(slotted)[3] == LIST
    data = amber.dumps([Frozen(1.5 + i / 3, str(i)) for i in range(3)])
    assert data[3] == ROWS
    assert amber.loads(data, types=[Frozen]) == [Frozen(1.5 + i / 3, str(i)) for i in range(3)]


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    a: float
    b: str


def test_an_instance_held_by_a_caller_variable_keeps_a_list():
    value = points(3)
    held = value[1]
    assert amber.dumps(value)[3] == SHORT_LIST + 3
    del held
    assert amber.dumps(value)[3] == ROWS


def test_an_instance_held_twice_in_the_graph_is_written_once():
    p = Point(1, 2)
    value = [p, Point(3, 4), p]
    data = roundtrip(value)
    assert data[3] == SHORT_LIST + 3
    assert data.count(b"Point") == 1


def test_refs_off_writes_an_instance_held_twice_as_two_rows():
    p = Point(float("0.5") / 3, 2)
    value = [p, p]
    data = amber.dumps(value, refs=False)
    assert data[3] == ROWS
    out = amber.loads(data, types=[Point])
    assert out == value and out[0] is not out[1]


def test_canonical_mode_never_writes_rows():
    data = amber.dumps(points(3), canonical=True)
    assert data[3] == SHORT_LIST + 3
    assert amber.loads(data, types=[Point]) == points(3)


def test_cycles_through_the_list_and_through_values():
    value: list[Any] = []
    value += [Point(value, 1), Point(2, value)]
    data = roundtrip(value)
    assert data[3] == ROWS | TRACKED
    out = amber.loads(data, types=[Point])
    assert out[0].x is out and out[1].y is out
    # An instance that holds itself is held twice: it stays an OBJECT.
    me = Point(0, 0)
    me.x = me
    data = roundtrip([me, Point(1, 2)])
    assert data[3] == SHORT_LIST + 2


def test_deque_items_are_rows():
    value = collections.deque(points(3), maxlen=5)
    data = roundtrip(value)
    assert bytes([ROWS, 3, 0]) + POINT_SHAPE in data


def test_a_later_object_refers_to_the_shape_the_rows_defined():
    value = {"rows": points(2), "one": Point(1, 2)}
    data = roundtrip(value)
    assert data.count(b"Point") == 1
    assert data.endswith(bytes([OBJECT, 1, 1, 2]))


# -- float columns -------------------------------------------------------------------------


def test_a_first_value_float32_holds_keeps_the_column_tagged():
    value = [Point(float("0.5") * 1, i) for i in range(3)] + points(2)
    data = roundtrip(value)
    assert data[3] == ROWS
    assert data[4 + 2 + len(POINT_SHAPE)] == 0  # no float column
    assert bytes([FLOAT32]) in data


def test_a_later_value_that_is_not_a_float_tags_the_column():
    value = points(5)
    value[3].x = 7
    data = roundtrip(value)
    assert data[3] == ROWS
    columns_at = 4 + 1 + 1 + len(POINT_SHAPE)
    assert data[columns_at] == 0
    assert data[columns_at + 1] == FLOAT64


def test_a_later_float_float32_holds_is_a_column_value():
    value = points(3)
    value[1].x = float("2.5") * 1
    data = roundtrip(value)
    assert data[4 + 1 + len(POINT_SHAPE) + 1 : 4 + 1 + len(POINT_SHAPE) + 3] == bytes([1, 0])
    assert f64(2.5) in data


def test_a_shared_float_tags_the_column():
    value = points(3)
    shared = value[1].x
    value[2].x = shared
    data = roundtrip(value)
    assert data[4 + 1 + len(POINT_SHAPE) + 1] == 0
    out = amber.loads(data, types=[Point])
    assert out[1].x is out[2].x
    del shared
    # Held by a caller variable only: written by value, but not as a column (the encoder
    # cannot tell that the variable is outside the graph).
    value = points(3)
    held = value[0].x
    assert amber.dumps(value)[4 + 1 + len(POINT_SHAPE) + 1] == 0
    del held


def test_two_float_columns_and_a_tagged_one():
    value = [Person(float(i) / 3, float(i) / 7, i * 1.0 + 0.25) for i in range(1, 4)]
    value[2].email = "x"
    data = roundtrip(value)
    columns_at = data.index(b"email") + len(b"email")
    assert data[columns_at : columns_at + 3] == bytes([2, 0, 1])


@pytest.mark.parametrize("special", [math.inf, -math.inf, math.nan, -0.0, 5e-324, 1e308])
def test_special_floats_in_a_column_keep_their_bits(special):
    value = points(3)
    value[1].x = struct.unpack("<d", struct.pack("<d", special))[0]
    data = amber.dumps(value)
    out = amber.loads(data, types=[Point])
    assert struct.pack("<d", out[1].x) == struct.pack("<d", value[1].x)
    # A NaN from the payload with another payload of bits.
    raw = bytearray(data)
    at = raw.index(struct.pack("<d", value[1].x))
    raw[at : at + 8] = bytes.fromhex("0100000000f8ff7f")[::-1]
    out = amber.loads(bytes(raw), types=[Point])
    assert struct.pack("<d", out[1].x) == bytes.fromhex("0100000000f8ff7f")[::-1]


# -- class code during the encode ----------------------------------------------------------


class Meddler(Temperature):
    """Changes the list it sits in when it is first written (its __getstate__ runs mid-list)."""

    def __init__(self, target: list[Any], change: str) -> None:
        super().__init__(1, "C")
        self.target, self.change, self.done = target, change, False

    def __getstate__(self) -> tuple[Any, Any]:
        if not self.done:
            self.done = True
            last = self.target[-1]
            if self.change == "shrink":
                self.target.clear()
            elif self.change == "add a field":
                last.z = 1
            elif self.change == "not a float":
                last.x = "no"
            elif self.change == "other class":
                self.target[-1] = Person(1, 2, 3)
            elif self.change == "replace":
                self.target[-1] = Point(float("9.5") / 7, 9)
        gc.collect()  # what the list dropped is gone, unless the encoder holds it
        return (1, "C")


def test_a_list_shrunk_by_class_code_is_an_error():
    value = points(4)
    value[1].y = Meddler(value, "shrink")  # type: ignore[assignment]
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value, types=[Meddler, Point])
    assert "changed" in str(info.value)


@pytest.mark.parametrize(
    ("change", "first"), [("add a field", LIST), ("other class", LIST), ("not a float", ROWS)]
)
def test_a_row_changed_by_class_code_restarts_the_encode(change, first):
    value = points(4)
    value[1].y = Meddler(value, change)  # type: ignore[assignment]
    data = amber.dumps(value, types=[Meddler, Point, Person])
    assert data[3] == first
    out = amber.loads(data, types=[Meddler, Point, Person])
    assert type(out[3]) is type(value[3])
    # (A field Point lacks, such as the one added, is dropped by the dataclass's decode.)
    assert out[3] == value[3]


def test_a_row_replaced_by_an_instance_of_the_same_shape_is_written():
    value = points(4)
    value[1].y = Meddler(value, "replace")  # type: ignore[assignment]
    data = amber.dumps(value, types=[Meddler, Point])
    assert data[3] == ROWS
    assert amber.loads(data, types=[Meddler, Point])[3].y == 9


def test_an_error_in_a_row_names_its_place():
    value = points(4)
    value[2].y = object()  # type: ignore[assignment]
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value)
    assert info.value.path == "root[2].y"
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"q": collections.deque(value)})
    assert info.value.path == 'root["q"][2].y'


def test_max_depth_counts_the_rows_level():
    value = [Point(1, 2), Point(3, 4)]
    with pytest.raises(amber.EncodeError):
        amber.dumps(value, max_depth=1)
    data = amber.dumps(value, max_depth=2)
    assert data[3] == ROWS
    assert amber.loads(data, max_depth=2, types=[Point]) == value
    assert decode_error(data, max_depth=1) == ("depth_limit", 3)
    nested = [Point([], 1), Point([], 2)]
    with pytest.raises(amber.EncodeError):
        amber.dumps(nested, max_depth=2)
    assert amber.loads(amber.dumps(nested, max_depth=3), max_depth=3, types=[Point]) == nested


# -- decoding ------------------------------------------------------------------------------


def test_placeholders_are_written_back_as_the_same_rows():
    value = {"a": points(3), "b": [Person("x", float("1") / 3, None) for _ in range(2)]}
    data = amber.dumps(value)
    held = amber.loads(data, placeholders=True)
    assert all(isinstance(p, amber.Placeholder) for p in held["a"])
    assert amber.dumps(held) == data


def test_a_class_not_allowed_fails_at_the_rows_tag():
    data = amber.dumps(points(2))
    with pytest.raises(amber.ClassNotAllowedError) as info:
        amber.loads(data)
    assert info.value.offset == 3


def test_unknown_and_missing_fields_are_reported_at_the_rows_tag():
    body = bytes([ROWS, 2, 0]) + MODULE + bytes([5]) + b"Point" + bytes([0, 3, 1]) + b"x"
    body += bytes([1]) + b"y" + bytes([1]) + b"z" + bytes([0, 1, 2, 3, 4, 5, 6])
    assert decode_error(HEADER + body, unknown_fields="error") == ("unknown_field", 3)
    out = amber.loads(HEADER + body, types=[Point], unknown_fields="ignore")
    assert out == [Point(1, 2), Point(4, 5)]
    body = bytes([ROWS, 2, 0]) + MODULE + bytes([5]) + b"Point" + bytes([0, 1, 1]) + b"x"
    body += bytes([0, 1, 2])
    assert decode_error(HEADER + body) == ("missing_field", 3)


def test_a_shape_of_another_kind_is_refused():
    enum_shape = MODULE + bytes([11]) + b"Temperature" + bytes([1])
    assert decode_error(HEADER + bytes([ROWS, 2, 0]) + enum_shape + bytes([0, 1, 2])) == (
        "bad_shape",
        3,
    )


def test_huge_counts_fail_before_allocating():
    body = bytes([ROWS]) + b"\xff" * 8 + b"\x7f" + bytes([0]) + POINT_SHAPE + bytes([0, 1, 2])
    assert decode_error(HEADER + body) == ("length_too_large", 3)
    body = bytes([ROWS, 3, 0]) + POINT_SHAPE + bytes([1, 0]) + bytes(26)
    assert decode_error(HEADER + body) == ("length_too_large", 3)


def test_max_alloc_charges_like_the_list_of_objects():
    """Rows need at most the budget of the LIST of the same OBJECTs, less the tracked
    float slots (32 bytes each) that the column does not need."""
    rows = amber.dumps(points(50))
    assert rows[3] == ROWS
    held = points(50)
    keep = list(held)
    plain = amber.dumps(held)
    del keep
    assert plain[3] == LIST
    assert smallest_budget(rows, types=TYPES) <= smallest_budget(plain, types=TYPES)
    assert decode_error(rows, max_alloc=smallest_budget(rows, types=TYPES) - 1)[1] == 3


def test_every_truncation_fails_cleanly():
    check_truncations(amber.dumps([Point(float(i) / 3, [i, "s"]) for i in range(4)]), TYPES)
    check_truncations(amber.dumps([Person("a", i / 3, None) for i in range(1, 4)]), TYPES)


def test_trace_inspect_and_stats():
    data = amber.dumps([Point(float("1") / 3, "a"), Point(float("2") / 3, "b")])
    result = trace(data, max_depth=1000, max_alloc=None, max_events=None)
    assert result.error is None
    head = result.events[0]
    assert head.info[:4] == ("object_rows", 2, 0, True)
    assert head.info[5] == ("x",)
    assert [e.info[0] for e in result.events[1:]] == ["column_float", "data"] * 2
    assert [e.name for e in result.events[1:3]] == ["column", "SHORT_STR"]
    assert [e.depth for e in result.events] == [0, 2, 2, 2, 2]
    lines = list(inspect_lines(data, result, show_hex=False))
    assert lines[1].split(maxsplit=2)[2] == (
        "list of 2 instances of _vector_classes:Point, as object rows, shape 0 "
        "(defined here: x, y); float column: x"
    )
    assert lines[2].split()[1:] == ["row", "0", "_vector_classes:Point", "of", "2", "fields"]
    assert lines[3].split(maxsplit=2)[1:] == [
        "column",
        "0.3333333333333333 (float column x: 8 bytes, no tag)",
    ]
    counted = stats(len(data), result.events)
    assert counted.objects["_vector_classes:Point"].count == 2
    assert counted.shapes == 1
    assert counted.types["float"].count == 2
    assert counted.types["list"].count == 1


# -- properties ----------------------------------------------------------------------------

field_values = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(0, 3), max_size=2),
)


@SETTINGS
@given(st.lists(st.tuples(field_values, field_values), min_size=0, max_size=8), st.booleans())
def test_lists_of_points_round_trip(pairs, refs):
    # Fields that nothing else holds (hypothesis keeps what it draws): decoded copies.
    fresh = amber.loads(amber.dumps([list(p) for p in pairs], refs=False))
    value = [Point(x, y) for x, y in fresh]
    del fresh
    data = amber.dumps(value, refs=refs)
    out = amber.loads(data, types=[Point])
    assert out == value
    if len(value) >= 2:
        assert data[3] & ~TRACKED == ROWS
    # A copy built from the decoded value encodes to the same bytes (columns included).
    assert amber.dumps(amber.loads(data, types=[Point]), refs=refs) == data
