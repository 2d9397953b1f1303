"""Exact, identity-aware comparison of two Python object graphs.

``graph_diff(expected, actual)`` returns None when ``actual`` is an exact copy of
``expected`` and otherwise a short message naming the first difference and where it
is, in amber's path syntax, e.g. ``root["users"][3]: expected tuple, got list``.

Rules:

- Types must be equal at every node: bool is not int, tuple is not list, and a
  subclass differs from its base.
- float and complex compare by bit pattern: -0.0 differs from 0.0, and NaN equals
  NaN only with identical bits. int, str, bytes and bytearray compare by value.
- dict: same length, keys in the same insertion order; the i-th keys are compared
  with these same rules (so 1 and 1.0 keys differ), then the values.
- set/frozenset: same size, every expected element matched to an equal actual
  element (NaN-holding elements are matched by their exact bits), then compared.
- Identity: for lists, dicts, sets, bytearrays, non-empty tuples and frozensets,
  and instances carrying state, expected-object -> actual-object must be a
  bijection: an object met twice in ``expected`` must be one object in ``actual``,
  and distinct objects must stay distinct. The mapping doubles as the visited set,
  so cycles terminate.
- Classes, functions, modules and enum members compare by identity: comparing
  their contents would walk into code, and an enum member is a singleton.
- Subclasses of builtin types (containers, scalars, deque, defaultdict, Decimal,
  date, datetime, time, timedelta) compare their builtin value as the base type
  would, then their instance attributes; those carrying attributes are identities.
- Struct sequences (``time.struct_time``, ``os.stat_result``) compare their tuple
  items and then their named-only fields (``tm_zone``, ``st_mtime_ns``, ...).
- Exceptions compare by their parts, never with ``==`` (which is identity):
  ``args``, the attributes of builtin exception types that live outside
  ``__dict__`` (OSError ``errno``/``strerror``/``filename``/``filename2``,
  ImportError ``name``/``path``, StopIteration ``value``, SystemExit ``code``,
  exception groups' ``exceptions``, ...), ``__cause__``, ``__context__``,
  ``__suppress_context__``, then ``__dict__`` (``__notes__`` included).
  ``__traceback__`` is not compared: no copy keeps it.
- ``functools.partial`` compares ``func``, ``args``, ``keywords`` and ``__dict__``.
- msgspec Structs compare the fields named by ``__struct_fields__`` (and a
  ``__dict__`` if the class has one); pydantic models compare ``__dict__``,
  ``__pydantic_fields_set__``, ``__pydantic_extra__`` and ``__pydantic_private__``.
  Neither library is imported: both are recognized by those attributes.
- Other objects: instances with ``__dict__``/``__slots__`` (``SimpleNamespace``
  among them) compare attribute by attribute; a few value types whose ``==`` is
  too loose (Decimal, datetime, time, array.array, numpy-like arrays) compare an
  exact key; the rest use ``==``.

The walk uses an explicit stack, so graphs nested thousands deep are fine.
"""

from __future__ import annotations

import array
import builtins
import collections
import datetime
import decimal
import enum
import fractions
import functools
import ipaddress
import math
import pathlib
import struct
import sys
import types
import uuid
from collections.abc import Callable
from typing import Any, Final

__all__ = ["graph_diff"]

# A path is a linked list of steps, ``(parent, step)``; it is rendered only when a
# difference is found, so matching nodes cost one small tuple at most.
# A step is an int (list/tuple index) or a (kind, value) pair:
# "k" -> <key i>, "v" -> [repr(key)], "s" -> {i}, "a" -> .name
_Step = int | tuple[str, object]
_Path = tuple[Any, _Step] | None
_Task = tuple[object, object, _Path]

_PLAIN_SCALARS: Final = frozenset({str, int, bool, type(None), bytes})
_KEY_REPR_LIMIT: Final = 40
_VALUE_REPR_LIMIT: Final = 60
_MISSING: Final = object()
# Objects compared by identity only: comparing their state would walk into code.
_IDENTITY_ONLY: Final = (
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    enum.Enum,
)
# Attributes of builtin exception types kept outside ``__dict__`` and ``args``.
_EXCEPTION_FIELDS: Final[list[tuple[type[BaseException], tuple[str, ...]]]] = [
    (OSError, ("errno", "strerror", "filename", "filename2", "winerror")),
    (ImportError, ("msg", "name", "path", "name_from")),
    (StopIteration, ("value",)),
    (SystemExit, ("code",)),
    (SyntaxError, ("msg", "filename", "lineno", "offset", "text", "end_lineno", "end_offset")),
    (UnicodeError, ("encoding", "object", "start", "end", "reason")),
    (AttributeError, ("name", "obj")),
    (NameError, ("name",)),
]
if sys.version_info >= (3, 11):
    _EXCEPTION_FIELDS.append((builtins.BaseExceptionGroup, ("message", "exceptions")))
