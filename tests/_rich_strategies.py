"""Rich types (EXT and OBJECT): hypothesis strategies, an exact comparison, and wire helpers.

- Strategies for every known EXT type of the design (datetime family, Decimal, UUID, Fraction,
  collections, range, slice, array, paths, ipaddress, numpy when importable) and for instances
  of the classes in ``_rich_classes``, plus nested mixtures of all of them.
- ``rich_diff(expected, actual)``: None when ``actual`` is an exact copy of ``expected``. Unlike
  ``amber._compare.graph_diff`` it knows the rich types: fixed-offset timezone names (``==``
  ignores them), ZoneInfo and enum identity, deque maxlen, defaultdict factories, NaN inside
  deques and slices, numpy dtype/byte order/bits, Windows paths (``==`` ignores case).
- Byte builders for OBJECT and EXT payloads, following the design's wire layout.
"""

from __future__ import annotations

import array
import datetime as dt
import enum
import ipaddress
import math
import os
import pathlib
import struct
import uuid
import warnings
from collections import Counter, OrderedDict, defaultdict, deque
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import _rich_classes as rc
from _common import HEADER, varint
from _strategies import atoms, floats, hashable_atoms, texts
from amber._compare import _instance_state
from hypothesis import assume
from hypothesis import strategies as st

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None  # type: ignore[assignment]

HAVE_NUMPY = np is not None

# --------------------------------------------------------------------------- wire helpers

OBJECT, EXT = 0x77, 0x76
ATTRS, STATE, TUPLE_FIELDS, ENUM, CUSTOM = 0, 1, 2, 3, 4
KIND_NAMES = {ATTRS: "ATTRS", STATE: "STATE", TUPLE_FIELDS: "TUPLE_FIELDS", ENUM: "ENUM"}
KIND_NAMES[CUSTOM] = "CUSTOM"
MUTABLE_SUBCLASS, VALUE_SUBCLASS, GLOBAL, REDUCE, NEWOBJ, EXCEPTION = range(5, 11)
KIND_NAMES |= {
    MUTABLE_SUBCLASS: "MUTABLE_SUBCLASS",
    VALUE_SUBCLASS: "VALUE_SUBCLASS",
    GLOBAL: "GLOBAL",
    REDUCE: "REDUCE",
    NEWOBJ: "NEWOBJ",
    EXCEPTION: "EXCEPTION",
}

EXT_CODES = {
    "DATE": 0x01,
    "TIME": 0x02,
    "DATETIME": 0x03,
    "TIMEDELTA": 0x04,
    "TZINFO": 0x05,
    "DECIMAL": 0x06,
    "UUID": 0x07,
    "FRACTION": 0x08,
    "DEQUE": 0x09,
    "ORDERED_DICT": 0x0A,
    "COUNTER": 0x0B,
    "DEFAULTDICT": 0x0C,
    "RANGE": 0x0D,
    "SLICE": 0x0E,
    "ARRAY": 0x0F,
    "PATH": 0x10,
    "IP_ADDRESS": 0x11,
    "IP_NETWORK": 0x12,
    "IP_INTERFACE": 0x13,
    "NDARRAY": 0x14,
    "NUMPY_SCALAR": 0x15,
    "NAMESPACE": 0x17,
    "SINGLETON": 0x18,
}

NEW_ERROR_KINDS = frozenset(
    {
        "unknown_ext",
        "invalid_ext",
        "bad_shape",
        "bad_name",
        "class_not_allowed",
        "missing_field",
        "unknown_field",
    }
)


def wire_name(name: str | bytes) -> bytes:
    """A `name`: varint byte length then the bytes (str is UTF-8 encoded, bytes are as given)."""
    raw = name.encode("utf-8") if isinstance(name, str) else name
    return varint(len(raw)) + raw


def value_bytes(value: Any) -> bytes:
    """The body bytes amber writes for a value holding no REF (so it can be spliced anywhere)."""
    import amber

    body = amber.dumps(value, refs=False)[3:]
    return body


