"""The fast paths that read CPython's private object layouts, checked on the running interpreter.

The extension reads ints from their digits (`crates/amber-py/src/pylong.rs`: the sign and
digit count moved into `lv_tag` in 3.12), strs from their data by kind and from their cached
UTF-8 (`encode/scalars.rs`, `encode/wide_str.rs`, `decode/scalars.rs`, `decode/key_cache.rs`),
writes the header of ASCII strs itself (`decode/ascii_str.rs`), and reads dicts from their
entry tables (`dict_layout.rs`, 3.11 to 3.13). Each layout differs between versions, so these
tests run in the core suite on every CPython `make test` finds: the bytes must be those of the
reference encoder (`_ref`, plain Python) and the values must come back exactly, at the edges
where a misread layout would show (digit boundaries, each str kind, tables with holes).
On versions build.rs does not know (3.14 and later) the fast paths are compiled out; `make
test-generic` builds that fallback on purpose (AMBER_GENERIC_LAYOUTS=1), runs these tests
on it and compares its bytes with the fast build's (tests/_same_bytes.py).
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig

import amber
import pytest
from _ref import ref_dumps
from _strategies import fresh_copy
from amber import _amber


def _int_edges() -> list[int]:
    edges = [0, 1, -1, 5, -5, -6, 16, -16, -17, 255, 256, 257, 1000]
    # the digit boundaries of 30-bit digits (one, two, three digits) and of int64
    for bits in (15, 30, 31, 32, 60, 62, 63, 64, 90, 120):
        for m in ((1 << bits) - 1, 1 << bits, (1 << bits) + 1):
            edges += [m, -m]
    return edges


INT_EDGES = _int_edges()


def _fresh_int(n: int) -> int:
    """n as a new int object, not a constant of this module's code."""
    return int(str(n))


def test_the_int_fast_path_applies_here():
    # The digits are read only on interpreters with 30-bit digits (module init checks
    # sys.int_info), the default of every 64-bit CPython build; on such a build the edge
    # tests below go through the fast path, not only through PyLong_AsLongLongAndOverflow.
    if sys.maxsize > 2**32:
        assert sys.int_info.bits_per_digit == 30


@pytest.mark.parametrize("n", INT_EDGES)
def test_int_at_digit_edges(n):
    value = _fresh_int(n)
    data = amber.dumps(value)
    assert data == ref_dumps(value)
    back = amber.loads(data)
    assert type(back) is int and back == n


def test_ints_at_digit_edges_in_lists_dicts_and_canonical_form():
    # packed lists read each item's digits; canonical form sorts by them too
    values = fresh_copy([_fresh_int(n) for n in INT_EDGES if -(1 << 63) <= n < (1 << 63)])
    assert amber.dumps(values) == ref_dumps(values)
    assert amber.loads(amber.dumps(values)) == values
    mixed = fresh_copy({"all": [_fresh_int(n) for n in INT_EDGES], "set": set(INT_EDGES)})
    assert amber.dumps(mixed) == ref_dumps(mixed)
    assert amber.dumps(mixed, canonical=True) == ref_dumps(mixed, canonical=True)
    assert amber.loads(amber.dumps(mixed)) == mixed


# One character of each str kind (1, 2 and 4 bytes per character), and a lone surrogate.
UNITS = {"ascii": "a", "latin1": "\xe9", "ucs2": "\u20ac", "ucs4": "\U0001f600", "lone": "\udc80"}


def _strs() -> list[str]:
    out = []
    for unit in UNITS.values():
        for n in (1, 7, 31, 32, 200):
            # built at run time: not interned, not a code constant
            out.append("".join(["x", unit * n])[1:])
            out.append("".join(["a", unit * n, "z"]))
    return out


STRS = _strs()


@pytest.mark.parametrize("kind", list(UNITS))
def test_str_kinds_bytes_and_values(kind):
    for s in (t for t in STRS if UNITS[kind] in t):
        first = amber.dumps(s)
        assert first == ref_dumps(s), (kind, len(s))
        # a second encode writes the same bytes (test_wide_str checks them with a UTF-8 copy
        # inside the str too, which the encoder reads instead of converting the units)
        assert amber.dumps(s) == first
        back = amber.loads(first)
        assert type(back) is str and back == s and hash(back) == hash(s)
        # the decoder made the str in its smallest kind, as CPython's own decoder does (one
        # character strs are CPython's shared ones, whose UTF-8 form may be cached: not sized)
        if len(s) > 1:
            same = s.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
            assert sys.getsizeof(back) == sys.getsizeof(same), (kind, len(s))


