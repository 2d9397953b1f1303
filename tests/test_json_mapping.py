"""The JSON mapping of spec/json-mapping.md (``amber._json``): the forms of each type,
identity, and what a reader refuses. Expected texts are written out from the mapping."""

from __future__ import annotations

import array
import collections
import datetime
import decimal
import fractions
import functools
import ipaddress
import json
import math
import pathlib
import struct
import time
import types
import uuid
import zoneinfo
from typing import Any

import amber
import pytest
from _common import nested_list
from amber._json import JsonMappingError, _parse, _parse_deep, from_json, to_json


def float_of_bits(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


FORMS: list[tuple[Any, str]] = [
    (None, "null"),
    (True, "true"),
    (2**53 - 1, "9007199254740991"),
    (-(2**53), '{"$int":"-9007199254740992"}'),
    (2**14_001, '{"$int":"0x2' + "0" * 3500 + '"}'),
    (-0.0, "-0.0"),
    (1e16, "1e+16"),
    (math.inf, '{"$float":"inf"}'),
    (-math.inf, '{"$float":"-inf"}'),
    (math.nan, '{"$float":"nan"}'),
    (float_of_bits("fff8000000000123"), '{"$float":"fff8000000000123"}'),
    (complex(1.0, -0.0), '{"$complex":[1.0,-0.0]}'),
    ("é😀", '"é😀"'),
    ("a\ud800b\udfff", '{"$str":["a",55296,"b",57343]}'),
    (b"\x00\x01", '{"$bytes":"AAE="}'),
    (bytearray(b"hi"), '{"$bytearray":"aGk="}'),
    ([1, [2]], "[1,[2]]"),
    ((), '{"$tuple":[]}'),
    ({1}, '{"$set":[1]}'),
    (frozenset(), '{"$frozenset":[]}'),
    ({"$ref": 1, "$": 2, "a$": 3}, '{"$$ref":1,"$$":2,"a$":3}'),
    ({1: "a", "b": 2}, '{"$dict":[[1,"a"],["b",2]]}'),
    (collections.OrderedDict(b=1), '{"$ordereddict":{"b":1}}'),
    (collections.Counter({"x": 3}), '{"$counter":{"x":3}}'),
    (collections.defaultdict(list, k=[1]), '{"$defaultdict":{"k":[1]},"factory":"list"}'),
    (collections.defaultdict(None), '{"$defaultdict":{}}'),
    (collections.deque([1], maxlen=3), '{"$deque":[1],"maxlen":3}'),
    (range(-5, 100, 7), '{"$range":[-5,100,7]}'),
    (slice(1, None, "x"), '{"$slice":[1,null,"x"]}'),
    (fractions.Fraction(-3, 4), '{"$fraction":[-3,4]}'),
    (datetime.date(1, 2, 3), '{"$date":"0001-02-03"}'),
    (datetime.time(23, 59, 59, 999_999, fold=1), '{"$time":"23:59:59.999999","fold":1}'),
    (
        datetime.datetime(2024, 5, 17, 13, 45, 30, 250_000, datetime.timezone.utc),
        '{"$datetime":"2024-05-17T13:45:30.250000","tz":{"$timezone":"utc"}}',
    ),
    (
        datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("Europe/Berlin")),
        '{"$datetime":"2024-01-01T00:00:00","tz":{"$zoneinfo":"Europe/Berlin"}}',
    ),
    (
        datetime.timedelta(microseconds=-1),
        '{"$timedelta":{"days":-1,"seconds":86399,"microseconds":999999}}',
    ),
    (
        datetime.timezone(datetime.timedelta(hours=-5, seconds=1, microseconds=2), "X"),
        '{"$timezone":{"offset":"-04:59:58.999998","name":"X"}}',
    ),
    (
        datetime.timezone(datetime.timedelta(minutes=90), ""),
        '{"$timezone":{"offset":"+01:30","name":""}}',
    ),
    (decimal.Decimal("-12.50"), '{"$decimal":"-12.50"}'),
    (decimal.Decimal("sNaN12"), '{"$decimal":"sNaN12"}'),
    (
        uuid.UUID("12345678-1234-5678-1234-567812345678", is_safe=uuid.SafeUUID.unsafe),
        '{"$uuid":"12345678-1234-5678-1234-567812345678","is_safe":"unsafe"}',
    ),
    (pathlib.PureWindowsPath("C:/x"), '{"$path":"C:\\\\x","class":"PureWindowsPath"}'),
    (pathlib.PurePosixPath("/a\udcff"), '{"$path":{"$str":["/a",56575]},"class":"PurePosixPath"}'),
    (ipaddress.ip_address("fe80::1%eth0"), '{"$ip_address":"fe80::1%eth0"}'),
    (ipaddress.ip_network("192.0.2.0/24"), '{"$ip_network":"192.0.2.0/24"}'),
    (ipaddress.ip_interface("192.0.2.5/24"), '{"$ip_interface":"192.0.2.5/24"}'),
    (array.array("h", [1, -2]), '{"$array":"h","data":"AQD+/w=="}'),
    (
        amber.Placeholder("app", "P", "ATTRS", {"$x": 1}),
        '{"$object":"app:P","kind":"ATTRS","state":{"$$x":1}}',
    ),
    (amber.Placeholder("app", "C", "ENUM", 2), '{"$object":"app:C","kind":"ENUM","state":2}'),
    (amber.Placeholder("app", "f", "GLOBAL", None), '{"$object":"app:f","kind":"GLOBAL"}'),
    (
        amber.Placeholder("app", "L", "MUTABLE_SUBCLASS", ([1], None)),
        '{"$object":"app:L","kind":"MUTABLE_SUBCLASS","state":[[1],null]}',
    ),
    (
        amber.Placeholder("app", "S", "VALUE_SUBCLASS", ("x", {"a": 1})),
        '{"$object":"app:S","kind":"VALUE_SUBCLASS","state":["x",{"a":1}]}',
    ),
    (
        amber.Placeholder("app", "R", "REDUCE", ((1,), None, [2], {"k": 3})),
        '{"$object":"app:R","kind":"REDUCE","state":[{"$tuple":[1]},null,[2],{"k":3}]}',
    ),
    (
        amber.Placeholder("app", "N", "NEWOBJ_KW", (((), {"b": 2}), {"a": 1}, None, None)),
        '{"$object":"app:N","kind":"NEWOBJ_KW",'
        '"state":[{"$tuple":[{"$tuple":[]},{"b":2}]},{"a":1},null,null]}',
    ),
    (
        amber.Placeholder("app", "E", "EXCEPTION", (("m",), None, None, None, False)),
        '{"$object":"app:E","kind":"EXCEPTION","state":[{"$tuple":["m"]},null,null,null,false]}',
    ),
    (int, '{"$object":"builtins:int","kind":"GLOBAL"}'),
    (KeyError, '{"$object":"builtins:KeyError","kind":"GLOBAL"}'),
    (
        ValueError("bad", 3),
        '{"$object":"builtins:ValueError","kind":"EXCEPTION",'
        '"state":[{"$tuple":["bad",3]},null,null,null,false]}',
    ),
    (types.SimpleNamespace(a=1, _b=[2]), '{"$namespace":{"a":1,"_b":[2]}}'),
    (types.SimpleNamespace(**{"$x": 1}), '{"$namespace":{"$$x":1}}'),
    (types.SimpleNamespace(**{"\ud800": 1}), '{"$namespace":[[{"$str":[55296]},1]]}'),
    (..., '{"$singleton":"Ellipsis"}'),
    (NotImplemented, '{"$singleton":"NotImplemented"}'),
]