def shape_def(
    module: str | bytes, qualname: str | bytes, kind: int, fields: list[str | bytes] | None = None
) -> bytes:
    out = wire_name(module) + wire_name(qualname) + bytes([kind])
    if kind in (ATTRS, TUPLE_FIELDS):
        names = fields or []
        out += varint(len(names)) + b"".join(wire_name(f) for f in names)
    return out


def object_body(
    module: str | bytes,
    qualname: str | bytes,
    kind: int = ATTRS,
    fields: list[str | bytes] | None = None,
    values: list[Any] | None = None,
) -> bytes:
    """An OBJECT defining its shape inline (s = 0), then its values (each as `value_bytes`)."""
    vals = b"".join(value_bytes(v) for v in (values or []))
    return bytes([OBJECT, 0]) + shape_def(module, qualname, kind, fields) + vals


def object_payload(*args: Any, **kwargs: Any) -> bytes:
    return HEADER + object_body(*args, **kwargs)


def rows_payload(
    module: str | bytes,
    qualname: str | bytes,
    fields: list[str | bytes],
    rows: list[list[Any]],
    kind: int = ATTRS,
) -> bytes:
    """An OBJECT_ROWS (spec 5.17.9) defining its shape, without float columns, then each
    row's values (each as `value_bytes`)."""
    body = (
        bytes([0x7D]) + varint(len(rows)) + bytes([0]) + shape_def(module, qualname, kind, fields)
    )
    body += bytes([0]) + b"".join(value_bytes(v) for row in rows for v in row)
    return HEADER + body


def ext_blob(code: int, blob: bytes) -> bytes:
    """An EXT whose body is a blob (varint length + bytes)."""
    return bytes([EXT]) + varint(code) + varint(len(blob)) + blob


def ext_payload(code: int | str, blob: bytes) -> bytes:
    c = EXT_CODES[code] if isinstance(code, str) else code
    return HEADER + ext_blob(c, blob)


def ext_composite_payload(code: int | str, values: list[Any]) -> bytes:
    """An EXT of a composite kind: tag, code, then the values."""
    c = EXT_CODES[code] if isinstance(code, str) else code
    return HEADER + bytes([EXT]) + varint(c) + b"".join(value_bytes(v) for v in values)


# --------------------------------------------------------------------------- exact comparison


def _float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def tz_key(tz: Any) -> Any:
    """Everything that distinguishes two tzinfo objects (identity for ZoneInfo and utc)."""
    if tz is None:
        return None
    if tz is dt.timezone.utc:
        return ("utc",)
    if type(tz) is dt.timezone:
        # __getinitargs__ is (offset,) or (offset, name): whether a name was given explicitly
        return ("fixed", tz.__getinitargs__())
    if type(tz) is ZoneInfo:
        return ("zoneinfo", tz.key, id(tz))
    return ("other", type(tz), repr(tz))


def is_numpy_value(x: Any) -> bool:
    return HAVE_NUMPY and isinstance(x, (np.ndarray, np.generic))


def atom_key(x: Any) -> Any:
    """A hashable key equal only for exactly equal leaf values; None if x is not a leaf."""
    t = type(x)
    if HAVE_NUMPY and isinstance(x, np.generic):
        return (t, x.dtype.str, x.tobytes())
    if t is float:
        return (t, _float_bits(x))
    if t is complex:
        return (t, _float_bits(x.real), _float_bits(x.imag))
    if t in (int, bool, str, bytes, type(None)):
        return (t, x)
    if t in (dt.datetime, dt.time):
        return (t, x.replace(tzinfo=None, fold=0).isoformat(), x.fold, tz_key(x.tzinfo))
    if t is dt.date:
        return (t, x.toordinal())
    if t is dt.timedelta:
        return (t, x.days, x.seconds, x.microseconds)
    if t in (dt.timezone, ZoneInfo):
        return (t, tz_key(x))
    if t is Decimal:
        return (t, x.as_tuple(), str(x))
    if t is uuid.UUID:
        return (t, x.int, x.is_safe)
    if t is Fraction:
        return (t, x.numerator, x.denominator)
    if t is range:
        return (t, x.start, x.stop, x.step)
    if isinstance(x, pathlib.PurePath):
        return (t, str(x), x.parts)
    if t.__module__ == "ipaddress":
        return (t, str(x))
    if isinstance(x, enum.Enum):
        return (t, x.name, id(x))
    return None