def _str_fields(s: str) -> tuple[object, ...]:
    # A compact str's header after the reference count and the type: length, hash, the named
    # bits of the state word (its other 24 bits are padding CPython leaves as it finds them),
    # before 3.12 the wstr pointer; for a non-ASCII str its UTF-8 copy (length and pointer)
    # and before 3.12 its wstr length; then the characters and the NUL unit. Pointers are
    # told as "none", "data" (the str's own characters) or "other".
    word = ctypes.sizeof(ctypes.c_void_p)
    base = id(s) + 2 * word
    old = sys.version_info < (3, 12)
    ascii_header = (6 if old else 5) * word
    widest = max(map(ord, s))
    kind = 1 if widest < 0x100 else 2 if widest < 0x10000 else 4
    header = sys.getsizeof(s) - (len(s) + 1) * kind
    data = id(s) + header

    def at(offset: int, c_type: type) -> int:
        return c_type.from_address(base + offset).value or 0

    def pointer(offset: int) -> str:
        value = at(offset, ctypes.c_void_p)
        return "none" if value == 0 else "data" if value == data else "other"

    fields: list[object] = [
        at(0, ctypes.c_ssize_t),
        at(word, ctypes.c_ssize_t),
        at(2 * word, ctypes.c_uint8),
    ]
    if old:
        fields.append(pointer(3 * word))
    if not s.isascii():
        after = ascii_header - 2 * word
        fields += [at(after, ctypes.c_ssize_t), pointer(after + word)]
        if old:
            fields.append(at(after + 2 * word, ctypes.c_ssize_t))
    return (*fields, header, ctypes.string_at(data, (len(s) + 1) * kind))


# From 2 characters: CPython's own strs of one character are shared and already hashed.
LAYOUT_LENGTHS = [2, 3, 4, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 63, 64, 65, 300]


@pytest.mark.parametrize("wide", ["", "é", "ÿ", "€", "\uffff", "😀"])
@pytest.mark.parametrize("n", LAYOUT_LENGTHS)
def test_decoded_strs_are_laid_out_as_cpython_lays_them_out(n, wide):
    text = "".join(chr(ord("a") + i % 26) for i in range(n - len(wide))) + wide
    decoded = [amber.loads(amber.dumps(text)), next(iter(amber.loads(amber.dumps({text: 1}))))]
    made_by_cpython = text.encode().decode("utf-8")  # a new object, never hashed
    assert sys.getsizeof(decoded[0]) == sys.getsizeof(made_by_cpython)
    unhashed = _str_fields(made_by_cpython)
    assert unhashed[1] == -1
    assert _str_fields(decoded[0]) == unhashed, n
    hash(made_by_cpython)
    # A key went into a dict, which hashed it.
    assert _str_fields(decoded[1]) == _str_fields(made_by_cpython), n
    for out in decoded:
        assert out == text and out.isascii() == text.isascii() and hash(out) == hash(text)
        assert sys.intern(out) == text


def test_str_kinds_as_dict_keys_and_repeated_keys():
    # the decoder caches keys and compares a cached key's data with the bytes read
    keys = [s for s in STRS if len(s) < 40]
    rows = fresh_copy([{k: i for i, k in enumerate(keys)} for _ in range(3)])
    data = amber.dumps(rows)
    assert data == ref_dumps(rows)
    back = amber.loads(data)
    assert back == rows
    for got, want in zip(back, rows, strict=True):
        assert list(got) == list(want)
    # keys that share a prefix, a length or a first byte with a cached one
    near = [{"ab\xe9": 1}, {"ab\xea": 2}, {"ab\u20ac": 3}, {"ab\U0001f600": 4}, {"abc": 5}]
    assert amber.loads(amber.dumps(near)) == near