# The exception links that live outside ``__dict__``; ``__traceback__`` is left out.
_EXCEPTION_LINKS: Final = ("__cause__", "__context__", "__suppress_context__")


def graph_diff(expected: object, actual: object) -> str | None:
    """Return None if ``actual`` is an exact copy of ``expected``, else what differs."""
    return _GraphComparer().compare(expected, actual)


def _render_path(path: _Path) -> str:
    steps: list[str] = []
    while path is not None:
        path, step = path
        steps.append(_render_step(step))
    return "root" + "".join(reversed(steps))


def _render_step(step: _Step) -> str:
    if isinstance(step, int):
        return f"[{step}]"
    kind, value = step
    if kind == "k":
        return f"<key {value}>"
    if kind == "v":
        return f"[{_cut(_key_repr(value), _KEY_REPR_LIMIT)}]"
    if kind == "s":
        return f"{{{value}}}"
    return f".{value}"


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except (
        ValueError,
        RecursionError,
    ):  # ints past the str-conversion limit, deep nests
        if isinstance(value, int):
            return f"<int of {value.bit_length()} bits>"
        return f"<{_type_name(type(value))}>"


def _key_repr(key: object) -> str:
    text = _safe_repr(key)
    # Paths read like root["users"], as in amber's own error messages.
    if type(key) is str and text.startswith("'") and '"' not in key:
        return '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: object) -> str:
    return _cut(_safe_repr(value), _VALUE_REPR_LIMIT)


def _type_name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _float_bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def _same_float(x: float, y: float) -> bool:
    # Equal non-zero binary64 values share one encoding; only zeros and NaNs need bits.
    if x == y and (x or math.copysign(1.0, x) == math.copysign(1.0, y)):
        return True
    return _float_bits(x) == _float_bits(y)


def _trivially_equal(x: object, y: object) -> bool:
    """Fast path for leaves that need no identity tracking and no message."""
    cls = type(x)
    if cls is not type(y):
        return False
    if cls in _PLAIN_SCALARS:
        return bool(x == y)
    if cls is float:
        return _same_float(x, y)  # type: ignore[arg-type]
    return False


def _strict_key(value: object) -> object:
    """A hashable key equal only for exactly equal hashable values (NaN-safe)."""
    cls = type(value)
    if cls is float:
        return (cls, _float_bits(value))  # type: ignore[arg-type]
    if cls is complex:
        return (cls, _float_bits(value.real), _float_bits(value.imag))  # type: ignore[attr-defined]
    if isinstance(value, tuple):
        return (cls, tuple(_strict_key(item) for item in value))
    if isinstance(value, frozenset):
        return (cls, frozenset(_strict_key(item) for item in value))
    exact_key = _EXACT_KEYS.get(cls)
    if exact_key is not None:
        # Decimal NaNs never equal themselves and hash by identity: match them by digits.
        return (cls, exact_key(value))
    if cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__:
        # Hashed by identity: a copy never equals the original. Bucket by class and
        # attribute names; the comparison that follows the match checks the rest.
        state = _instance_state(value)
        return (cls, "<object>", tuple(sorted(state)) if state else ())
    return (cls, value)


def _tz_key(value: datetime.tzinfo | None) -> object:
    if value is None:
        return None
    # timezone == compares offsets only; the name is part of an exact copy too.
    return (type(value), value.utcoffset(None), value.tzname(None), str(value))


def _datetime_key(value: datetime.datetime | datetime.time) -> object:
    return (value.replace(tzinfo=None), value.fold, _tz_key(value.tzinfo))


def _text_key(value: object) -> object:
    return str(value)


def _decimal_key(value: decimal.Decimal) -> object:
    return value.as_tuple()


def _array_key(value: array.array[Any]) -> object:
    return (value.typecode, value.tobytes())


