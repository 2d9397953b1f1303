"""amber values as JSON and back, by the mapping of ``spec/json-mapping.md``.

``iter_json`` writes the value a payload decodes to (``loads(data, placeholders=True)``) as
JSON text; ``from_json`` reads such text back into a value that ``dumps`` writes as an equal
payload: same types, same sharing of containers, same cycles. Plain JSON stays plain; every
other type has a tagged form, an object with one member whose name starts with ``$``.

Both directions walk the graph with an explicit stack, since payloads nest up to 10000
levels and CPython's own JSON code recurses. Nothing named by a document is imported or
called: class instances, classes and functions are ``amber.Placeholder`` objects in both
directions, except the builtin exceptions and types of the format's fixed tables, which a
payload decoder makes without being told to, and which are made here the same way.
"""

from __future__ import annotations

import array
import base64
import binascii
import collections
import datetime
import decimal
import fractions
import functools
import ipaddress
import json
import json.decoder
import pathlib
import re
import struct
import sys
import types
import uuid
import zoneinfo
from collections.abc import Callable, Iterator
from typing import Any, Final

from . import _classes
from ._amber import DEFAULT_MAX_DEPTH, _value_rule
from ._classes import Placeholder

__all__ = ["JsonMappingError", "from_json", "iter_json", "to_json"]