@pytest.mark.parametrize("length", range(24))
def test_cached_keys_are_handed_out_only_for_the_same_bytes(length):
    # The key cache compares a key's bytes with a cached key's a word at a time, in loads that
    # overlap; a key one byte away from a cached one, at any place, of any length up to the
    # 23 bytes of a SHORT_STR, must come back as itself. Each is decoded right after the
    # cached key, in its own payload (as a service's messages are), and in the same one.
    base = "".join(chr(ord("a") + i % 26) for i in range(length))
    variants = [base[:at] + base[at].upper() + base[at + 1 :] for at in range(length)]
    variants += [base[:-1], base + "z", base[1:] + "a"] if length else ["z"]
    for key in (v for v in variants if v != base):
        assert amber.loads(amber.dumps({base: 0})) == {base: 0}
        assert list(amber.loads(amber.dumps({key: 1}))) == [key]
        assert list(amber.loads(amber.dumps({base: 0, key: 1}))) == [base, key]


@pytest.mark.parametrize("place", [0, 8, 16], ids=["first word", "second word", "third word"])
def test_keys_that_share_a_cache_slot_differ_in_each_word(place):
    # The cache has fewer slots than these 3,000 keys of 20 bytes, so many land in a slot
    # held by another of the same length; each differs from the others only in the 4 bytes at
    # `place`, which fall in one of the three words the cache compares. A comparison that
    # skipped that word would hand out the other key, and the dict would lose keys.
    base = "abcdefghijklmnopqrst"
    keys = [base[:place] + f"{n:04d}" + base[place + 4 :] for n in range(3000)]
    value = dict.fromkeys(keys, 0)
    assert list(amber.loads(amber.dumps(value))) == keys
    assert [list(amber.loads(amber.dumps({k: 1}))) for k in keys[::97]] == [[k] for k in keys[::97]]


@pytest.mark.parametrize("size", range(2, 24))
def test_keys_with_a_non_ascii_character_anywhere_are_not_taken_for_ascii(size):
    # The key cache tells ASCII keys from others by the words it hashes: a multi-byte
    # character at any byte offset of a key of any SHORT_STR size must send the key down the
    # general path, on its first decode and on later ones (which would find an ASCII key in
    # the cache), and an ASCII key with the same other bytes must still come back as itself.
    for at in range(size - 1):
        key = "k" * at + "\xe9" + "k" * (size - 2 - at)
        assert len(key.encode()) == size
        twin = "k" * (size - 1)
        for _ in range(2):
            got = amber.loads(amber.dumps([{twin: 0}, {key: 1}, {"\x7f" * size: 2}]))
            assert [list(d) for d in got] == [[twin], [key], ["\x7f" * size]]
            assert all(type(k) is str for d in got for k in d)


def _dicts() -> dict[str, dict]:
    holes = {f"k{i}": i for i in range(50)}
    for i in range(0, 50, 3):
        del holes[f"k{i}"]
    general = {1: "a", "b": 2, (3,): 3, 4.5: None, None: 5}
    del general["b"]
    general["b"] = 6  # re-inserted: now last

    class Plain:
        pass

    obj = Plain()
    obj.a, obj.b, obj.c = 1, "two", [3]
    grown: dict = {}
    for i in range(1000):
        grown[str(i)] = i
    return {
        "empty": {},
        "small_str_keys": {"a": 1, "b": 2},
        "holes": holes,
        "general": general,
        "instance_dict": obj.__dict__,  # may be a split table or inline values
        "grown": grown,
        "kinds_as_keys": {s: len(s) for s in STRS},
    }


@pytest.mark.parametrize("name", list(_dicts()))
def test_dict_tables_walk_in_insertion_order(name):
    d = _dicts()[name]
    data = amber.dumps(d)
    assert data == ref_dumps(d)
    back = amber.loads(data)
    assert type(back) is dict and back == d
    assert list(back) == list(d)
    assert amber.dumps(d, sort_keys=True, canonical=True) == ref_dumps(
        d, sort_keys=True, canonical=True
    )


def test_the_dict_layout_is_read_exactly_where_it_is_known():
    # 3.11 to 3.13 with the GIL, unless built generic; elsewhere the C-API walks dicts (and
    # the tests above check that fallback instead). test_dict_templates checks the decoder.
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    generic = os.environ.get("AMBER_GENERIC_LAYOUTS", "0") != "0"
    expected = (3, 11) <= sys.version_info[:2] <= (3, 13) and not free_threaded and not generic
    assert _amber._dict_layout_known() is expected
