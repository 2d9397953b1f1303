"""Error reporting: EncodeError paths and messages, DecodeError kinds, offsets and messages."""

from __future__ import annotations

import collections
import dataclasses
import enum
import re
import threading
import typing

import amber
import pytest
from _common import ERROR_KINDS, LIMIT_KINDS
from _hostile_data import int_container

H = "ab 41 01 "
# A signing key with the id "k1"; payloads signed by it are put together by hand below.
K1 = amber.SigningKey(b"test_errors secret", id=b"k1")
K2 = amber.SigningKey(b"test_errors secret", id=b"k2")


# --------------------------------------------------------------------------- EncodeError


class Color(enum.IntEnum):
    RED = 1


class Flag(enum.Enum):
    ON = "on"


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyList(list):
    pass


class MyDict(dict):
    pass


class MyTuple(tuple):
    pass


class MySet(set):
    pass


class MyFrozenset(frozenset):
    pass


class MyBytes(bytes):
    pass


class MyBytearray(bytearray):
    pass


class MyComplex(complex):
    pass


class Point(typing.NamedTuple):
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")


class Plain:
    pass


class Hashable:
    """Hashable, and refused by the encoder: like many real classes that hold live resources,
    it declares that it cannot be pickled, and amber honours its __reduce__."""

    def __reduce__(self) -> typing.Any:
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")


class Unpicklable(Hashable):
    pass


UNSUPPORTED = {
    "defaultdict_lambda_factory": collections.defaultdict(lambda: 0),
    "lock": threading.Lock(),
    "generator": (i for i in range(1)),
    "object": object(),
    "lambda": lambda: 0,
    "bound_method": Plain().__init__,
    "module": re,
    "memoryview": memoryview(b"m"),
    "refuses_pickling": Unpicklable(),
}


SUBCLASSES = {
    "str": MyStr("s"),
    "int": MyInt(3),
    "float": MyFloat(1.5),
    "complex": MyComplex(1, 2),
    "list": MyList([1]),
    "dict": MyDict(a=1),
    "tuple": MyTuple((1,)),
    "set": MySet({1}),
    "frozenset": MyFrozenset({1}),
    "bytes": MyBytes(b"b"),
    "bytearray": MyBytearray(b"b"),
}


@pytest.mark.parametrize("value", list(SUBCLASSES.values()), ids=list(SUBCLASSES))
def test_builtin_subclass_is_refused_at_load_unless_allowed(value):
    """Subclasses of builtin types are written (spec 5.17.3); only the caller's allow-list
    lets the decoder build one, and the error names the class and where it was defined."""
    data = amber.dumps({"k": value})
    with pytest.raises(amber.ClassNotAllowedError) as info:
        amber.loads(data)
    assert (info.value.module, info.value.qualname) == ("test_errors", type(value).__qualname__)
    back = amber.loads(data, types=[type(value)])["k"]
    assert type(back) is type(value)
    assert back == value


@pytest.mark.parametrize("value", list(UNSUPPORTED.values()), ids=list(UNSUPPORTED))
def test_unsupported_type_raises_encode_error(value):
    wrappers = (
        (lambda v: v, "root"),
        (lambda v: [0, v], "root[1]"),
        (lambda v: {"k": v}, 'root["k"]'),
    )
    for wrap, path in wrappers:
        with pytest.raises(amber.EncodeError) as info:
            amber.dumps(wrap(value))
        err = info.value
        assert isinstance(err, TypeError)
        assert err.path == path
        msg = str(err)
        assert type(value).__qualname__ in msg, msg
        assert path in msg, msg
        with pytest.raises(amber.EncodeError):
            amber.dumps(wrap(value), refs=False)


def test_bool_is_supported():
    assert amber.loads(amber.dumps([True, False])) == [True, False]


def test_encode_error_message_example():
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"users": [1, 2, 3, object()]})
    err = info.value
    assert err.path == 'root["users"][3]'
    assert "object" in str(err)
    assert 'root["users"][3]' in str(err)
    assert "unsupported type" in str(err)


def test_encode_error_names_module_qualified_type():
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"users": [1, 2, 3, Unpicklable()]})
    message = str(info.value)
    assert message.startswith("unsupported type test_errors.Unpicklable: ")
    assert message.endswith(' at root["users"][3]'), message