@pytest.mark.parametrize(("value", "text"), FORMS, ids=[f"{type(v).__name__}" for v, _ in FORMS])
def test_form(value, text, graph_diff):
    assert to_json(value) == text
    assert graph_diff(value, from_json(text)) is None
    json.loads(text)  # plain JSON for any parser


def test_numpy_forms():
    numpy = pytest.importorskip("numpy")
    value = numpy.array([[1.0, 2.0]])
    text = '{"$ndarray":"<f8","shape":[1,2],"data":"AAAAAAAA8D8AAAAAAAAAQA=="}'
    assert to_json(value) == text
    back = from_json(text)
    assert back.dtype == value.dtype and back.tobytes() == value.tobytes() and back.flags.writeable
    records = numpy.array([(1, 2)], dtype=[("a", "<i2"), ("b", "|u1")])
    text = '{"$ndarray":[["a","<i2"],["b","|u1"]],"shape":[1],"data":"AQAC"}'
    assert to_json(records) == text
    assert from_json(text).tobytes() == records.tobytes()
    assert to_json(numpy.float16(1.5)) == '{"$numpy":"<f2","data":"AD4="}'
    assert from_json('{"$numpy":">i4","data":"AAAABw=="}') == numpy.int32(7)


def test_identity_and_cycles(graph_diff):
    shared = [1]
    d: dict[str, Any] = {"a": shared}
    d["me"] = d
    assert to_json([shared, shared]) == '[{"$id":1,"$list":[1]},{"$ref":1}]'
    assert to_json(d) == '{"$id":1,"$dict":{"a":[1],"me":{"$ref":1}}}'
    # Through a tuple (spec 6.5), and a tuple met three times on one cycle.
    t: tuple[list[Any], ...] = ([],)
    t[0].append(t)
    assert to_json(t) == '{"$id":1,"$tuple":[[{"$ref":1}]]}'
    u: tuple[list[Any], list[Any]] = ([], [])
    u[0].append(u)
    u[1].append(u)
    for value in (t, u, [t, u, t[0]], d):
        back = from_json(to_json(value))
        assert graph_diff(value, back) is None
    # Numbers and text keep no identity: written in full each time, equal when read.
    s = "".join(["shared"] * 3)
    assert to_json([s, s, 10**20, 10**20]).count('"sharedsharedshared"') == 2
    # A shared date keeps its identity; the zone of a datetime is part of it.
    day = datetime.date(2024, 1, 1)
    back = from_json(to_json([day, day]))
    assert back[0] is back[1]