def hash_key(x: Any, _path: frozenset[int] = frozenset()) -> Any:
    """A hashable key for a set element: exact, recursive through tuples, frozensets and the
    state of instances, and through the lists, dicts and sets such a state may hold (a
    hashable instance can hold them). A container met again on its own path is a cycle."""
    k = atom_key(x)
    if k is not None:
        return k
    t = type(x)
    if id(x) in _path:
        return (t, "cycle")
    path = _path | {id(x)}
    if isinstance(x, (tuple, list, deque)):
        return (t, tuple(hash_key(i, path) for i in x))
    if isinstance(x, (frozenset, set)):
        return (t, frozenset(hash_key(i, path) for i in x))
    if isinstance(x, dict):
        return (t, tuple((hash_key(k, path), hash_key(v, path)) for k, v in x.items()))
    state = _instance_state(x)
    if state is not None:
        return (t, tuple((name, hash_key(v, path)) for name, v in state.items()))
    return (t, x)


_SHARED_ONLY = (
    dt.date,
    dt.time,
    dt.timedelta,
    dt.tzinfo,
    Decimal,
    uuid.UUID,
    Fraction,
    range,
    slice,
    pathlib.PurePath,
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
)


def _short(x: Any) -> str:
    try:
        text = repr(x)
    except Exception:
        text = f"<{type(x).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


