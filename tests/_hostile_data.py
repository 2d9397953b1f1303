"""Builders of hostile payloads (imported by test_hostile.py and by its child interpreters)."""

from __future__ import annotations

import amber
from _common import HEADER, varint
from _ref import encode_int

HUGE = b"\xff" * 9 + b"\x01"  # varint 2**64 - 1


def nested_headers(tag: int, count: int, per_element: int = 1) -> bytes:
    """`count` nested container headers, each claiming every byte left after it."""
    parts = []
    total = 0
    for _ in range(count):
        header = bytes([tag]) + varint(total // per_element)
        parts.append(header)
        total += len(header)
    return HEADER + b"".join(reversed(parts))


def hostile_inputs() -> dict[str, bytes]:
    n = 10**6
    return {
        "deep_list": HEADER + b"\x59" * n + b"\x90",
        "deep_dict": HEADER + b"\x61\x00" * n + b"\x90",
        "nested_headers_list": nested_headers(0x71, 9_500),
        "nested_headers_dict": nested_headers(0x73, 9_500, 2),
        "nested_headers_set": nested_headers(0x74, 9_500),
        "huge_str": HEADER + b"\x68" + HUGE + b"a" * 100,
        "huge_list": HEADER + b"\x71" + HUGE + b"\x90" * 100,
        "huge_bigint": HEADER + b"\x6d" + HUGE + b"\x01" * 100,
        "many_empty_lists": HEADER + b"\x71" + varint(n) + b"\x58" * n,
        "many_empty_sets": HEADER + b"\x71" + varint(n // 2) + b"\x74\x00" * (n // 2),
        "many_empty_dicts": HEADER + b"\x71" + varint(n) + b"\x60" * n,
        "list_claims_all_of_empty_lists": HEADER + b"\x71" + varint(n) + b"\x58" * (n - 1),
        "huge_packed_ints": HEADER + b"\x78" + HUGE + b"\x00" * 100,
        "huge_packed_floats": HEADER + b"\x79" + HUGE + b"\x00" * 100,
        # one byte for each new int object (-64 is outside CPython's small ints)
        "packed_ints_of_one_byte": HEADER + b"\x78" + varint(n) + b"\x7f" * n,
        "packed_floats": HEADER + b"\x79" + varint(n // 8) + b"\x00" * (n // 8 * 8),
        "many_empty_packed_lists": HEADER + b"\x71" + varint(n // 2) + b"\x78\x00" * (n // 2),
        # TUPLE_LIST: a count or an arity that the input cannot hold, rows of one byte each
        # (a new tuple for every byte), and many lists of no rows
        "huge_tuple_list_rows": HEADER + b"\x7c" + HUGE + b"\x01" + b"\x00" * 100,
        "huge_tuple_list_arity": HEADER + b"\x7c\x01" + HUGE + b"\x00" * 100,
        "huge_tuple_list_of_empty_rows": HEADER + b"\x7c" + HUGE + b"\x00" + b"\x00" * 100,
        "tuple_list_of_one_byte_rows": HEADER + b"\x7c" + varint(n) + b"\x01" + b"\x00" * n,
        "many_empty_tuple_lists": HEADER + b"\x71" + varint(n // 3) + b"\x7c\x00\x01" * (n // 3),
        # RECORDS: a count or a width that the input cannot hold, rows of one value each (a
        # new dict for every byte), many lists of no rows, and a key list as long as the input
        "huge_records_rows": HEADER + b"\x7b" + HUGE + b"\x01\x41a" + b"\x00" * 100,
        "huge_records_width": HEADER + b"\x7b\x01" + HUGE + b"\x00" * 100,
        "huge_records_of_no_keys": HEADER + b"\x7b" + HUGE + b"\x00" + b"\x00" * 100,
        "records_of_one_byte_rows": HEADER + b"\x7b" + varint(n) + b"\x01\x41a" + b"\x00" * n,
        "many_empty_records": HEADER + b"\x71" + varint(n // 5) + b"\x7b\x00\x01\x41a" * (n // 5),
        "records_of_many_keys": HEADER
        + b"\x7b\x01"
        + varint(n // 4)
        + b"".join(b"\x43" + b"%03d" % (i % 1000) for i in range(n // 4)),
        "refs_to_big_list": HEADER
        + b"\x71"
        + varint(1001)
        + b"\xf1\xe8\x07"
        + b"\x00" * 1000
        + b"\x93\x03" * 1000,
    }


def colliding_ints(count: int) -> list[int]:
    return [k * (2**61 - 1) + 7 for k in range(count)]


def int_container(tag: bytes, keys: list[int], with_values: bool) -> bytes:
    body = bytearray(tag + varint(len(keys)))
    for k in keys:
        body += encode_int(k)
        if with_values:
            body.append(0x90)
    return HEADER + bytes(body)


def hash_flood_inputs() -> dict[str, bytes]:
    keys = colliding_ints(100_000)
    # nested tuple key whose hash needs 2**40 steps: t0 = (1, 2); t(k+1) = (tk, tk)
    t: tuple = (1, 2)
    for _ in range(40):
        t = (t, t)
    # dumps([t]) = header, 0x59, t: t's tag is at body offset 1, as after a 0x61 dict tag
    key_body = amber.dumps([t])[4:]
    exp_key = HEADER + b"\x61" + key_body + b"\x90"
    big_tuple = b"\xf2" + varint(100_000) + bytes(i % 64 for i in range(100_000))
    elems = bytearray(b"\x74" + varint(100_001))
    off = len(elems)  # body offset of the big tuple's tag
    elems += big_tuple
    for i in range(100_000):
        elems += b"\x5e\x93" + varint(off) + encode_int(i)
    return {
        "dict": int_container(b"\x73", keys, True),
        "set": int_container(b"\x74", keys, False),
        "frozenset": int_container(b"\x75", keys, False),
        "exponential_tuple_key": exp_key,
        "quadratic_tuple_elements": HEADER + bytes(elems),
    }
