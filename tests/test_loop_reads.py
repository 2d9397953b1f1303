"""The decoder reads the common values of a container's items in the container's own loop
(`Decoder::value_in_loop`: inline ints, None and booleans, short strs tracked or not, INT,
FLOAT64, REF, and untracked short lists, tuples and dicts); `amber._amber._trace` decodes
through the general path only. Both must give the same value, or fail with the same kind at
the same offset, for every prefix of a payload, every allocation budget around the one it
needs and every depth limit from 1 to 5."""

from __future__ import annotations

import dataclasses
from typing import Any

import amber
import pytest
from _common import smallest_budget
from amber import _amber
from amber._compare import graph_diff


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float
    count: int
    extra: Any


SHARED = ["shared"]
# A str met twice: its first write is a tracked SHORT_STR.
AGAIN = "".join(["ag", "ain"])

# Every kind of value value_in_loop reads itself (short containers included), and some it
# hands on (a FLOAT32, a tracked list).
ITEMS: list[Any] = [
    5, -3, 63, "abc", "", "é", 1000, -70_000, 2**40, 0.1, -0.0, AGAIN, SHARED, [1], (2, "t"),
    {"k": 3}, None, True, False,
]  # fmt: skip

PAYLOADS = {
    "list": [*ITEMS, SHARED, AGAIN],
    "tuple": (*ITEMS, SHARED, AGAIN),
    "dict values": {f"k{i}": v for i, v in enumerate([*ITEMS, SHARED, AGAIN])},
    "records": [{"a": v, "b": w} for v, w in zip(ITEMS, reversed(ITEMS), strict=True)],
    "tuple list": [(v, "x", 7) for v in ITEMS],
    "object rows": [
        Reading("t1", 0.5, 1000, SHARED),
        Reading("t2", 2.25, -4, 7),
        Reading("t3", 1.0, 2**33, SHARED),
        Reading("t4", 3.5, 0, 0.1),
        Reading("t5", 4.0, 1, AGAIN),
        Reading("t6", 4.5, 2, AGAIN),
        Reading("t7", 5.0, 3, [1, (2, "t"), {"k": 3}]),
        Reading("t8", 5.5, 4, None),
        Reading("t9", 6.0, 5, True),
        Reading("t10", 6.5, 6, False),
    ],
}


def outcome(data: bytes, **limits: int) -> tuple[str, Any]:
    try:
        return "value", amber.loads(data, placeholders=True, **limits)
    except amber.DecodeError as e:
        return e.kind, e.offset


def traced(data: bytes, **limits: int) -> tuple[str, Any]:
    error = _amber._trace(data, **limits)[2]
    return ("value", None) if error is None else (error.kind, error.offset)


def same(data: bytes, **limits: int) -> None:
    fast, general = outcome(data, **limits), traced(data, **limits)
    if fast[0] == "value":
        assert general[0] == "value", (limits, general)
    else:
        assert fast == general, limits


@pytest.mark.parametrize("name", PAYLOADS)
def test_in_loop_reads_fail_as_the_general_path_does(name):
    data = amber.dumps(PAYLOADS[name])
    back = amber.loads(data, types=[Reading])
    # Types too: True == 1, and a boolean read as an int would pass `==`.
    assert graph_diff(back, PAYLOADS[name]) is None
    for cut in range(3, len(data) + 1):
        same(data[:cut])
    need = smallest_budget(data, placeholders=True)
    for budget in range(max(1, need - 600), need + 1):
        same(data, max_alloc=budget)
    for depth in range(1, 6):
        same(data, max_depth=depth)


def test_the_payloads_use_the_forms_they_are_named_for():
    tags = {
        name: {event[4] for event in _amber._trace(amber.dumps(value))[0]}
        for name, value in PAYLOADS.items()
    }
    for name in PAYLOADS:
        assert {"SMALL_INT", "SMALL_NEG", "SHORT_STR", "INT", "FLOAT64", "REF"} <= tags[name], name
        assert {"NONE", "TRUE", "FALSE"} <= tags[name], name
        assert {"SHORT_LIST", "SHORT_TUPLE", "SHORT_DICT"} <= tags[name], name
        events = _amber._trace(amber.dumps(PAYLOADS[name]))[0]
        tracked_strs = [e for e in events if e[4] == "SHORT_STR" and e[6] is not None]
        assert tracked_strs, name
    assert "RECORDS" in tags["records"]
    assert "TUPLE_LIST" in tags["tuple list"]
    assert "OBJECT_ROWS" in tags["object rows"]