def test_cycle_through_a_tuple_whose_later_child_is_defined_inside_it(graph_diff):
    # outer = [T1]; T1 = ([T2], d); T2 = (outer, T1, d): rebuilding T1 inside the cycle reads
    # its child {"$ref": 3} before the document has reached the $id 3 inside T2.
    shared: dict[Any, Any] = {None: []}
    outer: list[Any] = []
    inner: list[Any] = []
    first = (inner, shared)
    inner.append((outer, first, shared))
    outer.append(first)
    text = to_json(outer)
    assert text.index('"$ref":3') > text.index('"$id":3')
    for value in (outer, [outer, shared], (outer,)):
        back = from_json(to_json(value))
        assert graph_diff(value, back) is None
    # Outside a rebuilt cycle a forward $ref stays an error.
    with pytest.raises(JsonMappingError, match=r"\$ref 2 names no earlier \$id"):
        from_json('[{"$ref":2},{"$id":2,"$list":[]}]')


def test_reader_takes_defaults_written_out(graph_diff):
    cases = {
        '{"$time": "01:02:03", "tz": null, "fold": 0}': datetime.time(1, 2, 3),
        '{"$deque": [1], "maxlen": null}': collections.deque([1]),
        '{"$defaultdict": {}, "factory": null}': collections.defaultdict(None),
        '{"$time": "01:02:03.000000"}': datetime.time(1, 2, 3),
    }
    for text, value in cases.items():
        assert graph_diff(value, from_json(text)) is None, text
    back = from_json('{"$uuid": "12345678-1234-5678-1234-567812345678", "is_safe": null}')
    assert back.is_safe is uuid.SafeUUID.unknown