class _RichDiff:
    def __init__(self) -> None:
        self.paired: dict[int, tuple[Any, str]] = {}
        self.claimed: dict[int, str] = {}
        self.keep: list[Any] = []
        self.stack: list[tuple[Any, Any, str]] = []

    def run(self, expected: Any, actual: Any) -> str | None:
        self.stack.append((expected, actual, "root"))
        while self.stack:
            e, a, path = self.stack.pop()
            problem = self.visit(e, a, path)
            if problem is not None:
                return f"{path}: {problem}"
        return None

    def pair(self, e: Any, a: Any, path: str, bijective: bool) -> str | None:
        """None: new pair, compare it; "": seen before and consistent; else a problem."""
        first = self.paired.get(id(e))
        if first is not None:
            if first[0] is a:
                return ""
            return f"expected the same object as at {first[1]}, got a distinct one"
        if bijective and id(a) in self.claimed:
            return f"expected a distinct object, got the same object as at {self.claimed[id(a)]}"
        self.paired[id(e)] = (a, path)
        self.claimed[id(a)] = path
        self.keep += [e, a]
        return None

    def visit(self, e: Any, a: Any, path: str) -> str | None:
        t = type(e)
        if t is not type(a):
            return f"expected {t.__module__}.{t.__qualname__}, got {type(a).__qualname__}"
        if isinstance(e, enum.Enum):
            return None if a is e else f"expected the member {e!r} itself, got {a!r}"
        if HAVE_NUMPY and isinstance(e, np.ndarray):
            return self.visit_ndarray(e, a, path)
        key = atom_key(e)
        if key is not None:
            if key != atom_key(a):
                return f"expected {_short(e)}, got {_short(a)}"
            if isinstance(e, _SHARED_ONLY):
                verdict = self.pair(e, a, path, bijective=False)
                return verdict or None
            return None
        if isinstance(e, (list, dict, set, bytearray, deque, array.array)):
            verdict = self.pair(e, a, path, bijective=True)
        elif isinstance(e, (tuple, frozenset)):
            verdict = self.pair(e, a, path, bijective=True) if len(e) else None
        elif isinstance(e, slice):
            verdict = self.pair(e, a, path, bijective=False)
        elif _instance_state(e) is not None:
            verdict = self.pair(e, a, path, bijective=True)
        else:
            verdict = None
        if verdict is not None:
            return verdict or None
        return self.visit_structure(e, a, path)

    def visit_ndarray(self, e: Any, a: Any, path: str) -> str | None:
        verdict = self.pair(e, a, path, bijective=True)
        if verdict is not None:
            return verdict or None
        if e.dtype.str != a.dtype.str or e.dtype != a.dtype:
            return f"expected dtype {e.dtype.str}, got {a.dtype.str}"
        if e.shape != a.shape:
            return f"expected shape {e.shape}, got {a.shape}"
        if e.tobytes() != a.tobytes():
            return f"array data differs: expected {_short(e)}, got {_short(a)}"
        if not (a.flags.c_contiguous and a.flags.writeable):
            return f"decoded array is not C-contiguous and writeable: {a.flags}"
        return None

    def visit_structure(self, e: Any, a: Any, path: str) -> str | None:
        push: list[tuple[Any, Any, str]] = []
        if type(e).__module__ != "builtins" and isinstance(e, _BUILTIN_BASES):
            # A subclass of a builtin type: its attributes, beside the builtin part below.
            ed, ad = getattr(e, "__dict__", {}), getattr(a, "__dict__", {})
            if set(ed) != set(ad):
                return f"attributes differ: expected {sorted(ed)}, got {sorted(ad)}"
            push += [(v, ad[k], f"{path}.{k}") for k, v in ed.items()]
        if isinstance(e, array.array):
            if (e.typecode, e.tobytes()) != (a.typecode, a.tobytes()):
                return f"expected {_short(e)}, got {_short(a)}"
        elif isinstance(e, bytearray):
            if e != a:
                return f"expected {_short(e)}, got {_short(a)}"
        elif isinstance(e, (list, tuple, deque)):
            if len(e) != len(a):
                return f"expected length {len(e)}, got {len(a)}"
            if isinstance(e, deque) and e.maxlen != a.maxlen:
                return f"expected maxlen {e.maxlen}, got {a.maxlen}"
            push += [(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(e, a, strict=True))]
        elif isinstance(e, dict):
            if len(e) != len(a):
                return f"expected {len(e)} items, got {len(a)}"
            if isinstance(e, defaultdict) and e.default_factory is not a.default_factory:
                return f"expected factory {e.default_factory!r}, got {a.default_factory!r}"
            for i, ((ek, ev), (ak, av)) in enumerate(zip(e.items(), a.items(), strict=True)):
                push.append((ek, ak, f"{path}<key {i}>"))
                push.append((ev, av, f"{path}[{_short(ek)}]"))
        elif isinstance(e, (set, frozenset)):
            if Counter(hash_key(x) for x in e) != Counter(hash_key(y) for y in a):
                return f"set elements differ: expected {_short(e)}, got {_short(a)}"
        elif isinstance(e, slice):
            push += [
                (e.start, a.start, f"{path}.start"),
                (e.stop, a.stop, f"{path}.stop"),
                (e.step, a.step, f"{path}.step"),
            ]
        else:
            es, as_ = _instance_state(e), _instance_state(a)
            if es is None or as_ is None:
                try:
                    return None if e == a else f"expected {_short(e)}, got {_short(a)}"
                except Exception as error:
                    return f"cannot compare: {error!r}"
            if set(es) != set(as_):
                return f"attributes differ: expected {sorted(es)}, got {sorted(as_)}"
            push += [(v, as_[k], f"{path}.{k}") for k, v in es.items()]
        # a state of dict subclasses / tuple subclasses (e.g. OrderedDict attributes)
        if type(e) not in (list, tuple, dict, set, frozenset, deque, bytearray, slice):
            if isinstance(e, (dict, tuple, list)):
                es, as_ = _instance_state(e) or {}, _instance_state(a) or {}
                if set(es) != set(as_):
                    return f"attributes differ: expected {sorted(es)}, got {sorted(as_)}"
                push += [(v, as_[k], f"{path}.{k}") for k, v in es.items()]
        self.stack.extend(reversed(push))
        return None