def test_encode_error_nested_class_qualname():
    class Inner(Hashable):
        pass

    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([Inner()])
    assert "test_encode_error_nested_class_qualname.<locals>.Inner" in str(info.value)
    assert info.value.path == "root[0]"


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ((1, (2, object())), "root[1][1]"),
        ([[], [[object()]]], "root[1][0][0]"),
        ({5: object()}, "root[5]"),
        ({"a": {"b": [0, 1, {"c": object()}]}}, 'root["a"]["b"][2]["c"]'),
        ({None: [object()]}, "root[None][0]"),
        ({1: 2, Hashable(): 3}, "root<key 1>"),
        ({Hashable(): 3}, "root<key 0>"),
        ({"x": {"y": 1, "z": 2, Hashable(): 0}}, 'root["x"]<key 2>'),
        (frozenset({Hashable()}), "root{0}"),
        ([{Hashable()}], "root[0]{0}"),
    ],
    ids=[
        "tuple",
        "list",
        "int_key",
        "nested_dicts",
        "none_key",
        "key_1",
        "key_0",
        "nested_key",
        "frozenset",
        "set_in_list",
    ],
)
def test_encode_error_paths(value, path):
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value)
    assert info.value.path == path
    assert path in str(info.value)


def test_encode_error_set_element_index_is_iteration_order():
    bad = Hashable()
    s = {1, 2, 3, bad, 5, 6}
    index = list(s).index(bad)
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"s": s})
    assert info.value.path == f'root["s"]{{{index}}}'


def test_encode_error_in_dict_key_descends_into_key():
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"a": 1, (1, Hashable()): 2})
    assert info.value.path.startswith("root<key 1>")
    assert "Hashable" in str(info.value)


def test_encode_error_long_key_is_cut():
    key = "k" * 1000
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({key: object()})
    path = info.value.path
    assert path.startswith('root["kkkkkkkkkk')
    assert len(path) <= len("root[]") + 40 + 5, path
    assert len(str(info.value)) < 300


def test_encode_error_inside_set_element():
    # a set element that is supported but holds an unsupported object: path descends into it
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([frozenset({(Hashable(),)})])
    assert info.value.path.startswith("root[0]{0}")


# --------------------------------------------------------------------------- DecodeError


# (hex, kind, offset or None if unspecified, options)
@dataclasses.dataclass
class Two:
    a: int
    b: int


def _name(text: str) -> str:
    raw = text.encode()
    return f"{len(raw):02x} {raw.hex()} "


def _object(module: str, qualname: str, kind: int, fields: list[str], values: str) -> str:
    """An OBJECT defining its shape, written by hand from the spec's layout."""
    names = "".join(_name(f) for f in fields)
    count = f"{len(fields):02x} " if kind in (0, 2) else ""
    return f"77 00 {_name(module)}{_name(qualname)}{kind:02x} {count}{names}{values}"