# Value types whose == is looser than "exact copy" (Decimal("1.0") == Decimal("1.00"),
# naive and UTC datetimes, NaN inside arrays).
_EXACT_KEYS: Final[dict[type, Callable[[Any], object]]] = {
    datetime.datetime: _datetime_key,
    datetime.time: _datetime_key,
    datetime.timezone: _tz_key,
    datetime.date: lambda d: d.toordinal(),
    datetime.timedelta: lambda t: (t.days, t.seconds, t.microseconds),
    decimal.Decimal: _decimal_key,
    array.array: _array_key,
    uuid.UUID: lambda u: (u.int, u.is_safe),
    fractions.Fraction: lambda f: (f.numerator, f.denominator),
    range: lambda r: (r.start, r.stop, r.step),
    # Paths and ip objects cache derived attributes lazily; their text is their value.
    **{
        cls: _text_key
        for cls in (
            pathlib.PurePosixPath,
            pathlib.PureWindowsPath,
            pathlib.PosixPath,
            pathlib.WindowsPath,
            ipaddress.IPv4Address,
            ipaddress.IPv6Address,
            ipaddress.IPv4Network,
            ipaddress.IPv6Network,
            ipaddress.IPv4Interface,
            ipaddress.IPv6Interface,
        )
    },
}


# Value types whose subclasses compare the base value by its exact key, then their
# attributes; datetime before date, its base.
_VALUE_BASES: Final = (
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
)


def _is_struct_sequence(cls: type) -> bool:
    return issubclass(cls, tuple) and all(
        hasattr(cls, name) for name in ("n_fields", "n_sequence_fields", "n_unnamed_fields")
    )


def _struct_sequence_fields(value: tuple[Any, ...]) -> dict[str, object]:
    """The named-only fields of a struct sequence (``tm_zone``, ``st_atime_ns``, ...)."""
    # Its __reduce__ is the one public view of them all: (cls, (items, {name: value})).
    reduced = value.__reduce__()
    if isinstance(reduced, tuple) and len(reduced) > 1 and len(reduced[1]) > 1:
        named = reduced[1][1]
        if isinstance(named, dict):
            return dict(named)
    return {}


def _is_msgspec_struct(cls: type) -> bool:
    return isinstance(getattr(cls, "__struct_fields__", None), tuple) and hasattr(
        cls, "__struct_config__"
    )


def _is_pydantic_model(cls: type) -> bool:
    return any(
        klass.__name__ == "BaseModel" and klass.__module__.startswith("pydantic.")
        for klass in cls.__mro__
    )


def _exception_parts(value: BaseException) -> dict[str, object]:
    parts: dict[str, object] = {"args": value.args}
    for cls, names in _EXCEPTION_FIELDS:
        if isinstance(value, cls):
            for name in names:
                field = getattr(value, name, _MISSING)
                if field is not _MISSING:
                    parts[name] = field
    for name in _EXCEPTION_LINKS:
        parts[name] = getattr(value, name)
    return parts


def _msgspec_parts(value: Any) -> dict[str, object]:
    parts = {name: getattr(value, name, _MISSING) for name in type(value).__struct_fields__}
    instance_dict = getattr(value, "__dict__", None)
    if isinstance(instance_dict, dict):
        parts["__dict__"] = instance_dict
    return parts


def _pydantic_parts(value: Any) -> dict[str, object]:
    names = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    return {name: getattr(value, name, None) for name in names}


def _partial_parts(value: functools.partial[Any]) -> dict[str, object]:
    return {"func": value.func, "args": value.args, "keywords": value.keywords}


def _ndarray_key(value: Any) -> object:
    return (str(value.dtype), value.shape, value.tobytes())


def _looks_like_ndarray(value: object) -> bool:
    return all(
        hasattr(value, name) for name in ("dtype", "shape", "tobytes", "__array_interface__")
    )


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for declared in (slots,) if isinstance(slots, str) else slots:
            if declared in ("__dict__", "__weakref__"):
                continue
            private = declared.startswith("__") and not declared.endswith("__")
            # private slot names are stored mangled
            mangled = f"_{klass.__name__.lstrip('_')}{declared}" if private else declared
            names.append(mangled)
    return names


def _instance_state(value: object) -> dict[str, object] | None:
    """Attributes of an instance, or None when it carries no Python-level state."""
    instance_dict = getattr(value, "__dict__", None)
    slots = _slot_names(type(value))
    if not isinstance(instance_dict, dict) and not slots:
        return None
    state: dict[str, object] = dict(instance_dict) if isinstance(instance_dict, dict) else {}
    for name in slots:
        slot_value = getattr(value, name, _MISSING)
        if slot_value is not _MISSING:
            state[name] = slot_value
    return state