_BUILTIN_BASES = (list, dict, set, frozenset, tuple, str, bytes, bytearray, int, float, complex)


def rich_diff(expected: Any, actual: Any) -> str | None:
    """None if ``actual`` is an exact copy of ``expected`` (types, values, bits, identity)."""
    return _RichDiff().run(expected, actual)


# --------------------------------------------------------------------------- strategies

ZONE_KEYS = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "America/Argentina/Buenos_Aires",
    "Etc/GMT+5",
    "Etc/GMT-14",
    "EST5EDT",
    "Pacific/Chatham",
]

_DAY_US = 86_400 * 10**6
folds = st.integers(0, 1)
offsets = st.one_of(
    st.integers(-_DAY_US + 1, _DAY_US - 1),
    st.sampled_from([-_DAY_US + 1, _DAY_US - 1, 1, -1, 3600 * 10**6, -(5 * 3600 + 1800) * 10**6]),
).map(lambda us: dt.timedelta(microseconds=us))
tz_names = st.text(st.characters(codec="utf-8"), max_size=12)  # "" is a name of its own
fixed_timezones = st.one_of(
    st.just(dt.timezone.utc),
    offsets.map(dt.timezone),
    st.builds(dt.timezone, offsets, tz_names),
    st.just(dt.timezone(dt.timedelta(0), "UTC")),  # not the utc singleton
)
zone_infos = st.sampled_from(ZONE_KEYS).map(ZoneInfo)
timezones = st.one_of(fixed_timezones, zone_infos)
tzinfos = st.one_of(st.none(), timezones)

dates = st.one_of(st.dates(), st.sampled_from([dt.date.min, dt.date.max, dt.date(2000, 2, 29)]))
times = st.builds(lambda t, tz, f: t.replace(tzinfo=tz, fold=f), st.times(), tzinfos, folds)
_AMBIGUOUS = [
    dt.datetime(2021, 10, 31, 2, 30, tzinfo=ZoneInfo("Europe/Berlin")),
    dt.datetime(2021, 11, 7, 1, 30, tzinfo=ZoneInfo("America/New_York")),
]
datetimes = st.one_of(
    st.builds(lambda d, tz, f: d.replace(tzinfo=tz, fold=f), st.datetimes(), tzinfos, folds),
    st.builds(lambda d, f: d.replace(fold=f), st.sampled_from(_AMBIGUOUS), folds),
    st.sampled_from([dt.datetime.min, dt.datetime.max]).flatmap(
        lambda d: st.builds(lambda tz, f: d.replace(tzinfo=tz, fold=f), tzinfos, folds)
    ),
)
timedeltas = st.one_of(
    st.timedeltas(),
    st.sampled_from(
        [dt.timedelta.min, dt.timedelta.max, dt.timedelta(0), dt.timedelta(microseconds=-1)]
    ),
)


def _decimal(sign: int, digits: list[int], exp: int | str) -> Decimal:
    return Decimal((sign, tuple(digits), exp))


_digits = st.lists(st.integers(0, 9), min_size=1, max_size=40)
_huge_digits = st.integers(10**60, 10**400).map(lambda n: [int(c) for c in str(n)])
_exponents = st.one_of(
    st.integers(-30, 30),
    st.integers(-(10**6), 10**6),
    st.sampled_from([-(10**17), 10**17, -(2**40), 2**40]),
)
decimals = st.one_of(
    st.builds(_decimal, st.integers(0, 1), st.one_of(_digits, _huge_digits), _exponents),
    st.builds(
        _decimal,
        st.integers(0, 1),
        st.lists(st.integers(0, 9), max_size=12),
        st.sampled_from(["n", "N"]),
    ),
    st.sampled_from(
        [
            Decimal("0"),
            Decimal("-0"),
            Decimal("0E-7"),
            Decimal("-0E+7"),
            Decimal("Infinity"),
            Decimal("-Infinity"),
            Decimal("NaN"),
            Decimal("-NaN"),
            Decimal("sNaN"),
            Decimal("-sNaN987"),
            Decimal("1E+999999999999999999"),
            Decimal("1E-999999999999999999"),
        ]
    ),
    st.decimals(),
)
hashable_decimals = decimals.filter(lambda d: not d.is_snan())
uuids = st.builds(
    lambda i, s: uuid.UUID(int=i, is_safe=s),
    st.one_of(st.integers(0, 2**128 - 1), st.sampled_from([0, 2**128 - 1])),
    st.sampled_from(list(uuid.SafeUUID)),
)
fractions = st.one_of(
    st.fractions(),
    st.builds(Fraction, st.integers(-(2**300), 2**300), st.integers(1, 2**300)),
)
_range_ints = st.one_of(st.integers(-50, 50), st.integers(-(2**100), 2**100))
ranges = st.builds(range, _range_ints, _range_ints, _range_ints.filter(bool))