DECODE_ERRORS: list[tuple[str, str, int | None, dict]] = [
    ("00 00 01 90", "bad_magic", 0, {}),
    ("ab 42 01 90", "bad_magic", 0, {}),
    ("41 ab 01 90", "bad_magic", 0, {}),
    ("ff", "bad_magic", 0, {}),
    (H + "", "truncated", 3, {}),
    ("ab", "truncated", 1, {}),
    ("ab 41", "truncated", 2, {}),
    ("ab 41 02 90", "unsupported_version", 2, {}),
    ("ab 41 00 90", "unsupported_version", 2, {}),
    ("ab 41 0f 90", "unsupported_version", 2, {}),
    ("ab 41 41 90", "unsupported_feature", 2, {}),
    ("ab 41 51 90", "unsupported_feature", 2, {}),
    ("ab 41 81 90", "unsupported_feature", 2, {}),
    (H + "6e 00 00", "truncated", 4, {}),
    (H + "6f 00", "truncated", 4, {}),
    (H + "70 00 00 00 00 00 00 00 00", "truncated", 4, {}),
    (H + "5a 6e 00", "truncated", 5, {}),
    (H + "6c 80", "truncated", 4, {}),
    (H + "6c", "truncated", 4, {}),
    (H + "93", "truncated", 4, {}),
    (H + "94 90", "truncated", 5, {}),
    (H + "71 80", "truncated", 4, {}),
    (H + "90 90", "trailing_bytes", 4, {}),
    (H + "58 00", "trailing_bytes", 4, {}),
    (H + "5a 01 02 03 04", "trailing_bytes", 6, {}),
    (H + "95", "unknown_tag", 3, {}),
    (H + "bf", "unknown_tag", 3, {}),
    (H + "7a", "unknown_tag", 3, {}),
    (H + "7e 00", "unknown_tag", 3, {}),
    (H + "7b 00 00", "length_too_large", 3, {}),
    (H + "7b 01 02 4161 4161 01 02", "duplicate_key", 8, {}),
    (H + "7f", "unknown_tag", 3, {}),
    (H + "fa", "unknown_tag", 3, {}),
    (H + "76 00", "unknown_ext", 3, {}),
    (H + "76 19 00", "unknown_ext", 3, {}),
    (H + "76", "truncated", 4, {}),
    (H + "77 01", "bad_shape", 3, {}),
    (H + "77 00 00", "bad_name", 5, {}),
    (H + "77 00 02 6f 73 01 2e 01 90", "bad_name", 8, {}),
    (H + "76 01 04 e8 0f 0d 01", "invalid_ext", 3, {}),
    (H + _object("os", "system", 1, [], "90"), "class_not_allowed", 3, {}),
    (H + _object("test_errors", "Two", 0, ["a"], "01"), "missing_field", 3, {"types": [Two]}),
    (
        H + _object("test_errors", "Two", 0, ["a", "b", "c"], "01 02 03"),
        "unknown_field",
        3,
        {"types": [Two], "unknown_fields": "error"},
    ),
    (H + _object("test_errors", "Color", 3, [], "09"), "bad_state", 3, {"types": [Color]}),
    (H + "ff", "unknown_tag", 3, {}),
    (H + "59 96", "unknown_tag", 4, {}),
    (H + "6c 80 00", "overlong_varint", 4, {}),
    (H + "6c ff ff 00", "overlong_varint", 4, {}),
    (H + "71 80 00", "overlong_varint", 4, {}),
    (H + "93 80 00", "overlong_varint", 4, {}),
    (H + "6a 80 00", "overlong_varint", 4, {}),
    (H + "6c ff ff ff ff ff ff ff ff ff 02", "varint_overflow", 4, {}),
    (H + "6c ff ff ff ff ff ff ff ff ff ff 01", "varint_overflow", 4, {}),
    (H + "6c 80 80 80 80 80 80 80 80 80 7f", "varint_overflow", 4, {}),
    (H + "71 ff ff ff ff ff ff ff ff ff 02", "varint_overflow", 4, {}),
    (H + "41 ff", "invalid_utf8", 4, {}),
    (H + "41 80", "invalid_utf8", 4, {}),
    (H + "41 c3", "invalid_utf8", 4, {}),
    (H + "42 c0 80", "invalid_utf8", 4, {}),
    (H + "43 ed a0 80", "invalid_utf8", 4, {}),
    (H + "44 f4 90 80 80", "invalid_utf8", 4, {}),
    (H + "68 18 " + "61 " * 23 + "ff", "invalid_utf8", 5, {}),
    (H + "5a 01 41 fe", "invalid_utf8", 6, {}),
    (H + "69 01 ff", "invalid_utf8", 5, {}),
    (H + "69 04 f4 90 80 80", "invalid_utf8", 5, {}),
    (H + "69 03 ed a0", "truncated", 3, {}),
    (H + "6d 01 05", "noncanonical_int", 3, {}),
    (H + "6d 08 00 00 00 00 00 00 00 00", "noncanonical_int", 3, {}),
    (H + "6d 09 00 00 00 00 00 00 00 00 00", "noncanonical_int", 3, {}),
    (H + "6d 09 00 00 00 00 00 00 00 80 ff", "noncanonical_int", 3, {}),
    (H + "6d 0a 00 00 00 00 00 00 00 00 01 00", "noncanonical_int", 3, {}),
    (H + "6d 0a ff ff ff ff ff ff ff ff fe ff", "noncanonical_int", 3, {}),
    (H + "5a 00 6d 01 05", "noncanonical_int", 5, {}),
    (H + "71 05 90", "length_too_large", 3, {}),
    (H + "73 02 90 90 90", "length_too_large", 3, {}),
    (H + "74 03 01 02", "length_too_large", 3, {}),
    (H + "75 02 01", "length_too_large", 3, {}),
    (H + "72 ff ff ff ff ff ff ff ff ff 01", "length_too_large", 3, {}),
    (H + "5a 00 71 ff ff ff ff 0f 00", "length_too_large", 5, {}),
    (H + "59 59 90", "depth_limit", 4, {"max_depth": 1}),
    (H + "59 59 59 90", "depth_limit", 5, {"max_depth": 2}),
    (H + "59 " * 1001 + "90", "depth_limit", 1003, {}),
    (H + "94 59 90 93 01", "depth_limit", 4, {"max_depth": 1}),
    (H + "68 e8 07 " + "61 " * 1000, "alloc_limit", 3, {"max_alloc": 100}),
    (H + "93 00", "bad_reference", 3, {}),
    (H + "5a 90 93 01", "bad_reference", 5, {}),
    (H + "5a 58 93 01", "bad_reference", 5, {}),
    (H + "5a d9 90 93 05", "bad_reference", 6, {}),
    (H + "5a 6a 01 d9 93 03", "bad_reference", 7, {}),
    (H + "d9 93 01", "bad_reference", 4, {}),
    (H + "5a d9 90 93 ff ff ff ff ff ff ff ff ff 01", "bad_reference", 6, {}),
    (H + "5b c1 61 93 01 93 03", "bad_reference", 8, {}),  # target is a REF tag
    (H + "5a 94 c1 61 93 02 93 00", "bad_reference", 9, {}),  # target: untracked list tag
    (H + "5a ea c0 01 " + "00 " * 192 + "93 02", "bad_reference", 199, {}),  # inside a varint
    (H + "5a 94 d9 90 93 02 93 01", "bad_reference", 9, {}),  # target: the SUPERSEDE tag
    (H + "dd 93 00", "incomplete_reference", 4, {}),
    (H + "f5 01 93 00", "incomplete_reference", 5, {}),
    (H + "dd 59 93 00", "incomplete_reference", 5, {}),
    (H + "94 90 90", "supersede_without_ref", 5, {}),
    (H + "94 90 01", "supersede_without_ref", 5, {}),
    (H + "5a c1 61 94 90 41 61", "supersede_without_ref", 8, {}),
    (H + "61 58 90", "unhashable", 4, {}),
    (H + "74 01 58", "unhashable", 5, {}),
    (H + "61 5d 58 90", "unhashable", 4, {}),
    (H + "75 01 60", "unhashable", 5, {}),
    (H + "61 6b 00 90", "unhashable", 4, {}),
    (H + "74 01 74 00", "unhashable", 5, {}),
    (H + "5a d8 61 93 01 90", "unhashable", 6, {}),
    (H + "f4 01 93 00", "unhashable", 5, {}),  # a set holding itself
    (H + "e1 93 00 90", "unhashable", 4, {}),  # a dict keyed by itself
    (H + "61 5d 5d 58 90", "unhashable", 4, {}),  # unhashable two levels down in a key
    (H + "62 ee 00 00 00 00 00 00 f8 7f 90 93 01 90", "duplicate_key", 14, {}),  # one NaN twice
    (H + "62 00 90 6f 00 00 00 80 90", "duplicate_key", 6, {}),  # 0 == -0.0
    (H + "74 02 75 02 01 02 75 02 02 01", "duplicate_element", 9, {}),
    (H + "62 01 90 01 90", "duplicate_key", 6, {}),
    (H + "62 01 90 92 90", "duplicate_key", 6, {}),
    (H + "62 41 61 90 41 61 90", "duplicate_key", 7, {}),
    (H + "62 01 90 6f 00 00 80 3f 90", "duplicate_key", 6, {}),
    (H + "62 5c 90 5c 91", "duplicate_key", 6, {}),
    (H + "74 02 01 01", "duplicate_element", 6, {}),
    (H + "75 02 40 40", "duplicate_element", 6, {}),
    (H + "74 02 c1 61 93 02", "duplicate_element", 7, {}),
    # The envelope (header flags 0x10, 0x20): key id "k1", no timestamp, None, a zero tag.
    ("ab 41 21 90", "key_required", 2, {}),
    (H + "90", "signature_required", 2, {"key": K1}),
    ("ab 41 21 02 6b 31 00 90" + " 00" * 32, "unknown_key", 3, {"key": K2}),
    ("ab 41 21 02 6b 31 00 90" + " 00" * 32, "bad_signature", 8, {"key": K1}),
    ("ab 41 21 02 6b 31 00" + " 00" * 31, "truncated", 7, {"key": K1}),
    ("ab 41 21 00 00 90" + " 00" * 32, "bad_envelope", 3, {"key": K1}),
    ("ab 41 21 02 6b 31 04 90" + " 00" * 32, "bad_envelope", 6, {"key": K1}),
    ("ab 41 11", "truncated", 3, {}),
    ("ab 41 11 90", "unknown_compression", 3, {}),
    ("ab 41 11 01 00 00", "bad_envelope", 4, {}),
    ("ab 41 11 01 03 00", "bad_compression", 5, {}),
    ("ab 41 11 02 03 20 90 90", "size_mismatch", 4, {}),
    ("ab 41 11 02 05 00", "decompressed_too_large", 4, {"max_decompressed": 4}),
    ("ab 41 11 02 ff ff ff ff 0f 00", "decompressed_too_large", 4, {}),
    # An LZ4 block of the two literals 90 90: None, then a byte too many, at offset 1 of
    # the decompressed body.
    ("ab 41 11 02 02 20 90 90", "trailing_bytes", 1, {}),
]