def test_reader_refs_as_keys_and_ids():
    back = from_json('[{"$id":7,"$tuple":[1]},{"$dict":[[{"$ref":7},"x"]]}]')
    assert back[1] == {(1,): "x"} and next(iter(back[1])) is back[0]
    back = from_json('{"$id":0,"$list":[{"$ref":0}]}')
    assert back[0] is back


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"$id": 1}', "belongs in a tagged form"),
        ('{"$list": [], "extra": 1}', "no member 'extra'"),
        ('{"$int": "12", "$id": 1}', "takes no $id"),
        ('[{"$id":1,"$list":[]},{"$id":1,"$list":[]}]', "$id 1 is given twice"),
        ('{"$ref": 1, "$id": 2}', "takes no $id"),
        ('{"$id":1,"$frozenset":[{"$frozenset":[{"$ref":1}]}]}', "cycle through tuples"),
        ('{"$dict": [[1, 2], [1.0, 3]]}', "equals an earlier one"),
        ('{"$frozenset": [1, 1]}', "twice"),
        ('{"$dict": {"$a": 1}}', "must be written"),
        ('"\\ud800"', "lone surrogate"),
        ('{"$str": ["a", 1114112]}', "no code point"),
        ('{"$int": "012"}', "decimal or 0x"),
        ('{"$float": "NaN"}', "$float is"),
        ("1e400", "beyond the float range"),
        ("[Infinity]", "not JSON"),
        ('{"$complex": [1, 2.0]}', "must be a float"),
        ('{"$bytes": "AAF="}', "canonical"),
        ('{"$date": "2023-02-29"}', "day is out of range"),
        ('{"$time": "24:00:00"}', "hour must be in"),
        ('{"$timezone": {"offset": "+24:00"}}', "not within a day"),
        ('{"$zoneinfo": "../etc/passwd"}', "not a time zone key"),
        ('{"$zoneinfo": "No/Such_Zone"}', "no time zone"),
        ('{"$decimal": "1_000"}', "malformed $decimal"),
        ('{"$uuid": "{12345678-1234-5678-1234-567812345678}"}', "malformed $uuid"),
        ('{"$fraction": [1, 0]}', "positive"),
        ('{"$range": [0, 1, 0]}', "not 0"),
        ('{"$array": "x", "data": ""}', "no array typecode"),
        ('{"$array": "i", "data": "AAA="}', "whole number of items"),
        ('{"$path": "C:", "class": "Path"}', "$path class"),
        ('{"$ip_network": "192.0.2.1/24"}', "host bits"),
        ('{"$defaultdict": {}, "factory": "eval"}', "no defaultdict factory"),
        ('{"$object": "a.b", "kind": "ATTRS", "state": {}}', "module:qualname"),
        ('{"$object": "a:b", "kind": "ATTRS", "state": [1]}', "object of fields"),
        ('{"$slice": [1, 2]}', "[start, stop, step]"),
        ('{"a": 1, "a": 2}', "twice"),
        ("[1] x", "Extra data"),
    ],
)
def test_reader_refuses(text, message):
    with pytest.raises(JsonMappingError) as info:
        from_json(text)
    assert message in str(info.value)


def test_reader_error_paths():
    with pytest.raises(JsonMappingError) as info:
        from_json('{"a": [0, {"$tuple": [{"$date": "x"}]}]}')
    assert info.value.path == 'root["a"][1]["$tuple"][0]'
    with pytest.raises(JsonMappingError) as info:
        from_json('{"$dict": [["k", 1], [[2], 3]]}')
    assert info.value.path == 'root["$dict"][1][0]'


def test_deep_documents(graph_diff):
    """Nesting beyond what CPython's JSON parser takes (it recurses)."""
    value = nested_list(5000, "leaf")
    text = to_json(value)
    assert graph_diff(value, from_json(text, max_depth=5000)) is None
    with pytest.raises(JsonMappingError, match="deeper than 1000"):
        from_json(text)


def test_own_parser_agrees_with_json_module():
    """The parser for deep documents reads what the json module reads, and refuses the
    same documents."""
    good = [
        '{"a": 1.5, "b": [true, false, null, "x\\n\\u00e9"], "c": {}, "d": [], "e": -0}',
        ' [ 1e3 , -2E-2 , 0.5 , "" ] ',
        '"\\ud83d\\ude00"',
        "[" * 50 + "]" * 50,
    ]
    for text in good:
        assert _parse_deep(text) == _parse(text), text
    bad = ["[1,]", "[", '{"a" 1}', '{"a": 1,}', "[1] x", "[01]", '["\\x"]', "{1: 2}", "tru"]
    for text in bad:
        with pytest.raises(JsonMappingError, match="invalid JSON"):
            _parse(text)
        with pytest.raises(JsonMappingError, match="invalid JSON"):
            _parse_deep(text)
    for text in ('{"k": 1, "k": 2}', "[1e400]"):
        for parse in (_parse, _parse_deep):
            with pytest.raises(JsonMappingError):
                parse(text)


