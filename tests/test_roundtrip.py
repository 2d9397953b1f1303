"""Round trips of every supported type at its boundary values, with exact types and bits."""

from __future__ import annotations

import math
import struct
import sys

import amber
import pytest
from _ref import encode_float, encode_int, encode_str, ref_dumps, varint


def _f(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def _bits(x: float) -> str:
    return struct.pack(">d", x).hex()


# --------------------------------------------------------------------------- ints


def _int_cases() -> list[int]:
    vals = {0, 1, -1, 63, 64, -16, -17, 127, 128, -128, -129, 255, 256, 2**10000, -(3**300)}
    for k in range(7, 129):
        vals.update({2**k - 1, 2**k, -(2**k), -(2**k) - 1})
    for k in (200, 256, 512, 1000, 4096):
        vals.update({2**k - 1, 2**k, -(2**k), -(2**k) - 1, 3**k, -(3**k)})
    return sorted(vals)


INTS = _int_cases()


def _int_id(n: int) -> str:
    if abs(n) < 2**130:
        return f"int{n}"
    return f"int_{'neg' if n < 0 else 'pos'}_{n.bit_length()}bits"


@pytest.mark.parametrize("n", INTS, ids=[_int_id(n) for n in INTS])
def test_int_roundtrip_exact(n, graph_diff):
    data = amber.dumps(n)
    assert data[:3] == b"\xab\x41\x01"
    assert data[3:] == encode_int(n), (n, data.hex(" "))
    out = amber.loads(data)
    assert type(out) is int
    assert out == n
    assert graph_diff(n, out) is None


def test_int_encoding_boundaries_by_hand():
    h = b"\xab\x41\x01"
    assert amber.dumps(0) == h + b"\x00"
    assert amber.dumps(63) == h + b"\x3f"
    assert amber.dumps(64) == h + b"\x6c\x80\x01"
    assert amber.dumps(-1) == h + b"\x8f"
    assert amber.dumps(-16) == h + b"\x80"
    assert amber.dumps(-17) == h + b"\x6c\x21"
    assert amber.dumps(2**63 - 1) == h + b"\x6c" + b"\xfe" + b"\xff" * 8 + b"\x01"
    assert amber.dumps(-(2**63)) == h + b"\x6c" + b"\xff" * 9 + b"\x01"
    assert amber.dumps(2**63) == h + b"\x6d\x09" + b"\x00" * 7 + b"\x80\x00"
    assert amber.dumps(-(2**63) - 1) == h + b"\x6d\x09" + b"\xff" * 7 + b"\x7f\xff"
    assert amber.dumps(2**64) == h + b"\x6d\x09" + b"\x00" * 8 + b"\x01"
    assert amber.dumps(-(2**64)) == h + b"\x6d\x09" + b"\x00" * 8 + b"\xff"


def test_all_ints_in_one_list(graph_diff):
    data = amber.dumps(INTS)
    out = amber.loads(data)
    assert out == INTS
    assert all(type(x) is int for x in out)
    assert graph_diff(INTS, out) is None


def test_ints_around_cpythons_cached_ones_decode_to_their_values_and_objects():
    # Decoding hands out CPython's one object for each of -5 to 256 from a table, and makes
    # every other int; each form that carries an int (a packed list, a tuple's items, dict
    # values) must give the value, and for the cached ones that very object.
    values = list(range(-300, 300))
    forms = [values, tuple(values), {str(v): v for v in values}]
    for form in forms:
        out = amber.loads(amber.dumps(form))
        decoded = list(out.values()) if isinstance(out, dict) else list(out)
        assert decoded == values
        for v, x in zip(values, decoded, strict=True):
            assert type(x) is int
            if -5 <= v <= 256:
                assert x is int(str(v)), v  # int() of text returns the cached object too
    for v in (-6, -5, 0, 256, 257, 2**62):
        assert amber.loads(amber.dumps(v)) == v


def test_bool_is_not_int():
    for v in (True, False):
        out = amber.loads(amber.dumps(v))
        assert out is v
    out = amber.loads(amber.dumps([True, 1, False, 0]))
    assert [type(x) for x in out] == [bool, int, bool, int]
    assert amber.dumps(None) == b"\xab\x41\x01\x90"
    assert amber.dumps(False) == b"\xab\x41\x01\x91"
    assert amber.dumps(True) == b"\xab\x41\x01\x92"
    assert amber.loads(b"\xab\x41\x01\x90") is None


# --------------------------------------------------------------------------- floats

FLOATS = {
    "zero": 0.0,
    "neg_zero": -0.0,
    "inf": math.inf,
    "neg_inf": -math.inf,
    "nan": math.nan,
    "nan_payload": _f("7ff8000000000001"),
    "nan_payload_high": _f("7fffffffffffffff"),
    "neg_nan": _f("fff8000000000000"),
    "neg_nan_payload": _f("fff0000000abcdef"),
    "snan": _f("7ff0000000000001"),
    "min_subnormal": 5e-324,
    "max_subnormal": _f("000fffffffffffff"),
    "min_normal": 2.2250738585072014e-308,
    "max": 1.7976931348623157e308,
    "neg_max": -1.7976931348623157e308,
    "one": 1.0,
    "half": 0.5,
    "tenth": 0.1,
    "third": 1 / 3,
    "f32_max": _f("47efffffe0000000"),
    "f32_max_next": _f("47efffffe0000001"),
    "f32_min_subnormal": _f("36a0000000000000"),
    "f32_min_subnormal_half": _f("3690000000000000"),
    "f32_min_normal": _f("3810000000000000"),
    "two24": 16777216.0,
    "two24_plus1": 16777217.0,
    "big": 1e300,
    "neg_small": -1.5e-300,
    "pi": math.pi,
}


@pytest.mark.parametrize("x", list(FLOATS.values()), ids=list(FLOATS))
def test_float_roundtrip_bits(x, graph_diff):
    data = amber.dumps(x)
    assert data[3:] == encode_float(x), data.hex(" ")
    out = amber.loads(data)
    assert type(out) is float
    assert _bits(out) == _bits(x)
    assert graph_diff(x, out) is None


def test_float_tag_choice():
    h = b"\xab\x41\x01"
    assert amber.dumps(0.5) == h + b"\x6f\x00\x00\x00\x3f"
    assert amber.dumps(-0.0) == h + b"\x6f\x00\x00\x00\x80"
    assert amber.dumps(math.inf) == h + b"\x6f\x00\x00\x80\x7f"
    assert amber.dumps(0.1) == h + b"\x6e" + struct.pack("<d", 0.1)
    # NaN never uses FLOAT32, whatever its payload
    assert amber.dumps(math.nan)[3] == 0x6E
    qnan = _f("7ff8000000000000")
    assert amber.dumps(qnan)[3:] == b"\x6e" + struct.pack("<d", qnan)


def test_float32_payload_widened_exactly():
    # FLOAT32 input decodes to the exact double (a decoder may meet FLOAT32 NaN from other writers)
    for bits32 in ("3f000000", "00000001", "7f7fffff", "ff800000", "80000000"):
        raw = bytes.fromhex(bits32)[::-1]
        out = amber.loads(b"\xab\x41\x01\x6f" + raw)
        assert type(out) is float
        assert _bits(out) == _bits(struct.unpack("<f", raw)[0])


COMPLEXES = {
    "zero": 0j,
    "neg_zero_both": complex(-0.0, -0.0),
    "neg_zero_imag": complex(0.0, -0.0),
    "neg_zero_real": complex(-0.0, 0.0),
    "one_two": complex(1, 2),
    "nan_inf": complex(math.nan, math.inf),
    "inf_nan_payload": complex(-math.inf, _f("7ff8000000000123")),
    "tiny": complex(5e-324, -5e-324),
    "tenth": complex(0.1, -0.1),
}


@pytest.mark.parametrize("z", list(COMPLEXES.values()), ids=list(COMPLEXES))
def test_complex_roundtrip_bits(z, graph_diff):
    data = amber.dumps(z)
    assert data[3:] == b"\x70" + struct.pack("<dd", z.real, z.imag)
    out = amber.loads(data)
    assert type(out) is complex
    assert (_bits(out.real), _bits(out.imag)) == (_bits(z.real), _bits(z.imag))
    assert graph_diff(z, out) is None


# --------------------------------------------------------------------------- str

STRS = {
    "empty": "",
    "nul": "\0",
    "nul_middle": "a\0b",
    "ascii": "hello",
    "latin1": "é",
    "bmp": "€",
    "astral": "😀",
    "astral_mix": "a😀b\U0010ffff",
    "lone_high": "a\ud800b",
    "lone_low": "\udfff",
    "high_low_pair_as_two_surrogates": "\ud83d\ude00",
    "surrogate_then_astral": "\udc00😀",
    "surrogate_long": "x" * 100 + "\ud800",
    "short_max": "x" * 23,
    "long_min": "x" * 24,
    "two_byte_22": "é" * 11,
    "two_byte_24": "é" * 12,
    "three_byte_24": "€" * 8,
    "four_byte_24": "😀" * 6,
    "long_ascii": "abc" * 100_000,
    "long_astral": "😀" * 50_000,
    "max_cp": "\U0010ffff",
    "bom": "\ufeff",
    "noncharacter": "\uffff\ufffe",
}


@pytest.mark.parametrize("s", list(STRS.values()), ids=list(STRS))
def test_str_roundtrip(s, graph_diff):
    data = amber.dumps(s)
    assert data[3:] == encode_str(s)
    out = amber.loads(data)
    assert type(out) is str
    assert out == s
    assert graph_diff(s, out) is None


def test_str_every_length_0_to_300(graph_diff):
    for n in range(301):
        for unit in ("a", "é", "€", "😀", "\udc80"):
            s = (unit * n)[:n] if n else ""
            data = amber.dumps(s)
            assert data[3:] == encode_str(s), (n, unit)
            out = amber.loads(data)
            assert type(out) is str and out == s, (n, unit)


@pytest.mark.parametrize("unit", ["é", "€", "😀", "\udc80"], ids=["ucs1", "ucs2", "ucs4", "lone"])
def test_str_same_bytes_on_every_encode_of_a_fresh_str(unit):
    # Built at run time, so CPython holds no UTF-8 form of them: the encoder converts their
    # units each time (test_wide_str also covers a str that holds CPython's UTF-8 copy).
    fresh = ["".join([unit, "x" * n, unit]) for n in (0, 30)]
    first = amber.dumps(fresh)
    assert amber.dumps(fresh) == first
    assert amber.loads(first) == fresh
    for s in fresh:
        assert amber.dumps(s)[3:] == encode_str(s)


def test_str_one_wide_character_at_every_position_is_seen():
    # The decoder tests short strs for ASCII a word at a time, with overlapping loads, and
    # copies them the same way: a wide character anywhere must make a str of a wider kind.
    for n in range(1, 70):
        for wide in ("\x80", "é", "€", "😀"):
            for pos in range(n):
                s = "".join(["a" * pos, wide, "b" * (n - pos - 1)])
                out = amber.loads(amber.dumps(s))
                assert out == s, (n, pos, wide)
                if n > 1:  # (strs of one character are CPython's shared ones)
                    # The kind shows in the size; `s` itself may hold a UTF-8 copy now.
                    same = s.encode().decode()
                    assert sys.getsizeof(out) == sys.getsizeof(same), (n, pos, wide)


def test_str_surrogate_never_short_form():
    data = amber.dumps("\ud800")
    assert data[3:] == b"\x69\x03\xed\xa0\x80"


# --------------------------------------------------------------------------- bytes

BYTES = {
    "empty": b"",
    "nul": b"\0",
    "all_bytes": bytes(range(256)),
    "one_mib": bytes(range(256)) * 4096,
    "varint_edge_127": b"\x01" * 127,
    "varint_edge_128": b"\x01" * 128,
}


@pytest.mark.parametrize("b", list(BYTES.values()), ids=list(BYTES))
def test_bytes_roundtrip(b, graph_diff):
    data = amber.dumps(b)
    assert data[3:] == b"\x6a" + varint(len(b)) + b
    out = amber.loads(data)
    assert type(out) is bytes and out == b
    assert graph_diff(b, out) is None


@pytest.mark.parametrize("b", list(BYTES.values()), ids=list(BYTES))
def test_bytearray_roundtrip(b, graph_diff):
    ba = bytearray(b)
    data = amber.dumps(ba)
    assert data[3:] == b"\x6b" + varint(len(b)) + b
    out = amber.loads(data)
    assert type(out) is bytearray and out == ba
    assert out is not ba
    assert graph_diff(ba, out) is None


def test_decoded_bytearray_is_independent_of_input():
    payload = bytearray(amber.dumps(bytearray(b"abc")))
    out = amber.loads(payload)
    payload[-1] = ord("z")
    out.append(ord("d"))
    assert out == bytearray(b"abcd")


# --------------------------------------------------------------------------- containers

LENGTHS = [*range(11), 127, 128, 129, 255, 256, 16383, 16384]


def _items(n: int) -> list:
    # mixed, distinct, hashable elements (distinct under equality: no 1 == True clashes)
    pool = [None, "s", b"b", 2.5, (1, "t"), frozenset({3}), -17, 10**30]
    out = []
    for i in range(n):
        if i < len(pool):
            out.append(pool[i])
        else:
            out.append(i * 7 + 1000)
    return out


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", [list, tuple, set, frozenset])
def test_sequence_lengths(kind, n, graph_diff):
    value = kind(_items(n))
    data = amber.dumps(value)
    assert data == ref_dumps(value)
    out = amber.loads(data)
    assert type(out) is kind
    assert len(out) == n
    assert graph_diff(value, out) is None


@pytest.mark.parametrize("n", LENGTHS)
def test_dict_lengths(n, graph_diff):
    keys = _items(n)
    value = {k: i for i, k in enumerate(reversed(keys))}
    data = amber.dumps(value)
    assert data == ref_dumps(value)
    out = amber.loads(data)
    assert type(out) is dict
    assert list(out) == list(value)
    assert list(out.values()) == list(value.values())
    assert graph_diff(value, out) is None


def test_container_tag_forms():
    h = b"\xab\x41\x01"
    assert amber.dumps([]) == h + b"\x58"
    assert amber.dumps([1, 2, 3]) == h + b"\x5b\x01\x02\x03"
    assert amber.dumps([1, 2, 3, None]) == h + b"\x71\x04\x01\x02\x03\x90"
    assert amber.dumps([1, 2, 3, 4]) == h + b"\x78\x04\x02\x04\x06\x08"  # packed ints
    assert amber.dumps(()) == h + b"\x5c"
    assert amber.dumps((1, 2, 3)) == h + b"\x5f\x01\x02\x03"
    assert amber.dumps((1, 2, 3, 4)) == h + b"\x72\x04\x01\x02\x03\x04"
    assert amber.dumps({}) == h + b"\x60"
    assert amber.dumps(dict.fromkeys(range(7), None)) == h + b"\x67" + b"".join(
        bytes([i, 0x90]) for i in range(7)
    )
    assert amber.dumps(dict.fromkeys(range(8), None)) == h + b"\x73\x08" + b"".join(
        bytes([i, 0x90]) for i in range(8)
    )
    assert amber.dumps(set()) == h + b"\x74\x00"
    assert amber.dumps(frozenset()) == h + b"\x75\x00"
    assert amber.dumps({5}) == h + b"\x74\x01\x05"


DICT_KEYS = [
    7,
    -5,
    10**40,
    1.5,
    -0.0,
    math.inf,
    None,
    True,
    (1, (2, "x")),
    (),
    frozenset({1, 2}),
    frozenset(),
    b"bytes-key",
    b"",
    "str-key",
    "",
    complex(1, -1),
    math.nan,
]


def test_dict_key_types_in_insertion_order(graph_diff):
    value = {k: i for i, k in enumerate(DICT_KEYS)}
    out = amber.loads(amber.dumps(value))
    assert type(out) is dict
    assert len(out) == len(DICT_KEYS)
    assert [type(k) for k in out] == [type(k) for k in DICT_KEYS]
    assert list(out.values()) == list(range(len(DICT_KEYS)))
    assert graph_diff(value, out) is None


def test_dict_insertion_order_not_sorted(graph_diff):
    value = {"zeta": 1, "alpha": 2, 5: 3, -1: 4, "mid": 5, 0: 6, "b": 7, "a": 8, 3.5: 9}
    out = amber.loads(amber.dumps(value))
    assert list(out.items()) == list(value.items())
    assert graph_diff(value, out) is None


def test_set_and_frozenset_of_mixed_elements(graph_diff):
    for kind in (set, frozenset):
        value = kind(DICT_KEYS)
        assert len(value) == len(DICT_KEYS)
        out = amber.loads(amber.dumps(value))
        assert type(out) is kind
        assert len(out) == len(value)
        assert graph_diff(value, out) is None


def test_nested_mixture(graph_diff):
    value = {
        "ints": [0, -1, 2**70, -(2**70)],
        "floats": (0.0, -0.0, math.inf, math.nan),
        "strs": ["", "é", "😀", "a\ud800b"],
        "bytes": [b"", bytearray(b"x"), b"\x00\xff"],
        "sets": [set(), frozenset(), {1, 2}, frozenset({(1, 2)})],
        (1, 2): {frozenset({"a"}): [None, True, False]},
        "deep": [[[[[[[[[[1]]]]]]]]]],
        "empties": [[], (), {}, "", b"", bytearray(), set(), frozenset()],
    }
    data = amber.dumps(value)
    assert data == ref_dumps(value)
    out = amber.loads(data)
    assert graph_diff(value, out) is None


def test_depth_boundary(graph_diff):
    ok = [None]
    for _ in range(999):
        ok = [ok]
    out = amber.loads(amber.dumps(ok))  # 1000 nested lists: allowed by default
    assert graph_diff(ok, out) is None
    with pytest.raises(amber.EncodeError):
        amber.dumps([ok])
    data = amber.dumps([ok], max_depth=1001)
    assert data == b"\xab\x41\x01" + b"\x59" * 1001 + b"\x90"
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data)
    assert (info.value.kind, info.value.offset) == ("depth_limit", 3 + 1000)
    out = amber.loads(data, max_depth=1001)
    assert graph_diff([ok], out) is None