BUILTIN_FACTORIES = [
    None,
    list,
    dict,
    set,
    int,
    float,
    str,
    bytes,
    tuple,
    frozenset,
    bool,
    complex,
    bytearray,
]


def _u_typecode_ok(code: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            array.array(code)
        except (ValueError, DeprecationWarning):
            return False
    return True


INT_TYPECODES = "bBhHiIlLqQ"
FLOAT_TYPECODES = "fd"
TEXT_TYPECODES = "".join(c for c in "uw" if _u_typecode_ok(c))
ARRAY_TYPECODES = INT_TYPECODES + FLOAT_TYPECODES + TEXT_TYPECODES


def make_array(code: str, data: Any) -> array.array[Any]:
    """An array.array of `code` from raw bytes (number typecodes) or a str ('u', 'w')."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        a = array.array(code)
        if isinstance(data, str):
            # CPython 3.13.0's fromunicode('') on a 'w' array raises SystemError (fixed in
            # 3.13.1); an empty str adds nothing, so it is not passed on.
            if data:
                a.fromunicode(data)
        else:
            a.frombytes(data[: len(data) - len(data) % a.itemsize])
    return a


@st.composite
def arrays(draw: Any) -> array.array[Any]:
    code = draw(st.sampled_from(ARRAY_TYPECODES))
    if code in "uw":
        return make_array(code, draw(texts))
    return make_array(code, draw(st.binary(max_size=64)))


_posix_segment = st.one_of(
    st.text(st.characters(exclude_characters="/\x00"), min_size=1, max_size=8),
    st.binary(min_size=1, max_size=6).filter(lambda b: b"/" not in b).map(os.fsdecode),
    st.sampled_from([".", "..", "é", "\U0001f600"]),
)
_posix_text = st.builds(
    lambda lead, segs: lead + "/".join(segs),
    st.sampled_from(["", "/", "//"]),
    st.lists(_posix_segment, max_size=5),
)
_win_segment = st.text(st.sampled_from([*"abcXYZ019._- é€", "\U0001f600"]), min_size=1, max_size=8)
_win_text = st.builds(
    lambda lead, segs: lead + "\\".join(segs),
    st.sampled_from(["", "\\", "C:", "C:\\", "\\\\server\\share\\"]),
    st.lists(_win_segment, max_size=5),
)
CONCRETE_PATH = type(pathlib.Path())
paths = st.one_of(
    _posix_text.map(pathlib.PurePosixPath),
    _win_text.map(pathlib.PureWindowsPath),
    (_posix_text if os.name == "posix" else _win_text).map(CONCRETE_PATH),
)

_scopes = st.text(st.sampled_from("abcdefxyz0123456789_-."), min_size=1, max_size=8)
_v4 = st.integers(0, 2**32 - 1)
_v6 = st.integers(0, 2**128 - 1)
ip_addresses = st.one_of(
    _v4.map(ipaddress.IPv4Address),
    _v6.map(ipaddress.IPv6Address),
    st.builds(lambda a, s: ipaddress.IPv6Address(f"{ipaddress.IPv6Address(a)}%{s}"), _v6, _scopes),
)
ip_networks = st.one_of(
    st.builds(lambda a, p: ipaddress.IPv4Network((a, p), strict=False), _v4, st.integers(0, 32)),
    st.builds(lambda a, p: ipaddress.IPv6Network((a, p), strict=False), _v6, st.integers(0, 128)),
    st.builds(
        lambda a, p, s: ipaddress.IPv6Network(
            f"{ipaddress.IPv6Network((a, p), strict=False).network_address}%{s}/{p}"
        ),
        _v6,
        st.integers(0, 128),
        _scopes,
    ),
)
ip_interfaces = st.one_of(
    st.builds(lambda a, p: ipaddress.IPv4Interface((a, p)), _v4, st.integers(0, 32)),
    st.builds(lambda a, p: ipaddress.IPv6Interface((a, p)), _v6, st.integers(0, 128)),
    st.builds(
        lambda a, p, s: ipaddress.IPv6Interface(f"{ipaddress.IPv6Address(a)}%{s}/{p}"),
        _v6,
        st.integers(0, 128),
        _scopes,
    ),
)
ip_values = st.one_of(ip_addresses, ip_networks, ip_interfaces)

# --------------------------------------------------------------------------- numpy

if HAVE_NUMPY:
    import hypothesis.extra.numpy as hnp

    _any_end = "?"
    numeric_dtypes = st.one_of(
        hnp.boolean_dtypes(),
        hnp.integer_dtypes(endianness=_any_end),
        hnp.unsigned_integer_dtypes(endianness=_any_end),
        hnp.floating_dtypes(endianness=_any_end, sizes=(16, 32, 64)),
        hnp.complex_number_dtypes(endianness=_any_end),
        hnp.datetime64_dtypes(endianness=_any_end),
        hnp.timedelta64_dtypes(endianness=_any_end),
        st.just(np.dtype(np.longdouble)),
    )
    text_dtypes = st.one_of(
        hnp.byte_string_dtypes(min_len=1, max_len=6),
        hnp.unicode_string_dtypes(endianness=_any_end, min_len=1, max_len=6),
    )
    _shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)

    def _relayout(a: Any, how: str) -> Any:
        if how == "fortran":
            return np.asfortranarray(a)
        if how == "transpose":
            return a.T
        if how == "step" and a.ndim:
            return a[::2]
        if how == "reverse" and a.ndim:
            return a[::-1]
        if how == "readonly":
            a = a.copy()
            a.flags.writeable = False
        return a

    @st.composite
    def ndarrays(draw: Any) -> Any:
        kind = draw(st.sampled_from(["numeric", "numeric", "text", "void"]))
        shape = draw(_shapes)
        if kind == "void":
            size = draw(st.integers(1, 5))
            count = math.prod(shape)
            raw = draw(st.binary(min_size=size * count, max_size=size * count))
            a = np.frombuffer(raw, dtype=f"V{size}").reshape(shape).copy()
        else:
            dtype = draw(numeric_dtypes if kind == "numeric" else text_dtypes)
            a = draw(hnp.arrays(dtype, shape))
            if dtype.kind in "fc" and a.size and draw(st.booleans()):
                # arbitrary bit patterns: NaN payloads, signed zeros, subnormals
                raw = draw(st.binary(min_size=a.nbytes, max_size=a.nbytes))
                a = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return _relayout(
            a, draw(st.sampled_from(["c", "fortran", "transpose", "step", "reverse", "readonly"]))
        )

    @st.composite
    def numpy_scalars(draw: Any) -> Any:
        dtype = draw(st.one_of(numeric_dtypes, text_dtypes)).newbyteorder("=")
        value = draw(hnp.from_dtype(dtype))
        scalar = np.asarray(value, dtype=dtype)[()]
        # empty np.bytes_/np.str_ scalars (itemsize 0) are tested on their own in
        # test_rich_types.py; here they would hide every other finding
        assume(not (scalar.dtype.kind in "SU" and scalar.dtype.itemsize == 0))
        return scalar

    numpy_values = st.one_of(ndarrays(), numpy_scalars())
else:
    numpy_values = st.nothing()

# --------------------------------------------------------------------------- classes

ENUM_MEMBERS = [m for cls in rc.ENUM_CLASSES for m in cls] + [
    rc.Perm.R | rc.Perm.W,
    rc.Perm.R | rc.Perm.W | rc.Perm.X,
    rc.Perm(0),
]
enum_members = st.sampled_from(ENUM_MEMBERS)


def _slots_only(a: Any, b: Any, drop_b: bool) -> rc.SlotsOnly:
    obj = rc.SlotsOnly(a, b)
    if drop_b:
        del obj.b
    return obj


def _my_dict(items: dict[Any, Any], tag: Any) -> rc.MyDict:
    obj = rc.MyDict(items)
    obj.tag = tag
    return obj


def class_instances(children: Any) -> Any:
    """Instances of the _rich_classes classes holding values drawn from `children`."""
    small = st.integers(-(2**70), 2**70)
    options = [
        st.builds(rc.Employee, small, texts, children),
        st.builds(lambda label: rc.Node(label), children),
        st.builds(rc.Point, children, children, texts),
        st.builds(rc.Pair, children, children),
        st.builds(rc.Plain, texts, st.lists(children, max_size=3), floats),
        st.builds(rc.Frozen, hashable_atoms, children),
        st.builds(rc.Slotted, children, children),
        st.builds(lambda x, y: rc.KwOnly(first=x, second=y), children, children),
        st.builds(_slots_only, children, children, st.booleans()),
        st.builds(lambda a, e: rc.SlotsAndDict(a, extra=e), children, children),
        st.builds(rc.SlotsChild, children, children),
        st.builds(rc.PrivateSlots, children, children),
        st.builds(rc.WithState, children, children),
        st.builds(rc.WithStateDict, children),
        st.builds(rc.Linked, children, st.none()),
        # Subclasses of builtins (an attribute beside the builtin part), a class with its own
        # __reduce__, and namespaces: the forms that need their parts (spec 5.17.3).
        st.builds(_my_dict, st.dictionaries(keys, children, max_size=3), children),
        st.builds(rc.MyList, st.lists(children, max_size=3)),
        st.builds(rc.MyInt, st.integers(-(2**70), 2**70)),
        st.builds(rc.Boxed, children),
        st.builds(
            lambda attrs: SimpleNamespace(**attrs),
            st.dictionaries(
                st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), children, max_size=3
            ),
        ),
    ]
    if rc.HAVE_ATTRS:
        options.append(st.builds(rc.AttrsPoint, children, children, st.lists(children, max_size=2)))
        options.append(st.builds(rc.AttrsFrozen, hashable_atoms, children))
    return st.one_of(*options)


# --------------------------------------------------------------------------- mixtures

rich_hashables = st.one_of(
    dates,
    times,
    datetimes,
    timedeltas,
    timezones,
    hashable_decimals,
    uuids,
    fractions,
    ranges,
    paths,
    ip_values,
    enum_members,
)
rich_leaves = st.one_of(
    rich_hashables,
    decimals,
    arrays(),
    numpy_values,
)
leaves = st.one_of(rich_leaves, atoms)
keys = st.one_of(rich_hashables, hashable_atoms)


def _containers(children: Any) -> Any:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.frozensets(keys, max_size=4),
        st.sets(keys, max_size=3),
        st.builds(deque, st.lists(children, max_size=4), st.one_of(st.none(), st.integers(0, 5))),
        st.dictionaries(keys, children, max_size=4).map(OrderedDict),
        st.dictionaries(keys, st.integers(-5, 2**70), max_size=4).map(Counter),
        st.builds(
            defaultdict,
            st.sampled_from(BUILTIN_FACTORIES),
            st.dictionaries(keys, children, max_size=3),
        ),
        st.builds(slice, children, children, children),
        class_instances(children),
    )


mixtures = st.recursive(leaves, _containers, max_leaves=12)