def test_writer_refuses_values_without_a_form():
    with pytest.raises(JsonMappingError) as info:
        to_json({"f": [print]})
    assert "has no JSON form" in str(info.value) and info.value.path == 'root["f"][0]'


# -- the forms of issue 21: every OBJECT kind, namespaces, singletons ----------------------


class Bag(dict[str, Any]):
    pass


class Label(str):
    pass


class Remembers:
    """Its own __reduce__, whose state refers back to the instance."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __reduce__(self) -> tuple[Any, ...]:
        return (Remembers, (self.n,), {"me": self})


class KeywordOnly:
    def __new__(cls, a: int, *, b: int) -> KeywordOnly:
        made = object.__new__(cls)
        made.a, made.b = a, b
        return made

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((self.a,), {"b": self.b})


class Positional:
    def __new__(cls, a: int) -> Positional:
        made = object.__new__(cls)
        made.a = a
        return made

    def __getnewargs__(self) -> tuple[int]:
        return (self.a,)


def report() -> None:
    pass


try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a test dependency
    msgspec = None
else:

    class Pair(msgspec.Struct):
        x: int
        y: str = "a"


def _chained_error() -> ValueError:
    error = ValueError("bad", 3)
    error.add_note("checked")
    error.__cause__ = KeyError("k")
    return error


def _kind_cases() -> list[tuple[str, Any, str | None]]:
    """(name, value, its document or None) for a payload of each new form."""
    mod = __name__
    bag = Bag(a=1)
    bag["me"] = bag
    label = Label("hi")
    label.lang = "en"
    cases: list[tuple[str, Any, str | None]] = [
        (
            "MUTABLE_SUBCLASS",
            bag,
            f'{{"$id":1,"$object":"{mod}:Bag","kind":"MUTABLE_SUBCLASS",'
            '"state":[{"a":1,"me":{"$ref":1}},null]}',
        ),
        (
            "VALUE_SUBCLASS",
            label,
            f'{{"$object":"{mod}:Label","kind":"VALUE_SUBCLASS","state":["hi",{{"lang":"en"}}]}}',
        ),
        (
            "REDUCE",
            Remembers(7),
            f'{{"$id":1,"$object":"{mod}:Remembers","kind":"REDUCE",'
            '"state":[{"$tuple":[7]},{"me":{"$ref":1}},null,null]}',
        ),
        ("GLOBAL function", report, f'{{"$object":"{mod}:report","kind":"GLOBAL"}}'),
        ("GLOBAL class", Remembers, f'{{"$object":"{mod}:Remembers","kind":"GLOBAL"}}'),
        ("GLOBAL builtin type", int, '{"$object":"builtins:int","kind":"GLOBAL"}'),
        ("GLOBAL builtin function", len, '{"$object":"builtins:len","kind":"GLOBAL"}'),
        (
            "EXCEPTION",
            _chained_error(),
            '{"$object":"builtins:ValueError","kind":"EXCEPTION","state":[{"$tuple":["bad",3]},'
            '{"__notes__":["checked"]},{"$object":"builtins:KeyError","kind":"EXCEPTION",'
            '"state":[{"$tuple":["k"]},null,null,null,false]},null,true]}',
        ),
        (
            "EXCEPTION OSError",
            OSError(2, "x", "f"),
            '{"$object":"builtins:FileNotFoundError","kind":"EXCEPTION",'
            '"state":[{"$tuple":[2,"x","f"]},null,null,null,false]}',
        ),
        ("REDUCE partial", functools.partial(max, 1, key=abs), None),
        ("REDUCE struct_time", time.gmtime(0), None),
        (
            "NEWOBJ_KW",
            KeywordOnly(1, b=2),
            f'{{"$object":"{mod}:KeywordOnly","kind":"NEWOBJ_KW",'
            '"state":[{"$tuple":[{"$tuple":[1]},{"b":2}]},{"a":1,"b":2},null,null]}',
        ),
        (
            "NEWOBJ",
            Positional(5),
            f'{{"$object":"{mod}:Positional","kind":"NEWOBJ",'
            '"state":[{"$tuple":[5]},{"a":5},null,null]}',
        ),
        ("NAMESPACE", types.SimpleNamespace(a=1, b=[2]), '{"$namespace":{"a":1,"b":[2]}}'),
        (
            "SINGLETON",
            [..., NotImplemented],
            '[{"$singleton":"Ellipsis"},{"$singleton":"NotImplemented"}]',
        ),
    ]
    if msgspec is not None:
        cases.append(
            (
                "REDUCE_KW msgspec",
                Pair(1),
                f'{{"$object":"{mod}:Pair","kind":"REDUCE_KW",'
                '"state":[{"$tuple":[{"$tuple":[]},{"x":1,"y":"a"}]},null,null,null]}',
            )
        )
    return cases


KIND_CASES = _kind_cases()


@pytest.mark.parametrize(("name", "value", "text"), KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_payload_to_json_and_back_keeps_the_bytes(name, value, text, graph_diff):
    """payload -> loads(placeholders=True) -> JSON -> from_json -> dumps is the payload."""
    data = amber.dumps(value)
    held = amber.loads(data, placeholders=True)
    document = to_json(held)
    if text is not None:
        assert document == text
    back = from_json(document)
    assert graph_diff(held, back) is None
    assert amber.dumps(back) == data


def _exception_cycles() -> list[Any]:
    through_args: list[Any] = []
    error = ValueError(through_args)
    through_args.append(error)
    through_state = KeyError("k")
    through_state.me = through_state  # type: ignore[attr-defined]
    first, second = TypeError("a"), TypeError("b")
    first.__context__, second.__context__ = second, first
    space = types.SimpleNamespace()
    space.error = ValueError(space)
    return [error, [through_args, error], through_state, first, space, [space, space.error]]


@pytest.mark.parametrize("value", _exception_cycles())
def test_cycles_through_exceptions_and_namespaces(value, graph_diff):
    """An exception is made from its arguments (spec 6.3): a $ref inside them is read as
    for a tuple, one in its later values gets the exception itself."""
    data = amber.dumps(value)
    held = amber.loads(data, placeholders=True)
    back = from_json(to_json(held))
    assert graph_diff(held, back) is None
    assert amber.dumps(back) == data


def test_exception_cycle_through_its_arguments_is_read_again():
    back = from_json(
        '{"$id":1,"$object":"builtins:ValueError","kind":"EXCEPTION",'
        '"state":[{"$tuple":[[{"$ref":1}]]},{"x":{"$ref":1}},null,null,false]}'
    )
    assert type(back) is ValueError
    assert back.args[0][0] is back and back.x is back


def test_reader_makes_only_the_fixed_tables():
    """builtins names of the fixed tables are the objects; every other name a placeholder,
    whatever it says (nothing is looked up or called)."""
    assert from_json('{"$object":"builtins:int","kind":"GLOBAL"}') is int
    assert from_json('{"$object":"builtins:OSError","kind":"GLOBAL"}') is OSError
    for name, kind in [
        ("builtins:eval", "GLOBAL"),
        ("os:system", "GLOBAL"),
        ("builtins:int", "EXCEPTION"),
        ("builtins:ValueError", "REDUCE"),
    ]:
        state = "" if kind == "GLOBAL" else ',"state":[{"$tuple":[]},null,null,null]'
        if kind == "EXCEPTION":
            state = ',"state":[{"$tuple":[]},null,null,null,false]'
        back = from_json(f'{{"$object":"{name}","kind":"{kind}"{state}}}')
        assert type(back) is amber.Placeholder, name
        assert (f"{back.module}:{back.qualname}", back.kind) == (name, kind)
    error = from_json(
        '{"$object":"builtins:PermissionError","kind":"EXCEPTION",'
        '"state":[{"$tuple":[13,"denied","f"]},{"x":1},null,null,false]}'
    )
    assert type(error) is PermissionError
    assert (error.errno, error.strerror, error.filename, error.x) == (13, "denied", "f", 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"$object":"a:f","kind":"GLOBAL","state":null}', "GLOBAL $object has no state"),
        ('{"$object":"a:b","kind":"REDUCE"}', "needs its state"),
        (
            '{"$object":"a:b","kind":"REDUCE","state":[[],null,null,null]}',
            "REDUCE value 0 must be a tuple of arguments, not a list",
        ),
        ('{"$object":"a:b","kind":"NEWOBJ","state":[{"$tuple":[]},null,null]}', "array of its 4"),
        (
            '{"$object":"a:b","kind":"REDUCE","state":[{"$tuple":[]},1,2,null]}',
            "REDUCE value 2 must be None or a list of items, not an int",
        ),
        (
            '{"$object":"a:b","kind":"REDUCE_KW","state":[{"$tuple":[]},1,null,[]]}',
            "REDUCE_KW value 3 must be None or a dict of items, not a list",
        ),
        ('{"$object":"a:b","kind":"MUTABLE_SUBCLASS","state":[{"$tuple":[]},null]}', "value 0"),
        ('{"$object":"a:b","kind":"VALUE_SUBCLASS","state":[true,null]}', "not a bool"),
        (
            '{"$object":"a:b","kind":"EXCEPTION","state":[{"$tuple":[]},null,1,null,false]}',
            "value 2",
        ),
        (
            '{"$object":"a:b","kind":"EXCEPTION","state":[{"$tuple":[]},null,null,null,0]}',
            "value 4",
        ),
        ('{"$object":"a:b","kind":"FROB","state":1}', "kind is one of"),
        (
            '{"$object":"builtins:OSError","kind":"EXCEPTION",'
            '"state":[{"$tuple":[2,"x"]},null,null,null,false]}',
            "not the class named",
        ),
        (
            '{"$object":"builtins:ValueError","kind":"EXCEPTION","state":[{"$tuple":[]},null,'
            '{"$object":"a:E","kind":"EXCEPTION","state":[{"$tuple":[]},null,null,null,false]},'
            "null,false]}",
            "cause must be an exception",
        ),
        (
            '{"$object":"builtins:UnicodeDecodeError","kind":"EXCEPTION",'
            '"state":[{"$tuple":[1]},null,null,null,false]}',
            "UnicodeDecodeError",
        ),
        (
            '{"$id":1,"$object":"builtins:ValueError","kind":"EXCEPTION",'
            '"state":[{"$tuple":[{"$ref":1}]},null,null,null,false]}',
            "cycle through tuples",
        ),
        ('{"$namespace":[[1,2]]}', "attribute name is a str"),
        ('{"$namespace":[["a",1],["a",2]]}', "equals an earlier one"),
        ('{"$namespace":{"$a":1}}', "must be written"),
        ('{"$namespace":1}', "$namespace holds"),
        ('{"$singleton":"None"}', "$singleton is"),
        ('{"$singleton":"Ellipsis","$id":1}', "takes no $id"),
    ],
)
def test_reader_refuses_new_forms(text, message):
    with pytest.raises(JsonMappingError) as info:
        from_json(text)
    assert message in str(info.value)


def test_singletons_keep_no_identity():
    assert to_json([..., ...]) == '[{"$singleton":"Ellipsis"},{"$singleton":"Ellipsis"}]'
    back = from_json(to_json([..., NotImplemented]))
    assert back[0] is ... and back[1] is NotImplemented


class Local:
    pass


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Local, "has no JSON form"),
        (report, "has no JSON form"),
        (Local(), "has no JSON form"),
        (amber.Placeholder("a", "f", "GLOBAL", 1), "must be None"),
        (amber.Placeholder("a", "b", "REDUCE", ((), None, None)), "tuple of 4 values"),
        (
            amber.Placeholder("a", "b", "REDUCE", ([], None, None, None)),
            "REDUCE value 0 must be a tuple of arguments",
        ),
        (amber.Placeholder("a", "b", "NOPE", None), "no OBJECT kind"),
    ],
)
def test_writer_refuses_new_forms(value, message):
    with pytest.raises(JsonMappingError) as info:
        to_json([value])
    assert message in str(info.value)