def _id(case) -> str:
    hexs, kind, offset, _ = case
    return f"{kind}@{offset}:{hexs.replace(' ', '')[:40]}"


def test_table_covers_every_error_kind():
    kinds = {c[1] for c in DECODE_ERRORS} | {
        "hash_limit",
        "missing_buffer",
        "buffer_mismatch",
        "expired",
        "timestamp_in_future",
        "timestamp_required",
    }  # tested below, in test_out_of_band.py and in test_envelope.py
    assert kinds == ERROR_KINDS


@pytest.mark.parametrize("case", DECODE_ERRORS, ids=[_id(c) for c in DECODE_ERRORS])
def test_decode_error_kind_and_offset(case):
    hexs, kind, offset, opts = case
    data = bytes.fromhex(hexs)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **opts)
    err = info.value
    assert err.kind == kind, str(err)
    if offset is not None:
        assert err.offset == offset, str(err)
    assert isinstance(err, amber.DecodeLimitError) == (kind in LIMIT_KINDS)
    msg = str(err)
    assert re.search(rf"(?<!\d){err.offset}(?!\d)", msg), f"no offset {err.offset} in {msg!r}"
    assert len(msg) >= 15, msg


def _key_offsets(keys: list[int], with_values: bool) -> list[int]:
    from _ref import encode_int, varint

    pos = 3 + 1 + len(varint(len(keys)))
    out = []
    for k in keys:
        out.append(pos)
        pos += len(encode_int(k)) + (1 if with_values else 0)
    return out


