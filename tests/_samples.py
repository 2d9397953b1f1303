"""Small hand-made sample graphs (no hypothesis): fuzzing seeds and API test payloads."""

from __future__ import annotations

import math
import struct
from typing import Any


def sample_objects() -> list[Any]:
    shared_list = [1, 2, "three"]
    shared_str = "".join(["shared", "-", "string"])
    shared_tuple = (4, "five", 6.0)
    selfref: list[Any] = [0]
    selfref.append(selfref)
    selfdict: dict[str, Any] = {"a": 1}
    selfdict["me"] = selfdict
    cyc_tuple: tuple[list[Any], int] = ([], 7)
    cyc_tuple[0].append(cyc_tuple)
    nan_payload = struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0]
    shared_float = 1 / 9
    shared_str = "-".join(["shared", "row", "item"])
    rows = [(i, str(i) * 2) for i in range(4)]
    twice = (str(7) * 3, 7)
    return [
        None,
        True,
        0,
        63,
        64,
        -17,
        2**63,
        -(2**100),
        0.5,
        0.1,
        -0.0,
        math.nan,
        nan_payload,
        complex(1, -0.0),
        "",
        "short",
        "x" * 30,
        "é😀",
        "a\ud800b",
        b"\x00\xff",
        bytearray(b"ba"),
        [],
        [1, [2, [3, [4]]]],
        (1, 2, 3, 4),
        {"k": "v", 1: 2.5, (1, 2): None, frozenset({3}): b""},
        dict.fromkeys(range(9), 0),
        {1, 2, (3, 4)},
        frozenset({"a", 5}),
        [shared_list, shared_list, {"s": shared_list}],
        [shared_str, shared_str, {shared_str: shared_str}],
        [shared_tuple, {shared_tuple}, {shared_tuple: shared_tuple}],
        selfref,
        selfdict,
        cyc_tuple,
        [cyc_tuple, cyc_tuple[0], cyc_tuple],
        {"users": [{"id": i, "name": f"user{i}", "tags": ("a", "b")} for i in range(3)]},
        # packed lists: ints at the varint widths, floats, and one kept unpacked by sharing
        [2**k - 1 for k in range(2, 64, 7)] + [-(2**63)],
        [i / 7 for i in range(6)],
        [shared_float, 1 / 3, 2 / 3, shared_float],
        # lists of tuples written as rows: plain rows, rows with a str shared across them, a
        # tracked one referred to again, and one kept a LIST by a tuple held twice
        [(i / 7, f"row-{i}") for i in range(5)],
        [(shared_str, i, None) for i in range(4)],
        [rows, {"again": rows}],
        [twice, *((i, str(i)) for i in range(3)), twice],
    ]