# Ints beyond this magnitude lose precision in JSON readers that use binary64 numbers.
MAX_SAFE_INT: Final = 2**53 - 1
# Ints up to this many bits are written in decimal; longer ones in hex, which converts in
# linear time (decimal conversion is quadratic, and CPython refuses more than 4300 digits).
MAX_DECIMAL_BITS: Final = 14_000
# The OBJECT kinds whose state is a set of named fields.
FIELD_KINDS: Final = frozenset({"ATTRS", "TUPLE_FIELDS"})
# The OBJECT kinds whose state is their one value.
SINGLE_KINDS: Final = frozenset({"STATE", "ENUM", "CUSTOM"})
# The OBJECT kinds with several values, and how many: their state is a JSON array of them.
MULTI_KINDS: Final = {
    "MUTABLE_SUBCLASS": 2,
    "VALUE_SUBCLASS": 2,
    "REDUCE": 4,
    "NEWOBJ": 4,
    "EXCEPTION": 5,
    "REDUCE_KW": 4,
    "NEWOBJ_KW": 4,
}
OBJECT_KINDS: Final = FIELD_KINDS | SINGLE_KINDS | {"GLOBAL"} | frozenset(MULTI_KINDS)
# The objects a document may name without a Placeholder: the fixed tables of spec/format.md
# 5.17.4, builtin exception classes (EXCEPTION and GLOBAL) and builtin types (GLOBAL only).
BUILTIN_EXCEPTIONS: Final[dict[type, str]] = {
    cls: name for name, cls in _classes._BUILTIN_EXCEPTIONS.items()
}
BUILTIN_GLOBALS: Final[dict[Any, str]] = {
    **BUILTIN_EXCEPTIONS,
    **{cls: name for name, cls in _classes._BUILTIN_TYPES.items()},
}
SINGLETONS: Final[dict[str, Any]] = {"Ellipsis": ..., "NotImplemented": NotImplemented}
# The builtins a defaultdict's factory may be (the DEFAULTDICT table of the format).
FACTORIES: Final[dict[str, type]] = {
    f.__name__: f
    for f in (list, dict, set, int, float, str, bytes, tuple, frozenset, bool, complex, bytearray)
}
# ARRAY typecodes and their item sizes on the wire.
ARRAY_ITEM_SIZES: Final = {
    **dict.fromkeys("bB", 1),
    **dict.fromkeys("hH", 2),
    **dict.fromkeys("iIfuw", 4),
    **dict.fromkeys("lLqQd", 8),
}
PATH_CLASSES: Final[dict[str, type[pathlib.PurePath]]] = {
    cls.__name__: cls
    for cls in (
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    )
}
IP_TAGS: Final[dict[type, str]] = {
    ipaddress.IPv4Address: "$ip_address",
    ipaddress.IPv6Address: "$ip_address",
    ipaddress.IPv4Network: "$ip_network",
    ipaddress.IPv6Network: "$ip_network",
    ipaddress.IPv4Interface: "$ip_interface",
    ipaddress.IPv6Interface: "$ip_interface",
}
IP_PARSERS: Final[dict[str, Callable[[str], Any]]] = {
    "$ip_address": ipaddress.ip_address,
    "$ip_network": ipaddress.ip_network,
    "$ip_interface": ipaddress.ip_interface,
}
SAFETY: Final = {uuid.SafeUUID.safe: "safe", uuid.SafeUUID.unsafe: "unsafe"}

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_HEX_BITS: Final = re.compile("[0-9a-f]{16}")
_INT_TEXT: Final = re.compile("-?(?:0|[1-9][0-9]*|0x[0-9a-f]+)")
_DATE: Final = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME: Final = "[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{6})?"
_OFFSET: Final = re.compile("([+-])([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\\.([0-9]{6}))?)?")
_DECIMAL: Final = re.compile(
    "[+-]?(?:(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?|Infinity|s?NaN[0-9]*)"
)
_ZONE_KEY: Final = re.compile("[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_UUID: Final = re.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class JsonMappingError(ValueError):
    """A value without a JSON form, or JSON that is not a document of the mapping.

    ``path`` says where, as ``root[2]["$tuple"][0]`` (in the document for ``from_json``, in
    the JSON being written for ``iter_json``), or is None for text that is not JSON at all.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{message} at {path}" if path else message)
        self.path = path


class _Problem(Exception):
    """A problem found deep in a walk; the walk adds where it is."""


def _want(condition: bool, message: str) -> None:
    if not condition:
        raise _Problem(message)


# -- scalars both ways ----------------------------------------------------------------------


def _float_text(value: float) -> str:
    """The ``$float`` text of a float that JSON numbers cannot hold."""
    if value == float("inf"):
        return "inf"
    if value == float("-inf"):
        return "-inf"
    (bits,) = struct.unpack(">Q", struct.pack(">d", value))
    return "nan" if bits == 0x7FF8_0000_0000_0000 else f"{bits:016x}"


def _float_of_text(text: str) -> float:
    if text in ("inf", "-inf"):
        return float(text)
    if text == "nan":
        text = "7ff8000000000000"
    _want(
        _HEX_BITS.fullmatch(text) is not None,
        f'$float is "inf", "-inf", "nan" or 16 hex digits, not {text[:40]!r}',
    )
    (value,) = struct.unpack(">d", bytes.fromhex(text))
    return float(value)


def _int_text(value: int) -> str:
    if abs(value).bit_length() <= MAX_DECIMAL_BITS:
        return str(value)
    return f"{'-' if value < 0 else ''}0x{abs(value):x}"


def _int_of_text(text: str) -> int:
    _want(
        _INT_TEXT.fullmatch(text) is not None,
        f"$int is a decimal or 0x-prefixed hex integer, not {text[:40]!r}",
    )
    digits = text.lstrip("-")
    try:
        value = int(digits[2:], 16) if digits.startswith("0x") else int(digits)
    except ValueError:
        raise _Problem(
            f"$int has {len(digits)} decimal digits, more than Python converts; write it in hex"
        ) from None
    return -value if text.startswith("-") else value


def _offset_text(offset: datetime.timedelta) -> str:
    micros = (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
    seconds, micro = divmod(abs(micros), 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    text = f"{'-' if micros < 0 else '+'}{hour:02}:{minute:02}"
    if second or micro:
        text += f":{second:02}"
    if micro:
        text += f".{micro:06}"
    return text


def _offset_of_text(text: Any) -> datetime.timedelta:
    match = _OFFSET.fullmatch(text) if type(text) is str else None
    if match is None:
        raise _Problem(f'a time zone offset is written "+HH:MM[:SS[.ffffff]]", not {text!r}')
    sign, hour, minute, second, micro = match.groups()
    offset = datetime.timedelta(
        hours=int(hour), minutes=int(minute), seconds=int(second or 0), microseconds=int(micro or 0)
    )
    _want(offset < datetime.timedelta(days=1), f"time zone offset {text} is not within a day")
    return -offset if sign == "-" else offset


def _wire_array_bytes(value: array.array[Any]) -> bytes:
    """An array's items as the ARRAY layout has them: little-endian, wire item sizes."""
    _want(
        value.itemsize == ARRAY_ITEM_SIZES.get(value.typecode),
        f"array typecode {value.typecode!r} has no wire form on this platform",
    )
    if sys.byteorder == "little":
        return value.tobytes()
    swapped = array.array(value.typecode, value)
    swapped.byteswap()
    return swapped.tobytes()


def _numpy() -> Any:
    """numpy, once a document needs it (it stays optional)."""
    try:
        import numpy
    except ImportError:
        raise _Problem("numpy is not installed; $ndarray and $numpy values need it") from None
    return numpy


def _dtype_json(dtype: Any) -> str:
    """A dtype as JSON text: its ``dtype.str``, or a structured dtype's field list."""
    if dtype.names is not None:
        from ._dtypes import structured_text

        return structured_text(dtype)
    return json.dumps(dtype.str)


def _dtype_of(node: Any) -> Any:
    numpy = _numpy()
    if type(node) is list:
        from ._dtypes import structured_dtype

        try:
            return structured_dtype(json.dumps(node, separators=(",", ":")))
        except ValueError as exc:
            raise _Problem(str(exc)) from None
    _want(type(node) is str, "a dtype is a dtype string or a structured field list")
    try:
        dtype = numpy.dtype(node)
    except (TypeError, ValueError):
        raise _Problem(f"{node!r} is not a numpy dtype") from None
    _want(
        dtype.str == node and not dtype.hasobject and dtype.kind in "biufcmMSUV",
        f"{node!r} is not a plain dtype as numpy writes it (dtype.str)",
    )
    return dtype


# -- writing --------------------------------------------------------------------------------


class _Raw(str):
    """Text that is already JSON."""

    __slots__ = ()


_ARRAY, _OBJECT = 0, 1
_NULL, _TRUE, _FALSE = _Raw("null"), _Raw("true"), _Raw("false")
_DONE: Final = object()


class _Template:
    """A JSON array or object whose items are JSON (``_Raw``, templates) or values; an
    object's items are (key as ``_Raw``, item) pairs."""

    __slots__ = ("items", "kind")

    def __init__(self, kind: int, items: Iterator[Any]) -> None:
        self.kind = kind
        self.items = items


def _obj(*members: tuple[str, Any]) -> _Template:
    return _Template(_OBJECT, iter([(_Raw(json.dumps(k)), v) for k, v in members]))


def _arr(items: Any) -> _Template:
    return _Template(_ARRAY, iter(items))


def _str_raw(text: str) -> _Raw:
    return _Raw(json.encoder.encode_basestring(text))


def _b64(data: bytes | bytearray) -> _Raw:
    return _Raw(f'"{base64.b64encode(data).decode("ascii")}"')


def _plain_key(key: object) -> bool:
    return type(key) is str and _SURROGATE.search(key) is None


def _fields(mapping: dict[Any, Any]) -> _Template:
    """A JSON object of str keys; a key starting with "$" gets one more, so it reads as no tag."""
    return _Template(
        _OBJECT, ((_str_raw("$" + k if k[:1] == "$" else k), v) for k, v in mapping.items())
    )


# Types whose values keep no identity in the mapping: written as JSON scalars (or as tagged
# numbers and texts), each occurrence in full.
_NO_IDENTITY: Final = frozenset(
    {type(None), bool, int, float, complex, str, type(...), type(NotImplemented)}
)
_MAPPINGS: Final = (dict, collections.OrderedDict, collections.Counter, collections.defaultdict)


def _identity_bearing(value: object) -> bool:
    """Whether the mapping keeps the object's identity: everything but numbers and text, and
    the empty tuple and bytes (single objects in CPython, never referred to in a payload)."""
    cls = type(value)
    if cls is tuple or cls is bytes:
        return bool(value)
    return cls not in _NO_IDENTITY


def _children(value: Any, exceptions: dict[int, tuple[Any, ...]]) -> Any:
    """The values the JSON form of ``value`` holds, in the order it writes them."""
    cls = type(value)
    if cls in (list, tuple, set, frozenset, collections.deque):
        return value
    if cls in _MAPPINGS:
        return [x for pair in value.items() for x in pair]
    if cls is slice:
        return (value.start, value.stop, value.step)
    if cls is types.SimpleNamespace:
        return [x for pair in vars(value).items() for x in pair]
    if cls is Placeholder:
        if value.kind in FIELD_KINDS and type(value.state) is dict:
            return value.state.values()
        if value.kind in MULTI_KINDS and type(value.state) is tuple:
            return value.state
        return () if value.kind == "GLOBAL" else (value.state,)
    if cls in BUILTIN_EXCEPTIONS:
        return _exception_values(value, exceptions)
    return ()


def _exception_values(value: BaseException, known: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    """The five values of a builtin exception's OBJECT, worked out once per exception as the
    reference encoder does (``instance_parts``): arguments, state, cause, context and
    whether the context is suppressed."""
    values = known.get(id(value))
    if values is None:
        kind, *_, values = _classes.instance_parts(value)
        _want(kind == _classes.EXCEPTION, f"{type(value).__qualname__} is not written as one")
        known[id(value)] = values
    return values


def _shared_objects(root: object, exceptions: dict[int, tuple[Any, ...]]) -> set[int]:
    """Identities of the identity-bearing objects met more than once from ``root``."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if _identity_bearing(value):
            if id(value) in seen:
                shared.add(id(value))
                continue
            seen.add(id(value))
        stack.extend(_children(value, exceptions))
    return shared


def _check_value_rule(kind: str, index: int, value: Any) -> None:
    """The value rules of spec/format.md 5.17.3, the payload decoder's own (``_value_rule``)."""
    problem = _value_rule(kind, index, value)
    _want(problem is None, f"{problem}")


class _Writer:
    """One conversion of a value to JSON text."""

    def __init__(self, root: object, indent: int | None) -> None:
        self._root = root
        self._indent = indent
        # The values of the builtin exceptions met, by identity (see _exception_values).
        self._exceptions: dict[int, tuple[Any, ...]] = {}
        try:
            self._shared = _shared_objects(root, self._exceptions)
        except _Problem as exc:
            raise JsonMappingError(str(exc)) from None
        self._ids: dict[int, int] = {}
        self._shapers: dict[type, Callable[[Any], _Raw | _Template]] = {
            type(None): lambda _: _NULL,
            bool: lambda v: _TRUE if v else _FALSE,
            int: self._int,
            float: self._float,
            complex: lambda v: _obj(("$complex", _arr((v.real, v.imag)))),
            str: self._str,
            list: self._list,
            dict: self._dict,
            Placeholder: self._placeholder,
            types.SimpleNamespace: self._namespace,
            type(...): lambda _: _obj(("$singleton", "Ellipsis")),
            type(NotImplemented): lambda _: _obj(("$singleton", "NotImplemented")),
            type: self._class,
            **{cls: self._exception for cls in BUILTIN_EXCEPTIONS},
            **{cls: functools.partial(self._formed, form) for cls, form in _FORMS_BY_TYPE.items()},
        }

    def chunks(self) -> Iterator[str]:
        """The JSON text, in pieces of some 64 KiB."""
        out: list[str] = []
        size = 0
        indent = self._indent
        # Each open array or object: [template, level, items written, key being written].
        stack: list[list[Any]] = []
        pending: Any = self._root
        while True:
            if pending is not _DONE:
                node = pending
                if type(node) is not _Raw and type(node) is not _Template:
                    try:
                        node = self._shape(node)
                    except _Problem as exc:
                        raise JsonMappingError(str(exc), _write_path(stack)) from None
                if isinstance(node, _Raw):
                    out.append(node)
                    size += len(node)
                    if size > 65_536:
                        yield "".join(out)
                        out.clear()
                        size = 0
                else:
                    out.append("[" if node.kind == _ARRAY else "{")
                    stack.append([node, len(stack), 0, None])
            if not stack:
                break
            frame = stack[-1]
            template, level, count, _ = frame
            item: Any = next(template.items, _DONE)
            if item is _DONE:
                stack.pop()
                close = "]" if template.kind == _ARRAY else "}"
                if count and indent is not None:
                    close = "\n" + " " * (indent * level) + close
                out.append(close)
                pending = _DONE
                continue
            sep = "," if count else ""
            if indent is not None:
                sep += "\n" + " " * (indent * (level + 1))
            frame[2] = count + 1
            if template.kind == _OBJECT:
                key, item = item
                frame[3] = key
                sep += key + (": " if indent is not None else ":")
            out.append(sep)
            pending = item
        yield "".join(out)

    def _shape(self, value: Any) -> _Raw | _Template:
        shaper = self._shapers.get(type(value))
        if shaper is not None:
            return shaper(value)
        numpy = sys.modules.get("numpy")
        if numpy is not None and type(value) is numpy.ndarray:
            return self._tracked(
                value,
                "$ndarray",
                _Raw(_dtype_json(value.dtype)),
                ("shape", _arr(value.shape)),
                ("data", _b64(value.tobytes(order="C"))),
            )
        if numpy is not None and isinstance(value, numpy.generic):
            dtype = _Raw(_dtype_json(value.dtype))
            return self._tracked(value, "$numpy", dtype, ("data", _b64(value.tobytes())))
        cls = type(value)
        raise _Problem(f"{cls.__module__}.{cls.__qualname__} has no JSON form")

    def _formed(self, form: _Form, value: Any) -> _Template:
        return self._tracked(value, *form(value))

    def _tracked(self, value: object, tag: str, body: Any, *params: tuple[str, Any]) -> _Template:
        """An identity-bearing value's tagged form: in full, with a ``$id`` when the value is
        shared, the first time; ``{"$ref": id}`` after that."""
        known = self._ids.get(id(value))
        if known is not None:
            return _obj(("$ref", _Raw(str(known))))
        if id(value) in self._shared:
            number = self._ids[id(value)] = len(self._ids) + 1
            return _obj(("$id", _Raw(str(number))), (tag, body), *params)
        return _obj((tag, body), *params)

    @staticmethod
    def _int(value: int) -> _Raw | _Template:
        if -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            return _Raw(int.__repr__(value))
        return _obj(("$int", _int_text(value)))

    @staticmethod
    def _float(value: float) -> _Raw | _Template:
        if value - value == 0.0:  # finite
            return _Raw(float.__repr__(value))
        return _obj(("$float", _float_text(value)))

    @staticmethod
    def _str(value: str) -> _Raw | _Template:
        if _SURROGATE.search(value) is None:
            return _str_raw(value)
        parts: list[str | int] = []
        start = 0
        for match in _SURROGATE.finditer(value):
            if match.start() > start:
                parts.append(value[start : match.start()])
            parts.append(ord(match.group()))
            start = match.end()
        if start < len(value):
            parts.append(value[start:])
        return _obj(("$str", _arr(parts)))

    def _list(self, value: list[Any]) -> _Template:
        if id(value) in self._shared:
            return self._tracked(value, "$list", _arr(value))
        return _arr(value)

    def _dict(self, value: dict[Any, Any]) -> _Template:
        if id(value) not in self._shared and all(_plain_key(k) for k in value):
            return _fields(value)
        return self._tracked(value, "$dict", _mapping_body(value))

    def _placeholder(self, value: Placeholder) -> _Template:
        kind = value.kind
        _want(kind in OBJECT_KINDS, f"Placeholder kind {kind!r} is no OBJECT kind")
        state: Any = value.state
        name = f"{value.module}:{value.qualname}"
        if kind == "GLOBAL":
            _want(state is None, "the state of a GLOBAL Placeholder must be None")
            return self._tracked(value, "$object", name, ("kind", kind))
        if kind in FIELD_KINDS:
            _want(
                type(state) is dict and all(_plain_key(k) for k in state),
                f"the state of a {kind} Placeholder must be a dict of fields",
            )
            state = _fields(state)
        elif kind in MULTI_KINDS:
            count = MULTI_KINDS[kind]
            _want(
                type(state) is tuple and len(state) == count,
                f"the state of a {kind} Placeholder must be a tuple of {count} values",
            )
            for index, item in enumerate(state):
                _check_value_rule(kind, index, item)
            state = _arr(state)
        return self._tracked(value, "$object", name, ("kind", kind), ("state", state))

    def _exception(self, value: BaseException) -> _Template:
        """A builtin exception, as the EXCEPTION object a payload holds for it."""
        values = _exception_values(value, self._exceptions)
        name = f"builtins:{BUILTIN_EXCEPTIONS[type(value)]}"
        return self._tracked(value, "$object", name, ("kind", "EXCEPTION"), ("state", _arr(values)))

    def _class(self, value: type) -> _Template:
        """A class of the fixed tables, as the GLOBAL object a payload holds for it."""
        name = BUILTIN_GLOBALS.get(value)
        _want(
            name is not None,
            f"the class {value.__module__}.{value.__qualname__} has no JSON form "
            "(only builtin types and exception classes do)",
        )
        return self._tracked(value, "$object", f"builtins:{name}", ("kind", "GLOBAL"))

    def _namespace(self, value: types.SimpleNamespace) -> _Template:
        attributes = vars(value)
        _want(
            all(type(k) is str for k in attributes),
            "a SimpleNamespace attribute name is not a str",
        )
        return self._tracked(value, "$namespace", _mapping_body(attributes))


def _mapping_body(value: dict[Any, Any]) -> _Template:
    if all(_plain_key(k) for k in value):
        return _fields(value)
    return _arr(_arr(pair) for pair in value.items())


# The tagged form of each other type: value -> (tag, body, *(member, value) parameters).
_Form = Callable[[Any], tuple[Any, ...]]


def _uuid_form(value: uuid.UUID) -> tuple[Any, ...]:
    safety = SAFETY.get(value.is_safe)
    return ("$uuid", str(value), *([("is_safe", safety)] if safety else []))


def _clock_form(value: datetime.time | datetime.datetime) -> tuple[Any, ...]:
    tag = "$datetime" if type(value) is datetime.datetime else "$time"
    form: list[Any] = [tag, value.replace(tzinfo=None, fold=0).isoformat()]
    if value.tzinfo is not None:
        # The zone is part of the value (as in the DATETIME layout), not a shared object.
        form.append(("tz", _obj(_tz_form(value.tzinfo))))
    if value.fold:
        form.append(("fold", 1))
    return tuple(form)


def _timedelta_form(value: datetime.timedelta) -> tuple[Any, ...]:
    days, seconds, micros = value.days, value.seconds, value.microseconds
    return ("$timedelta", _obj(("days", days), ("seconds", seconds), ("microseconds", micros)))


def _tz_form(value: datetime.tzinfo) -> tuple[Any, ...]:
    if type(value) is zoneinfo.ZoneInfo:
        _want(value.key is not None, "a ZoneInfo without a key has no JSON form")
        return ("$zoneinfo", value.key)
    if value is datetime.timezone.utc:
        return ("$timezone", "utc")
    # (offset,) or (offset, name): a name, even an empty one, is kept as given.
    args = value.__getinitargs__()  # type: ignore[attr-defined]
    members: list[tuple[str, Any]] = [("offset", _offset_text(args[0]))]
    if len(args) > 1:
        members.append(("name", args[1]))
    return ("$timezone", _obj(*members))


def _defaultdict_form(value: collections.defaultdict[Any, Any]) -> tuple[Any, ...]:
    factory: Any = value.default_factory
    if factory is None:
        return ("$defaultdict", _mapping_body(value))
    name = getattr(factory, "__name__", "")
    _want(FACTORIES.get(name) is factory, f"defaultdict factory {factory!r} has no JSON form")
    return ("$defaultdict", _mapping_body(value), ("factory", name))


def _deque_form(value: collections.deque[Any]) -> tuple[Any, ...]:
    params = () if value.maxlen is None else (("maxlen", value.maxlen),)
    return ("$deque", _arr(value), *params)


_FORMS_BY_TYPE: Final[dict[type, _Form]] = {
    bytes: lambda v: ("$bytes", _b64(v)),
    bytearray: lambda v: ("$bytearray", _b64(v)),
    tuple: lambda v: ("$tuple", _arr(v)),
    set: lambda v: ("$set", _arr(v)),
    frozenset: lambda v: ("$frozenset", _arr(v)),
    collections.OrderedDict: lambda v: ("$ordereddict", _mapping_body(v)),
    collections.Counter: lambda v: ("$counter", _mapping_body(v)),
    collections.defaultdict: _defaultdict_form,
    collections.deque: _deque_form,
    slice: lambda v: ("$slice", _arr((v.start, v.stop, v.step))),
    range: lambda v: ("$range", _arr((v.start, v.stop, v.step))),
    fractions.Fraction: lambda v: ("$fraction", _arr((v.numerator, v.denominator))),
    decimal.Decimal: lambda v: ("$decimal", str(v)),
    uuid.UUID: _uuid_form,
    datetime.date: lambda v: ("$date", v.isoformat()),
    datetime.time: _clock_form,
    datetime.datetime: _clock_form,
    datetime.timedelta: _timedelta_form,
    datetime.timezone: _tz_form,
    zoneinfo.ZoneInfo: _tz_form,
    array.array: lambda v: ("$array", v.typecode, ("data", _b64(_wire_array_bytes(v)))),
    **{
        cls: lambda v: ("$path", str(v), ("class", type(v).__name__))
        for cls in PATH_CLASSES.values()
    },
    **{cls: lambda v: (IP_TAGS[type(v)], str(v)) for cls in IP_TAGS},
}


def _write_path(stack: list[list[Any]]) -> str:
    steps = ["root"]
    for template, _, count, key in stack:
        steps.append(f"[{count - 1}]" if template.kind == _ARRAY else f"[{key}]")
    return "".join(steps)


def iter_json(value: object, *, indent: int | None = None) -> Iterator[str]:
    """The JSON text of ``value``, in pieces: ``indent`` spaces per level, or one line."""
    return _Writer(value, indent).chunks()


def to_json(value: object, *, indent: int | None = None) -> str:
    """The JSON text of ``value`` (see ``iter_json``)."""
    return "".join(iter_json(value, indent=indent))


# -- parsing --------------------------------------------------------------------------------


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonMappingError(f"a JSON object has the member {key!r} twice")
            seen.add(key)
    return obj


def _json_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise JsonMappingError(
            f"a JSON number has {len(text)} digits, more than Python converts; "
            'write such ints as {"$int": "0x..."}'
        ) from None


def _json_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:
        raise JsonMappingError(
            f'the JSON number {text[:40]} is beyond the float range; write {{"$float": "inf"}}'
        )
    return value


def _json_constant(name: str) -> Any:
    raise JsonMappingError(f'{name} is not JSON; write such floats as {{"$float": "..."}}')


def _parse(text: str) -> Any:
    """The JSON document in ``text``, objects as dicts (a repeated member name refused)."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_json_object,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except RecursionError:
        return _parse_deep(text)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise JsonMappingError(message) from None


_WS: Final = re.compile("[ \t\n\r]*")
_NUMBER: Final = re.compile("(-?(?:0|[1-9][0-9]*))(\\.[0-9]+)?([eE][-+]?[0-9]+)?")


def _parse_deep(text: str) -> Any:
    """``_parse`` with an explicit stack, for documents nested beyond CPython's parser."""
    # The C string scanner of the json module (typeshed does not declare it).
    scan: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009

    def fail(message: str, at: int) -> JsonMappingError:
        line = text.count("\n", 0, at) + 1
        column = at - text.rfind("\n", 0, at)
        return JsonMappingError(f"invalid JSON at line {line} column {column}: {message}")

    def skip(at: int) -> int:
        match = _WS.match(text, at)
        return at if match is None else match.end()

    def key_at(at: int) -> tuple[str, int]:
        if text[at : at + 1] != '"':
            raise fail("Expecting property name enclosed in double quotes", at)
        key, at = scan(text, at + 1, True)
        at = skip(at)
        if text[at : at + 1] != ":":
            raise fail("Expecting ':' delimiter", at)
        return key, skip(at + 1)

    # Each open container: [items, is an object, name of the member being read].
    stack: list[list[Any]] = []
    at = skip(0)
    try:
        while True:
            char = text[at : at + 1]
            value: Any
            if char == "[":
                at = skip(at + 1)
                if text[at : at + 1] != "]":
                    stack.append([[], False, None])
                    continue
                value, at = [], at + 1
            elif char == "{":
                at = skip(at + 1)
                if text[at : at + 1] != "}":
                    key, at = key_at(at)
                    stack.append([[], True, key])
                    continue
                value, at = _json_object([]), at + 1
            elif char == '"':
                value, at = scan(text, at + 1, True)
            elif (number := _NUMBER.match(text, at)) is not None:
                whole, fraction, exponent = number.groups()
                value = _json_float(number.group()) if fraction or exponent else _json_int(whole)
                at = number.end()
            elif text.startswith("true", at):
                value, at = True, at + 4
            elif text.startswith("false", at):
                value, at = False, at + 5
            elif text.startswith("null", at):
                value, at = None, at + 4
            else:
                raise fail("Expecting value", at)
            # The value is complete: add it to its container, closing those that end.
            while True:
                at = skip(at)
                if not stack:
                    if at != len(text):
                        raise fail("Extra data", at)
                    return value
                frame = stack[-1]
                items, is_object, key = frame
                items.append((key, value) if is_object else value)
                char = text[at : at + 1]
                if char == ",":
                    at = skip(at + 1)
                    if is_object:
                        frame[2], at = key_at(at)
                    break
                if char != ("}" if is_object else "]"):
                    raise fail("Expecting ',' delimiter", at)
                stack.pop()
                value = _json_object(items) if is_object else items
                at += 1
    except json.JSONDecodeError as exc:
        raise fail(exc.msg, exc.pos) from None


# -- reading --------------------------------------------------------------------------------

# How the reader builds each container. Created first: the object exists, and its $id
# resolves, before its children are read. Built after: made from its complete children.
# Made from its first value: an exception exists once its arguments are read (as the
# EXCEPTION kind's instances, spec/format.md 5.17.3).
_LIST, _MAP, _PAIRS, _SET, _DEQUE, _FIELDS, _STATE, _VALUES, _NS_FIELDS, _NS_PAIRS = range(10)
_TUPLE, _FROZENSET, _SLICE, _EXCEPTION = range(10, 14)
_CREATED_FIRST: Final = frozenset(range(10))
_PENDING: Final = object()


class _Frame:
    """A container being read: its JSON node, what it becomes, where its children are."""

    __slots__ = (
        "children",
        "id",
        "keys",
        "kind",
        "node",
        "obj",
        "pending",
        "pos",
        "rebuilt",
        "where",
    )

    def __init__(self, node: Any, kind: int, obj: Any, children: Any, where: str) -> None:
        self.node = node
        self.kind = kind
        # The object (created first), or the list of children read so far (built after).
        self.obj: Any = obj if kind in _CREATED_FIRST else []
        self.children = children
        # Where the children sit in the node, as a path suffix such as '["$tuple"]'.
        self.where = where
        # The children's member names, for objects.
        self.keys: list[str] | None = None
        self.id: int | None = None
        self.pos = 0
        self.pending: Any = None
        # Opened again by a $ref inside a cycle through this node (see _Reader._ref).
        self.rebuilt = False

    def step(self) -> str:
        """The path, from this frame's node, to the child being read."""
        i = self.pos - 1
        if self.kind == _PAIRS or self.kind == _NS_PAIRS:
            return f"{self.where}[{i // 2}][{i % 2}]"
        if self.keys is not None:
            return f"{self.where}[{json.dumps(self.keys[i])}]"
        if self.kind == _STATE:
            return self.where
        return f"{self.where}[{i}]"


def _tag_of(node: dict[str, Any]) -> str | None:
    tag = None
    for key in node:
        if key[:1] == "$" and key[:2] != "$$" and key != "$id":
            _want(tag is None, f"a JSON object holds two tags, {tag} and {key}")
            tag = key
    _want(tag is not None or "$id" not in node, '"$id" belongs in a tagged form, as {"$dict": ...}')
    return tag


def _key(name: str, *, plain: bool) -> str:
    """The dict key a member name stands for ("$$x" for "$x")."""
    _checked_text(name)
    if name[:2] == "$$":
        return name[1:]
    _want(plain or name[:1] != "$", f'the key {name!r} must be written "${name}"')
    return name


class _Reader:
    """One conversion of a parsed JSON document to a value."""

    def __init__(self, max_depth: int) -> None:
        self._max_depth = max_depth
        self._stack: list[_Frame] = []
        # Objects by $id, once they may be referred to; the node holding each $id.
        self._by_id: dict[int, Any] = {}
        self._id_nodes: dict[int, Any] = {}
        # Containers and mutable values made so far, by the identity of their JSON node.
        self._done: dict[int, Any] = {}
        self._root: Any = None
        # Every node with an $id in the document, made on first need (see _ref).
        self._all_ids: dict[int, Any] | None = None

    def read(self, root: Any) -> Any:
        self._root = root
        try:
            result = self._enter(root)
            while self._stack:
                frame = self._stack[-1]
                if frame.pos < len(frame.children):
                    frame.pos += 1
                    value = self._enter(frame.children[frame.pos - 1])
                    if value is not _PENDING:
                        self._accept(frame, value)
                    continue
                self._stack.pop()
                value = self._finish(frame)
                if self._stack:
                    self._accept(self._stack[-1], value)
                else:
                    result = value
            return result
        except _Problem as exc:
            where = "root" + "".join(frame.step() for frame in self._stack)
            raise JsonMappingError(str(exc), where) from None

    def _enter(self, node: Any) -> Any:
        """The value of ``node``, or _PENDING once a frame for it is open."""
        cls = type(node)
        if cls is str:
            return _checked_text(node)
        if cls is int or cls is float or cls is bool or node is None:
            return node
        if cls is list:
            return self._container(node, _LIST, [], node, "", None)
        tag = _tag_of(node)
        if tag is None:
            value = self._container(node, _MAP, {}, list(node.values()), "", None)
            if value is _PENDING:
                self._stack[-1].keys = [_key(k, plain=True) for k in node]
            return value
        form = _FORMS.get(tag)
        _want(form is not None, f'unknown tag {tag!r} (keys starting with "$" are written "$$")')
        assert form is not None
        method, params, takes_id = form
        extra = sorted(set(node) - params - {tag, "$id"})
        _want(not extra, f"{tag} has no member {extra[0]!r}" if extra else "")
        ident = None
        if "$id" in node:
            _want(takes_id, f"{tag} takes no $id: the mapping keeps no identity for it")
            ident = node["$id"]
            _want(type(ident) is int and ident >= 0, f"$id is a non-negative integer: {ident!r}")
            _want(self._id_nodes.setdefault(ident, node) is node, f"$id {ident} is given twice")
        return method(self, node, tag, ident)

    def _open(self, node: Any, kind: int, obj: Any, children: Any, where: str) -> Any:
        """Opens a frame for a container node (returning it), or returns the value the node
        already stands for."""
        known = self._done.get(id(node), _PENDING)
        if known is not _PENDING:
            return known
        _want(len(self._stack) < self._max_depth, f"nesting deeper than {self._max_depth}")
        frame = _Frame(node, kind, obj, children, where)
        if kind in _CREATED_FIRST:
            self._done[id(node)] = obj
        self._stack.append(frame)
        return frame

    def _container(
        self, node: Any, kind: int, obj: Any, children: Any, where: str, ident: int | None
    ) -> Any:
        frame = self._open(node, kind, obj, children, where)
        if not isinstance(frame, _Frame):
            return frame
        frame.id = ident
        if ident is not None and kind in _CREATED_FIRST:
            self._by_id[ident] = obj
        return _PENDING

    def _accept(self, frame: _Frame, value: Any) -> None:
        kind = frame.kind
        if kind == _LIST or kind == _DEQUE:
            frame.obj.append(value)
        elif kind == _MAP or kind == _FIELDS or kind == _NS_FIELDS:
            target = _target(frame)
            assert frame.keys is not None
            target[frame.keys[frame.pos - 1]] = value
        elif kind == _PAIRS or kind == _NS_PAIRS:
            target = _target(frame)
            if frame.pos % 2:
                _want(
                    kind == _PAIRS or type(value) is str,
                    f"a $namespace attribute name is a str, not {_short(value)}",
                )
                _check_key(value, target, "dict key" if kind == _PAIRS else "attribute name")
                frame.pending = value
            else:
                target[frame.pending] = value
        elif kind == _VALUES:
            _check_value_rule(frame.obj.kind, frame.pos - 1, value)
            frame.obj.state.append(value)
        elif kind == _EXCEPTION:
            _check_value_rule("EXCEPTION", frame.pos - 1, value)
            frame.obj.append(value)
            if frame.pos == 1:
                self._exception_made(frame)
        elif kind == _SET:
            _check_key(value, frame.obj, "set element")
            frame.obj.add(value)
        elif kind == _STATE:
            frame.obj.state = value
        else:
            if kind == _FROZENSET:
                _check_key(value, (), "frozenset element")
            frame.obj.append(value)

    def _finish(self, frame: _Frame) -> Any:
        if frame.kind == _VALUES:
            frame.obj.state = tuple(frame.obj.state)
        if frame.kind in _CREATED_FIRST:
            return frame.obj
        if frame.kind == _EXCEPTION:
            made = self._done[id(frame.node)]
            if frame.pending is made:  # not made by a reading inside a cycle (see below)
                try:
                    plan = (_classes.EXCEPTION, type(made))
                    _classes.parts_finish(_classes.EXCEPTION, made, plan, frame.obj)
                except Exception as exc:  # the class's own error, as a payload decoder's
                    raise _Problem(f"{type(made).__qualname__}: {exc}") from None
            return made
        items = frame.obj
        value: Any
        if frame.kind == _TUPLE:
            value = tuple(items)
        elif frame.kind == _SLICE:
            value = slice(*items)
        else:
            value = frozenset(items)
            _want(len(value) == len(items), "a $frozenset lists an element twice")
        # A copy built inside a cycle through this node may have finished first: it is the
        # value, and this occurrence yields to it (as a SUPERSEDE does on the wire).
        value = self._done.setdefault(id(frame.node), value)
        if frame.id is not None:
            self._by_id.setdefault(frame.id, value)
        return value

    def _exception_made(self, frame: _Frame) -> None:
        """Makes a builtin exception from its complete arguments, as a payload decoder makes
        an EXCEPTION object from its first value; its later values may then refer to it."""
        known = self._done.get(id(frame.node), _PENDING)
        if known is not _PENDING:
            # A $ref in the arguments led through a created-first container back to this
            # node, whose reading there made the exception and read all its values: that
            # one is the value, and this reading stops here (as a SUPERSEDE).
            frame.pos = len(frame.children)
            return
        cls = frame.pending
        try:
            made = _classes.parts_from_first(_classes.EXCEPTION, cls, (0, cls), frame.obj[0])
        except Exception as exc:  # the class's own error, as a payload decoder's
            raise _Problem(f"{cls.__qualname__}: {exc}") from None
        frame.pending = made
        self._done[id(frame.node)] = made
        if frame.id is not None:
            self._by_id[frame.id] = made

    # -- the tagged forms: (node, tag, $id) -> the value, or _PENDING

    def _ref(self, node: Any, tag: str, ident: int | None) -> Any:
        target = node[tag]
        _want(type(target) is int, f"$ref is an integer, not {target!r}")
        if target in self._by_id:
            return self._by_id[target]
        target_node = self._id_nodes.get(target)
        if target_node is None and any(frame.rebuilt for frame in self._stack):
            # A value rebuilt inside a cycle reads its children ahead of where the document
            # first gives them, so it may meet a $ref whose $id comes later in the document
            # (but earlier in the payload's own order, inside the cycle's first pass).
            target_node = self._ids_in_document().get(target)
        _want(target_node is not None, f"$ref {target} names no earlier $id")
        # A tuple, frozenset or slice still being built: build it again here, inside the
        # cycle, through the container that must lie between.
        for frame in reversed(self._stack):
            _want(
                frame.node is not target_node,
                f"$ref {target} closes a cycle through tuples, frozensets or slices alone",
            )
            if frame.kind in _CREATED_FIRST:
                break
        value = self._enter(target_node)
        if value is _PENDING and self._stack[-1].node is target_node:
            self._stack[-1].rebuilt = True
        return value

    def _ids_in_document(self) -> dict[int, Any]:
        """Every JSON object with an integer $id in the document, by $id (first wins)."""
        if self._all_ids is None:
            found: dict[int, Any] = {}
            todo = [self._root]
            while todo:
                node = todo.pop()
                if type(node) is dict:
                    ident = node.get("$id")
                    if type(ident) is int:
                        found.setdefault(ident, node)
                    todo.extend(reversed(list(node.values())))
                elif type(node) is list:
                    todo.extend(reversed(node))
            self._all_ids = found
        return self._all_ids

    def _sequence(self, node: Any, tag: str, ident: int | None) -> Any:
        body = node[tag]
        _want(type(body) is list, f"{tag} holds a JSON array")
        forms: dict[str, tuple[int, Any]] = {
            "$list": (_LIST, []),
            "$tuple": (_TUPLE, None),
            "$set": (_SET, set()),
            "$frozenset": (_FROZENSET, None),
            "$slice": (_SLICE, None),
        }
        kind, obj = forms[tag]
        _want(tag != "$slice" or len(body) == 3, "$slice holds [start, stop, step]")
        return self._container(node, kind, obj, body, f"[{json.dumps(tag)}]", ident)

    def _deque(self, node: Any, tag: str, ident: int | None) -> Any:
        body, maxlen = node[tag], node.get("maxlen")
        _want(type(body) is list, "$deque holds a JSON array")
        _want(
            maxlen is None or (type(maxlen) is int and 0 <= maxlen < 2**63),
            f"deque maxlen is an integer from 0 to 2^63-1, not {maxlen!r}",
        )
        obj: collections.deque[Any] = collections.deque(maxlen=maxlen)
        return self._container(node, _DEQUE, obj, body, '["$deque"]', ident)

    def _mapping(self, node: Any, tag: str, ident: int | None) -> Any:
        body = node[tag]
        obj: dict[Any, Any]
        if tag == "$defaultdict":
            name = node.get("factory")
            factory = FACTORIES.get(name) if type(name) is str else None
            _want(name is None or factory is not None, f"{name!r} is no defaultdict factory")
            obj = collections.defaultdict(factory)
        else:
            obj = {"$dict": dict, "$ordereddict": collections.OrderedDict}.get(
                tag, collections.Counter
            )()
        where = f"[{json.dumps(tag)}]"
        if type(body) is dict:
            result = self._container(node, _MAP, obj, list(body.values()), where, ident)
            if result is _PENDING:
                self._stack[-1].keys = [_key(k, plain=False) for k in body]
            return result
        _want(type(body) is list, f"{tag} holds an object or a list of [key, value] pairs")
        flat: list[Any] = []
        for pair in body:
            _want(type(pair) is list and len(pair) == 2, f"{tag} pairs are [key, value]")
            flat.extend(pair)
        return self._container(node, _PAIRS, obj, flat, where, ident)

    def _object(self, node: Any, tag: str, ident: int | None) -> Any:
        name, kind = node[tag], node.get("kind")
        _want(type(name) is str and name.count(":") == 1, '$object is "module:qualname"')
        _want(type(kind) is str and kind in OBJECT_KINDS, f"kind is one of {sorted(OBJECT_KINDS)}")
        module, qualname = name.split(":")
        if kind == "GLOBAL":
            _want("state" not in node, "a GLOBAL $object has no state")
            return self._global(node, name, ident)
        _want("state" in node, "$object needs its state")
        state = node["state"]
        if kind in MULTI_KINDS:
            count = MULTI_KINDS[kind]
            _want(
                type(state) is list and len(state) == count,
                f"the state of a {kind} object is an array of its {count} values",
            )
            cls = self._builtin(name, kind)
            if cls is not None:
                result = self._container(node, _EXCEPTION, None, state, '["state"]', ident)
                if result is _PENDING:
                    self._stack[-1].pending = cls
                return result
            obj = Placeholder(module, qualname, kind, [])
            return self._container(node, _VALUES, obj, state, '["state"]', ident)
        if kind in FIELD_KINDS:
            _want(type(state) is dict, f"the state of a {kind} object is an object of fields")
            obj = Placeholder(module, qualname, kind, {})
            result = self._container(node, _FIELDS, obj, list(state.values()), '["state"]', ident)
            if result is _PENDING:
                self._stack[-1].keys = [_key(k, plain=False) for k in state]
            return result
        obj = Placeholder(module, qualname, kind, None)
        return self._container(node, _STATE, obj, [state], '["state"]', ident)

    @staticmethod
    def _builtin(name: str, kind: str) -> Any:
        """The class of the fixed tables named, for EXCEPTION and GLOBAL, or None: nothing
        else is looked up (spec/format.md 5.17.4)."""
        if kind not in ("EXCEPTION", "GLOBAL"):
            return None
        try:
            return _classes.builtin_named(name, getattr(_classes, kind))
        except _classes.Refusal as exc:
            raise _Problem(str(exc)) from None

    def _global(self, node: Any, name: str, ident: int | None) -> Any:
        value = self._done.get(id(node), _PENDING)
        if value is _PENDING:
            value = self._builtin(name, "GLOBAL")
            if value is None:
                module, qualname = name.split(":")
                value = Placeholder(module, qualname, "GLOBAL", None)
            self._done[id(node)] = value
            if ident is not None:
                self._by_id[ident] = value
        return value

    def _namespace(self, node: Any, tag: str, ident: int | None) -> Any:
        body = node[tag]
        obj = types.SimpleNamespace()
        if type(body) is dict:
            result = self._container(
                node, _NS_FIELDS, obj, list(body.values()), '["$namespace"]', ident
            )
            if result is _PENDING:
                self._stack[-1].keys = [_key(k, plain=False) for k in body]
            return result
        _want(type(body) is list, "$namespace holds an object or a list of [name, value] pairs")
        flat: list[Any] = []
        for pair in body:
            _want(type(pair) is list and len(pair) == 2, "$namespace pairs are [name, value]")
            flat.extend(pair)
        return self._container(node, _NS_PAIRS, obj, flat, '["$namespace"]', ident)

    def _leaf(self, node: Any, tag: str, ident: int | None) -> Any:
        if ident is None:
            return _atom(node, tag)
        # A shared value: made once, however often a cycle passes its node.
        value = self._done.get(id(node), _PENDING)
        if value is _PENDING:
            value = self._done[id(node)] = self._by_id[ident] = _atom(node, tag)
        return value


def _checked_text(text: str) -> str:
    _want(
        _SURROGATE.search(text) is None,
        'a JSON string holds a lone surrogate; write such text as {"$str": [...]}',
    )
    return text


def _target(frame: _Frame) -> Any:
    """The mapping a frame's children go into."""
    if frame.kind == _FIELDS:
        return frame.obj.state
    if frame.kind == _NS_FIELDS or frame.kind == _NS_PAIRS:
        return vars(frame.obj)
    return frame.obj


def _check_key(value: Any, container: Any, what: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise _Problem(f"{what} {_short(value)} is not hashable") from None
    _want(value not in container, f"{what} {_short(value)} equals an earlier one")


def _short(value: Any) -> str:
    text = f"<{type(value).__name__}>" if isinstance(value, Placeholder) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(node: Any, what: str) -> str:
    """A str written as a JSON string or as a ``$str`` form."""
    if type(node) is str:
        return _checked_text(node)
    _want(type(node) is dict and set(node) == {"$str"}, f"{what} must be a string")
    return _str_parts(node["$str"])


def _str_parts(parts: Any) -> str:
    _want(type(parts) is list, "$str holds a list of strings and code points")
    out: list[str] = []
    for part in parts:
        if type(part) is str:
            out.append(_checked_text(part))
        else:
            _want(type(part) is int and 0 <= part <= 0x10FFFF, f"{part!r} is no code point")
            out.append(chr(part))
    return "".join(out)


def _an_int(node: Any, what: str) -> int:
    if type(node) is int:
        return node
    _want(type(node) is dict and set(node) == {"$int"}, f"{what} must be an integer")
    _want(type(node["$int"]) is str, "$int holds a string")
    return _int_of_text(node["$int"])


def _a_float(node: Any, what: str) -> float:
    if type(node) is float:
        return node
    _want(
        type(node) is dict and set(node) == {"$float"} and type(node["$float"]) is str,
        f"{what} must be a float (a JSON number with a fraction or an exponent)",
    )
    return _float_of_text(node["$float"])


def _b64_of(node: Any, what: str) -> bytes:
    _want(type(node) is str, f"{what} is base64 text")
    try:
        data = base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError):
        raise _Problem(f"{what} is not base64") from None
    _want(base64.b64encode(data).decode("ascii") == node, f"{what} is not canonical base64")
    return data


def _tz_of(node: Any) -> datetime.tzinfo:
    _want(type(node) is dict and len(node) == 1, "tz is a $timezone or $zoneinfo form")
    if "$zoneinfo" in node:
        key = node["$zoneinfo"]
        # The key rule of the TZINFO layout, which keeps paths out of the database lookup.
        _want(
            type(key) is str and len(key) <= 255 and _ZONE_KEY.fullmatch(key) is not None,
            f"{key!r} is not a time zone key (letters, digits, _+- and / between segments)",
        )
        try:
            return zoneinfo.ZoneInfo(key)
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            raise _Problem(f"no time zone {key!r} in this host's database") from None
    _want("$timezone" in node, "tz is a $timezone or $zoneinfo form")
    body = node["$timezone"]
    if body == "utc":
        return datetime.timezone.utc
    _want(
        type(body) is dict and "offset" in body and set(body) <= {"offset", "name"},
        '$timezone is "utc" or {"offset": ..., "name": ...}',
    )
    offset = _offset_of_text(body["offset"])
    if "name" in body:
        return datetime.timezone(offset, _text(body["name"], "a time zone name"))
    return datetime.timezone(offset)


def _atom(node: Any, tag: str) -> Any:
    """The value of a tagged form without children."""
    body = node[tag]
    try:
        return _ATOMS[tag](node, body)
    except (ValueError, TypeError, OverflowError, decimal.InvalidOperation) as exc:
        raise _Problem(f"{tag}: {exc}") from None


def _clock(node: Any, body: Any, with_date: bool) -> Any:
    pattern = f"{_DATE}T{_TIME}" if with_date else _TIME
    _want(type(body) is str and re.fullmatch(pattern, body) is not None, f"malformed {body!r}")
    fold = node.get("fold", 0)
    _want(type(fold) is int and fold in (0, 1), "fold is 0 or 1")
    tz = _tz_of(node["tz"]) if node.get("tz") is not None else None
    cls = datetime.datetime if with_date else datetime.time
    return cls.fromisoformat(body).replace(tzinfo=tz, fold=fold)


def _timedelta(body: Any) -> datetime.timedelta:
    names = ("days", "seconds", "microseconds")
    _want(type(body) is dict and set(body) == set(names), f"$timedelta holds {names}")
    days, seconds, micros = (body[k] for k in names)
    _want(
        all(type(x) is int for x in (days, seconds, micros))
        and -999_999_999 <= days <= 999_999_999
        and 0 <= seconds < 86_400
        and 0 <= micros < 1_000_000,
        "$timedelta fields are out of range",
    )
    return datetime.timedelta(days=days, seconds=seconds, microseconds=micros)


def _decimal(body: Any) -> decimal.Decimal:
    _want(type(body) is str and _DECIMAL.fullmatch(body) is not None, "malformed $decimal")
    return decimal.Decimal(body)


def _uuid(node: Any, body: Any) -> uuid.UUID:
    _want(type(body) is str and _UUID.fullmatch(body) is not None, "malformed $uuid")
    safety = node.get("is_safe")
    _want(safety in (None, "safe", "unsafe"), 'is_safe is "safe" or "unsafe"')
    safe = {"safe": uuid.SafeUUID.safe, "unsafe": uuid.SafeUUID.unsafe}.get(
        safety, uuid.SafeUUID.unknown
    )
    return uuid.UUID(body, is_safe=safe)


def _fraction(body: Any) -> fractions.Fraction:
    _want(type(body) is list and len(body) == 2, "$fraction holds [numerator, denominator]")
    numerator, denominator = _an_int(body[0], "the numerator"), _an_int(body[1], "the denominator")
    _want(denominator > 0, "the denominator must be positive")
    # Reducing costs a gcd whose time grows with the square of the operands' length.
    _want(
        max(abs(numerator).bit_length(), denominator.bit_length()) <= 2**16,
        "a $fraction operand is longer than 2^16 bits",
    )
    return fractions.Fraction(numerator, denominator)


def _range(body: Any) -> range:
    _want(type(body) is list and len(body) == 3, "$range holds [start, stop, step]")
    start, stop, step = (_an_int(x, "a range bound") for x in body)
    _want(step != 0, "a range step is not 0")
    return range(start, stop, step)


def _array(node: Any, body: Any) -> array.array[Any]:
    _want(type(body) is str and body in ARRAY_ITEM_SIZES, f"{body!r} is no array typecode")
    data = _b64_of(node.get("data"), "array data")
    value = array.array(body)
    _want(value.itemsize == ARRAY_ITEM_SIZES[body], f"typecode {body!r} differs on this host")
    _want(len(data) % value.itemsize == 0, "array data is not a whole number of items")
    value.frombytes(data)
    if sys.byteorder != "little":
        value.byteswap()
    return value


def _path(node: Any, body: Any) -> pathlib.PurePath:
    name = node.get("class")
    cls = PATH_CLASSES.get(name) if type(name) is str else None
    _want(cls is not None, f"a $path class is one of {', '.join(PATH_CLASSES)}")
    assert cls is not None
    try:
        return cls(_text(body, "a $path"))
    except NotImplementedError:
        raise _Problem(f"{cls.__name__} cannot be made on this platform") from None


def _ip(tag: str, body: Any) -> Any:
    _want(type(body) is str, f"{tag} holds text")
    return IP_PARSERS[tag](body)


def _ndarray(node: Any, body: Any) -> Any:
    numpy = _numpy()
    dtype = _dtype_of(body)
    shape = node.get("shape")
    _want(
        type(shape) is list and len(shape) <= 64 and all(type(n) is int and n >= 0 for n in shape),
        "an $ndarray shape is a list of at most 64 sizes",
    )
    data = _b64_of(node.get("data"), "ndarray data")
    count = 1
    for n in shape:
        count *= n
    _want(len(data) == count * dtype.itemsize, "ndarray data does not fit its shape and dtype")
    if not data:
        return numpy.zeros(shape, dtype)
    return numpy.frombuffer(data, dtype).reshape(shape).copy()


def _numpy_scalar(node: Any, body: Any) -> Any:
    numpy = _numpy()
    dtype = _dtype_of(body)
    data = _b64_of(node.get("data"), "numpy scalar data")
    _want(len(data) == dtype.itemsize, "numpy scalar data does not fit its dtype")
    if not data:
        return numpy.zeros((), dtype)[()]
    return numpy.frombuffer(data, dtype, count=1)[0]


def _bytes_form(tag: str, body: Any) -> bytes | bytearray:
    data = _b64_of(body, tag)
    return data if tag == "$bytes" else bytearray(data)


def _date(body: Any) -> datetime.date:
    _want(type(body) is str and re.fullmatch(_DATE, body) is not None, "$date is YYYY-MM-DD")
    return datetime.date.fromisoformat(body)


def _complex(body: Any) -> complex:
    _want(type(body) is list and len(body) == 2, "$complex holds [real, imag]")
    return complex(_a_float(body[0], "the real part"), _a_float(body[1], "the imaginary part"))


def _singleton(body: Any) -> Any:
    _want(type(body) is str and body in SINGLETONS, '$singleton is "Ellipsis" or "NotImplemented"')
    return SINGLETONS[body]


def _string_body(tag: str, body: Any, parse: Callable[[str], Any]) -> Any:
    _want(type(body) is str, f"{tag} holds a string")
    return parse(body)


# The forms without children: tag -> (node, body) -> value.
_ATOMS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "$int": lambda n, b: _string_body("$int", b, _int_of_text),
    "$float": lambda n, b: _string_body("$float", b, _float_of_text),
    "$complex": lambda n, b: _complex(b),
    "$str": lambda n, b: _str_parts(b),
    "$bytes": lambda n, b: _bytes_form("$bytes", b),
    "$bytearray": lambda n, b: _bytes_form("$bytearray", b),
    "$date": lambda n, b: _date(b),
    "$time": lambda n, b: _clock(n, b, with_date=False),
    "$datetime": lambda n, b: _clock(n, b, with_date=True),
    "$timedelta": lambda n, b: _timedelta(b),
    "$timezone": lambda n, b: _tz_of({"$timezone": b}),
    "$zoneinfo": lambda n, b: _tz_of({"$zoneinfo": b}),
    "$decimal": lambda n, b: _decimal(b),
    "$uuid": _uuid,
    "$fraction": lambda n, b: _fraction(b),
    "$range": lambda n, b: _range(b),
    "$array": _array,
    "$path": _path,
    "$ip_address": lambda n, b: _ip("$ip_address", b),
    "$ip_network": lambda n, b: _ip("$ip_network", b),
    "$ip_interface": lambda n, b: _ip("$ip_interface", b),
    "$ndarray": _ndarray,
    "$numpy": _numpy_scalar,
    "$singleton": lambda n, b: _singleton(b),
}
_SEQUENCE_TAGS: Final = ("$list", "$tuple", "$set", "$frozenset", "$slice")
# The forms of numbers and text, which keep no identity.
_NO_IDENTITY_TAGS: Final = frozenset({"$int", "$float", "$complex", "$str", "$singleton"})
# A form's reader: (reader, node, tag, $id or None) -> the value, or _PENDING.
_FormReader = Callable[[_Reader, Any, str, "int | None"], Any]
# tag -> (reader, its members besides the tag and "$id", whether it takes an "$id")
_FORMS: Final[dict[str, tuple[_FormReader, frozenset[str], bool]]] = {
    "$ref": (_Reader._ref, frozenset(), False),
    **{tag: (_Reader._sequence, frozenset(), True) for tag in _SEQUENCE_TAGS},
    "$deque": (_Reader._deque, frozenset({"maxlen"}), True),
    "$dict": (_Reader._mapping, frozenset(), True),
    "$ordereddict": (_Reader._mapping, frozenset(), True),
    "$counter": (_Reader._mapping, frozenset(), True),
    "$defaultdict": (_Reader._mapping, frozenset({"factory"}), True),
    "$object": (_Reader._object, frozenset({"kind", "state"}), True),
    "$namespace": (_Reader._namespace, frozenset(), True),
    **{
        tag: (_Reader._leaf, frozenset(params), tag not in _NO_IDENTITY_TAGS)
        for tag, params in {
            **dict.fromkeys(_ATOMS, ()),
            "$time": ("tz", "fold"),
            "$datetime": ("tz", "fold"),
            "$uuid": ("is_safe",),
            "$array": ("data",),
            "$path": ("class",),
            "$ndarray": ("shape", "data"),
            "$numpy": ("data",),
        }.items()
    },
}


def from_json(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """The value a JSON document of the mapping describes (JsonMappingError if it is not
    one), with its containers nested at most ``max_depth`` deep, as ``dumps`` allows."""
    return _Reader(max_depth).read(_parse(text))