@pytest.mark.parametrize("first", [0, 1], ids=["with_small_int_7", "all_big_ints"])
@pytest.mark.parametrize("tag", [b"\x73", b"\x74", b"\x75"], ids=["dict", "set", "frozenset"])
def test_hash_limit_kind_and_offset(tag, first):
    """spec 7: at most 64 keys of one container may share a hash; the 65th is rejected at its
    tag. k * (2**61 - 1) + 7 all hash to 7, including k = 0 (the small int 7)."""
    keys = [k * (2**61 - 1) + 7 for k in range(first, first + 65)]
    assert len({hash(k) for k in keys}) == 1
    with_values = tag == b"\x73"
    data = int_container(tag, keys, with_values)
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data)
    assert info.value.kind == "hash_limit"
    assert info.value.offset == _key_offsets(keys, with_values)[64]
    assert str(info.value.offset) in str(info.value)
    assert amber.loads(int_container(tag, keys[:64], with_values)) is not None


def test_truncated_string_offsets():
    # a string running past the end is `truncated` at the string's tag (the declared-length
    # rule of the brief; spec/vectors/errors.json agrees), not at its first payload byte
    for hexs, tag_offset in [
        (H + "43 61 62", 3),
        (H + "68 19 61", 3),
        (H + "6a 05 00", 3),
        (H + "6b 02", 3),
        (H + "69 06 ed a0 80", 3),
        (H + "5a 00 43 61", 5),
        (H + "6d 0a 00 00 00", 3),
    ]:
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(bytes.fromhex(hexs))
        assert (info.value.kind, info.value.offset) == ("truncated", tag_offset), hexs


def test_header_flag_errors_name_the_feature():
    with pytest.raises(amber.SignatureError) as info:
        amber.loads(bytes.fromhex("ab 41 21 90"))
    assert "signed" in str(info.value) and "key=" in str(info.value)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(bytes.fromhex("ab 41 11 90"))
    assert "compression" in str(info.value).lower()
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(bytes.fromhex("ab 41 41 90"))
    assert "string table" in str(info.value)


def test_decode_error_message_mentions_kind_or_description():
    for hexs in ("ab 41 01 95", "ab 41 01 90 90", "ab 41 01 93 00"):
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(bytes.fromhex(hexs))
        msg = str(info.value).lower()
        words = info.value.kind.split("_")
        assert info.value.kind in msg or all(w in msg for w in words if len(w) > 3), msg


def test_decode_error_attributes_types():
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(bytes.fromhex("ab 41 01 95"))
    assert type(info.value.kind) is str
    assert type(info.value.offset) is int
    assert isinstance(info.value, ValueError)
