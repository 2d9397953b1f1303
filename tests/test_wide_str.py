"""Non-ASCII strs, which the encoder converts to UTF-8 from CPython's own 1-, 2- or 4-byte
units (``encode/wide_str.rs``): the bytes of every path against Python's own encoder (through
the reference encoder's ``encode_str``), around each length the paths switch at, and without
the side effect of ``PyUnicode_AsUTF8AndSize``, which keeps a UTF-8 copy inside the str."""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig

import amber
import pytest
from _ref import encode_str
from hypothesis import given, settings
from hypothesis import strategies as st

HEADER = bytes([0xAB, 0x41, 0x01])

# One character of each UTF-8 width and of each CPython kind: Latin-1 (1-byte units),
# BMP (2-byte units: 2- and 3-byte UTF-8), astral (4-byte units, 4-byte UTF-8).
WIDE = ["é", "ÿ", "\x80", "\u03b1", "߿", "ࠀ", "€", "東", "\uffff", "😀", "\U0010ffff"]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]

# Lengths around the ones the encoder switches at: 8-unit ASCII words, the 23 bytes of a
# SHORT_STR, the 128 bytes of a one-byte STR length (one pass below it, two above), and the
# 4096-byte scratch buffer of the output.
LENGTHS = sorted({*range(0, 26), 30, 31, 32, 41, 42, 43, 44, 62, 63, 64, 65, 127, 128, 129, 3000})


# Builds that read CPython's layouts (crates/amber-py/build.rs) convert strs themselves; the
# others (other versions, free-threaded builds, `make test-generic`) ask CPython for its copy.
FAST_PATHS = (
    (3, 10) <= sys.version_info[:2] <= (3, 13)
    and not sysconfig.get_config_var("Py_GIL_DISABLED")
    and os.environ.get("AMBER_GENERIC_LAYOUTS", "0") == "0"
)


# Fresh copies of these are made in each test: nothing has converted them yet.
SAMPLES = ["é" * 10, "string 12 \N{GREEK SMALL LETTER ALPHA}", "東京" * 40, "😀x" * 5, "ü" * 100]


def expected(s: str) -> bytes:
    return HEADER + encode_str(s)


def texts() -> list[str]:
    out = []
    for wide in WIDE:
        for n in LENGTHS:
            out.append("a" * n + wide)
            out.append(wide + "a" * n)
            out.append((wide + "b") * (n // 2 + 1))
            out.append(wide * n)
    return out


@pytest.mark.parametrize("s", texts(), ids=lambda s: f"{len(s)}:{s[:6]!a}")
def test_bytes_equal_pythons_utf8(s: str) -> None:
    assert amber.dumps(s) == expected(s)
    assert amber.loads(amber.dumps(s)) == s


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 22, 23, 24, 41, 42, 43, 100])
def test_a_lone_surrogate_anywhere_makes_str_surrogates(surrogate: str, n: int) -> None:
    # In a str of each kind: BMP (with "\u03b1") and astral (with an emoji).
    for s in (
        "a" * n + surrogate,
        surrogate + "\u03b1" * n,
        "\u03b1" * n + surrogate + "b",
        "😀" * n + surrogate,
        surrogate + "x" * n + "😀",
    ):
        data = amber.dumps(s)
        assert data == expected(s)
        assert data[3] == 0x69  # STR_SURROGATES
        assert amber.loads(data) == s


def test_strs_inside_containers_and_as_keys() -> None:
    value = {"ключ": ["значение", "東京", ("café", "😀" * 30)], "a" * 30 + "é": "ü" * 70}
    assert amber.loads(amber.dumps(value)) == value


@given(st.text(alphabet=st.characters(codec=None), max_size=200))
@settings(max_examples=400, deadline=None)
def test_any_text(s: str) -> None:
    assert amber.dumps(s) == expected(s)


@pytest.mark.parametrize("s", SAMPLES)
def test_encoding_leaves_no_utf8_copy_in_the_str(s: str) -> None:
    fresh = "".join(list(s))  # a new object, which nothing has converted yet
    # str.__sizeof__ counts the UTF-8 copy once CPython keeps one inside the str.
    size = sys.getsizeof(fresh)
    assert amber.dumps(fresh) == expected(fresh)
    amber.dumps([fresh, {"k": fresh}])
    if FAST_PATHS:
        assert sys.getsizeof(fresh) == size
    else:
        assert sys.getsizeof(fresh) > size  # the fallback's known cost


@pytest.mark.parametrize("s", SAMPLES)
def test_a_utf8_copy_made_elsewhere_gives_the_same_bytes(s: str) -> None:
    fresh = "".join(list(s))
    size = sys.getsizeof(fresh)
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype = ctypes.c_char_p
    as_utf8.argtypes = [ctypes.py_object, ctypes.c_void_p]
    assert as_utf8(fresh, None) == fresh.encode()
    assert sys.getsizeof(fresh) > size  # the copy exists now: the encoder may read it
    assert amber.dumps(fresh) == expected(fresh)
    # Inside containers and as a key too, the same bytes as a twin with no UTF-8 copy.
    twin = "".join(list(s))
    nested = [fresh, {fresh: fresh}, (fresh,)]
    assert amber.dumps(nested, refs=False) == amber.dumps([twin, {twin: twin}, (twin,)], refs=False)