class _GraphComparer:
    """One comparison: the identity maps and the work stack."""

    def __init__(self) -> None:
        # id(expected object) -> (actual object, path where first met)
        self._paired: dict[int, tuple[object, _Path]] = {}
        # id(actual object) -> path where first met
        self._claimed: dict[int, _Path] = {}
        self._stack: list[_Task] = []
        # Set elements whose exact-key match is ambiguous (several equal candidates):
        # matched once the rest of the graph has paired what it can.
        self._deferred: list[tuple[object, list[object], _Path]] = []

    def compare(self, expected: object, actual: object) -> str | None:
        self._stack.append((expected, actual, None))
        while self._stack:
            exp, act, path = self._stack.pop()
            problem = self._visit(exp, act, path)
            if problem is not None:
                return f"{_render_path(path)}: {problem}"
            if not self._stack and self._deferred:
                problem = self._resolve_deferred()
                if problem is not None:
                    return problem
        return None

    def _resolve_deferred(self) -> str | None:
        # Elements already paired elsewhere pick first, so others cannot take their match.
        deferred = sorted(self._deferred, key=lambda item: id(item[0]) not in self._paired)
        self._deferred.clear()
        pending: list[_Task] = []
        for element, candidates, path in deferred:
            if not candidates:
                return f"{_render_path(path)}: no element of the actual set matches it"
            pending.append((element, self._pick_candidate(element, candidates), path))
        self._stack.extend(reversed(pending))
        return None

    def _visit(self, exp: Any, act: Any, path: _Path) -> str | None:
        cls = type(exp)
        if cls is not type(act):
            return f"expected {_type_name(cls)}, got {_type_name(type(act))}"
        if cls in _PLAIN_SCALARS:
            return None if exp == act else f"expected {_short(exp)}, got {_short(act)}"
        if cls is float:
            return None if _same_float(exp, act) else _float_message(exp, act)
        if cls is complex:
            return self._compare_complex(exp, act)
        if isinstance(exp, _IDENTITY_ONLY):
            return None if exp is act else f"expected the object {_short(exp)}, got another"
        if isinstance(exp, (list, tuple, dict, set, frozenset, bytearray)):
            return self._visit_builtin_container(exp, act, path)
        if isinstance(exp, (int, float, complex, str, bytes)):
            return self._visit_scalar_subclass(exp, act, path)
        return self._visit_other(exp, act, path)

    def _visit_builtin_container(self, exp: Any, act: Any, path: _Path) -> str | None:
        if not isinstance(exp, (tuple, frozenset)) or exp:
            verdict = self._pair(exp, act, path)
            if verdict is not None:
                return verdict or None
        if isinstance(exp, bytearray):
            problem = None if exp == act else f"expected {_short(exp)}, got {_short(act)}"
        elif isinstance(exp, (list, tuple)):
            problem = self._push_sequence(exp, act, path)
        elif isinstance(exp, dict):
            problem = self._push_dict(exp, act, path)
        else:
            problem = self._push_set(exp, act, path)
        if problem is None and isinstance(exp, collections.defaultdict):
            if exp.default_factory is not act.default_factory:
                problem = (
                    f"expected default_factory {exp.default_factory!r}, got {act.default_factory!r}"
                )
        if problem is None and _is_struct_sequence(type(exp)):
            problem = self._push_parts(
                _struct_sequence_fields(exp), _struct_sequence_fields(act), path
            )
        elif problem is None and type(exp) not in (
            list,
            tuple,
            dict,
            set,
            frozenset,
            bytearray,
        ):
            problem = self._push_state(exp, act, path)
        return problem

    def _visit_scalar_subclass(self, exp: Any, act: Any, path: _Path) -> str | None:
        base = next(b for b in (int, float, complex, str, bytes) if isinstance(exp, b))
        problem = self._visit(base(exp), base(act), path)
        if problem is None and _instance_state(exp) is not None:
            verdict = self._pair(exp, act, path)
            if verdict is not None:
                return verdict or None
            problem = self._push_state(exp, act, path)
        return problem

    def _visit_value_subclass(self, exp: Any, act: Any, path: _Path) -> str | None:
        base = next(b for b in _VALUE_BASES if isinstance(exp, b))
        base_key = _EXACT_KEYS[base]
        if base_key(exp) != base_key(act):
            return f"expected {_short(exp)}, got {_short(act)}"
        if _instance_state(exp) is None:
            return None
        verdict = self._pair(exp, act, path)
        if verdict is not None:
            return verdict or None
        return self._push_state(exp, act, path)

    def _visit_parts(
        self,
        exp: Any,
        act: Any,
        path: _Path,
        parts: Callable[[Any], dict[str, object]],
        *,
        with_state: bool = True,
    ) -> str | None:
        """An object compared by the named parts ``parts`` reads, then (``with_state``) by
        its instance attributes; it is an identity like any instance with state."""
        verdict = self._pair(exp, act, path)
        if verdict is not None:
            return verdict or None
        problem = self._push_parts(parts(exp), parts(act), path)
        if problem is None and with_state:
            problem = self._push_state(exp, act, path)
        return problem

    def _visit_other(self, exp: Any, act: Any, path: _Path) -> str | None:
        if type(exp) is slice:
            # Its parts may be any objects: compare them like a tuple's items, not with ==.
            verdict = self._pair(exp, act, path)
            if verdict is not None:
                return verdict or None
            return self._push_sequence(
                [exp.start, exp.stop, exp.step], [act.start, act.stop, act.step], path
            )
        if isinstance(exp, collections.deque):
            verdict = self._pair(exp, act, path)
            if verdict is not None:
                return verdict or None
            if exp.maxlen != act.maxlen:
                return f"expected maxlen {exp.maxlen}, got {act.maxlen}"
            problem = self._push_sequence(list(exp), list(act), path)
            if problem is None and type(exp) is not collections.deque:
                problem = self._push_state(exp, act, path)
            return problem
        if isinstance(exp, BaseException):
            return self._visit_parts(exp, act, path, _exception_parts)
        if isinstance(exp, functools.partial):
            return self._visit_parts(exp, act, path, _partial_parts)
        if _is_msgspec_struct(type(exp)):
            return self._visit_parts(exp, act, path, _msgspec_parts, with_state=False)
        if _is_pydantic_model(type(exp)):
            return self._visit_parts(exp, act, path, _pydantic_parts, with_state=False)
        if isinstance(exp, _VALUE_BASES) and type(exp) not in _VALUE_BASES:
            return self._visit_value_subclass(exp, act, path)
        exact_key = _EXACT_KEYS.get(type(exp))
        if exact_key is None and _looks_like_ndarray(exp):
            exact_key = _ndarray_key
        if exact_key is not None:
            if exact_key(exp) == exact_key(act):
                return None
            return f"expected {_short(exp)}, got {_short(act)}"
        if _instance_state(exp) is None:
            return self._compare_by_equality(exp, act)
        verdict = self._pair(exp, act, path)
        if verdict is not None:
            return verdict or None
        if exp is act:
            return None
        return self._push_state(exp, act, path)

    def _pair(self, exp: object, act: object, path: _Path) -> str | None:
        """Record exp -> act.

        Returns None for a new pair, "" for a pair already recorded (skip it), and a
        message when the mapping would stop being a bijection.
        """
        first = self._paired.get(id(exp))
        if first is not None:
            if first[0] is act:
                return ""
            where = _render_path(first[1])
            return f"expected the same object as at {where}, got a distinct one"
        other = self._claimed.get(id(act))
        if other is not None:
            where = _render_path(other)
            return f"expected a distinct object, got the same object as at {where}"
        self._paired[id(exp)] = (act, path)
        self._claimed[id(act)] = path
        return None

    def _compare_complex(self, exp: complex, act: complex) -> str | None:
        if _same_float(exp.real, act.real) and _same_float(exp.imag, act.imag):
            return None
        return f"expected {exp!r}, got {act!r} (bit patterns differ)"

    def _compare_by_equality(self, exp: object, act: object) -> str | None:
        try:
            equal = bool(exp == act)
        except Exception as error:  # any failure means "cannot show equal"
            return f"cannot compare {_type_name(type(exp))} values: {type(error).__name__}"
        return None if equal else f"expected {_short(exp)}, got {_short(act)}"

    def _push_sequence(self, exp: list[Any] | tuple[Any, ...], act: Any, path: _Path) -> str | None:
        if len(exp) != len(act):
            kind = _type_name(type(exp))
            return f"expected {kind} of length {len(exp)}, got length {len(act)}"
        pending: list[_Task] = []
        for index, (x, y) in enumerate(zip(exp, act, strict=True)):
            if not _trivially_equal(x, y):
                pending.append((x, y, (path, index)))
        self._stack.extend(reversed(pending))
        return None

    def _push_dict(self, exp: dict[Any, Any], act: dict[Any, Any], path: _Path) -> str | None:
        if len(exp) != len(act):
            return f"expected dict of length {len(exp)}, got length {len(act)}"
        pending: list[_Task] = []
        for index, ((exp_key, exp_value), (act_key, act_value)) in enumerate(
            zip(exp.items(), act.items(), strict=True)
        ):
            if not _trivially_equal(exp_key, act_key):
                pending.append((exp_key, act_key, (path, ("k", index))))
            if not _trivially_equal(exp_value, act_value):
                pending.append((exp_value, act_value, (path, ("v", exp_key))))
        self._stack.extend(reversed(pending))
        return None

    def _push_set(self, exp: set[Any] | frozenset[Any], act: Any, path: _Path) -> str | None:
        if len(exp) != len(act):
            kind = _type_name(type(exp))
            return f"expected {kind} of size {len(exp)}, got size {len(act)}"
        by_equality = {element: element for element in act}
        used: set[int] = set()
        pending: list[_Task] = []
        unmatched: list[tuple[int, object]] = []
        for index, element in enumerate(exp):
            match = by_equality.get(element, _MISSING)
            if match is _MISSING or id(match) in used:
                unmatched.append((index, element))
                continue
            used.add(id(match))
            pending.append((element, match, (path, ("s", index))))
        if unmatched:
            leftovers = [element for element in act if id(element) not in used]
            problem = self._match_strictly(unmatched, leftovers, path, pending)
            if problem is not None:
                return problem
        self._stack.extend(reversed(pending))
        return None

    def _match_strictly(
        self,
        unmatched: list[tuple[int, object]],
        leftovers: list[object],
        path: _Path,
        pending: list[_Task],
    ) -> str | None:
        """Match set elements that equality could not find (NaN inside), by exact key."""
        try:
            by_key: dict[object, list[object]] = {}
            for element in leftovers:
                by_key.setdefault(_strict_key(element), []).append(element)
            for index, element in unmatched:
                candidates = by_key.get(_strict_key(element))
                if not candidates:
                    return (
                        "no element of the actual set matches expected element "
                        f"{{{index}}} {_short(element)}"
                    )
                element_path: _Path = (path, ("s", index))
                if len(candidates) > 1 and id(element) not in self._paired:
                    self._deferred.append((element, candidates, element_path))
                    continue
                pending.append((element, self._pick_candidate(element, candidates), element_path))
        except RecursionError:
            return "set elements nested too deeply to match"
        return None

    def _pick_candidate(self, element: object, candidates: list[object]) -> object:
        """Among equally keyed candidates, keep the identity mapping consistent.

        Prefer the object ``element`` is already paired with, then one that no other
        expected object claimed; the pushed comparison still checks the choice.
        """
        paired = self._paired.get(id(element))
        for position, candidate in enumerate(candidates):
            if paired is not None and candidate is paired[0]:
                return candidates.pop(position)
        for position, candidate in enumerate(candidates):
            if id(candidate) not in self._claimed:
                return candidates.pop(position)
        return candidates.pop()

    def _push_state(self, exp: object, act: object, path: _Path) -> str | None:
        return self._push_parts(_instance_state(exp) or {}, _instance_state(act) or {}, path)

    def _push_parts(
        self, exp_state: dict[str, object], act_state: dict[str, object], path: _Path
    ) -> str | None:
        if exp_state.keys() != act_state.keys():
            missing = sorted(exp_state.keys() - act_state.keys())
            extra = sorted(act_state.keys() - exp_state.keys())
            return f"attributes differ: missing {missing}, unexpected {extra}"
        pending: list[_Task] = [
            (value, act_state[name], (path, ("a", name))) for name, value in exp_state.items()
        ]
        self._stack.extend(reversed(pending))
        return None


def _float_message(exp: float, act: float) -> str:
    if repr(exp) == repr(act):
        exp_bits, act_bits = _float_bits(exp), _float_bits(act)
        return f"expected {exp!r} (bits {exp_bits:#018x}), got bits {act_bits:#018x}"
    return f"expected {exp!r}, got {act!r}"
