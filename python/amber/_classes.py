"""How amber writes and rebuilds class instances.

The extension asks these functions once per class (encoding) or once per shape in a payload
(decoding) and caches the answer; the per-instance work happens in Rust. Nothing here imports
a module or looks up a name that comes from a payload: a payload's class names are only
compared with the classes the caller passed in ``types`` or ``custom``.
"""

from __future__ import annotations

import builtins
import copyreg
import dataclasses
import enum
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["CustomType", "Placeholder"]

T = TypeVar("T")

_HEAPTYPE = 1 << 9
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)

# Payload object kinds, as in the spec's OBJECT kind table.
(
    ATTRS,
    STATE,
    TUPLE_FIELDS,
    ENUM,
    CUSTOM,
    MUTABLE_SUBCLASS,
    VALUE_SUBCLASS,
    GLOBAL,
    REDUCE,
    NEWOBJ,
    EXCEPTION,
    REDUCE_KW,
    NEWOBJ_KW,
) = range(13)
# Not payload kinds: a Placeholder is written as the instance it stands for, and the
# instances of a PARTS class are worked out one by one (``instance_parts``).
PLACEHOLDER = 255
PARTS = 254
_KIND_NAMES = (
    "ATTRS",
    "STATE",
    "TUPLE_FIELDS",
    "ENUM",
    "CUSTOM",
    "MUTABLE_SUBCLASS",
    "VALUE_SUBCLASS",
    "GLOBAL",
    "REDUCE",
    "NEWOBJ",
    "EXCEPTION",
    "REDUCE_KW",
    "NEWOBJ_KW",
)

# How a payload field reaches a rebuilt instance (see ``decode_plan``).
TO_DICT, TO_SETATTR, DROP = range(3)

# The exception classes of ``builtins`` that a payload may name without the caller listing
# them (spec 5.17.4). Names this Python lacks are simply absent.
_BUILTIN_EXCEPTION_NAMES = (
    "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup "
    "BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError "
    "ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError "
    "DeprecationWarning EOFError EncodingWarning Exception ExceptionGroup FileExistsError "
    "FileNotFoundError FloatingPointError FutureWarning GeneratorExit ImportError "
    "ImportWarning IndentationError IndexError InterruptedError IsADirectoryError KeyError "
    "KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError "
    "NotADirectoryError NotImplementedError OSError OverflowError PendingDeprecationWarning "
    "PermissionError ProcessLookupError PythonFinalizationError RecursionError ReferenceError "
    "ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError "
    "SyntaxWarning SystemError SystemExit TabError TimeoutError TypeError UnboundLocalError "
    "UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning "
    "UserWarning ValueError Warning ZeroDivisionError"
).split()
# The builtin types a GLOBAL may name without the caller listing them.
_BUILTIN_TYPE_NAMES = (
    "bool bytearray bytes complex dict float frozenset int list object range set slice str "
    "tuple type"
).split()
_BUILTIN_EXCEPTIONS: dict[str, type] = {
    name: getattr(builtins, name)
    for name in _BUILTIN_EXCEPTION_NAMES
    if isinstance(getattr(builtins, name, None), type)
}
_BUILTIN_TYPES: dict[str, type] = {name: getattr(builtins, name) for name in _BUILTIN_TYPE_NAMES}
_BUILTIN_EXCEPTION_CLASSES = frozenset(_BUILTIN_EXCEPTIONS.values())

# Functions are written by name (GLOBAL), like classes.
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)


class CustomType(Generic[T]):
    """A class the caller teaches amber to write and rebuild with two functions.

    ``encode(obj)`` returns any amber-encodable state; ``decode(state)`` rebuilds the
    object. Pass the same ``CustomType`` to ``dumps(..., custom=[...])`` and
    ``loads(..., custom=[...])``: a payload can only ever run the ``decode`` functions the
    caller registered for the decode.
    """

    # __weakref__: the registry cache of `types=`/`custom=` lists holds its entries weakly.
    __slots__ = ("__weakref__", "cls", "decode", "encode")

    cls: type[T]
    encode: Callable[[T], Any]
    decode: Callable[[Any], T]

    def __init__(
        self, cls: type[T], encode: Callable[[T], Any], decode: Callable[[Any], T]
    ) -> None:
        if not isinstance(cls, type):
            raise TypeError(f"CustomType needs a class, got {cls!r}")
        if not callable(encode) or not callable(decode):
            raise TypeError("CustomType needs callable encode and decode functions")
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "encode", encode)
        object.__setattr__(self, "decode", decode)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CustomType is immutable")

    def __repr__(self) -> str:
        return f"CustomType({_dotted(self.cls)})"


class Placeholder:
    """An instance of a class the decoder was not allowed to build (``placeholders=True``).

    ``state`` is a dict of field values for attribute and named-tuple classes; the single
    state value (``__getstate__`` result, enum value, custom state) for STATE, ENUM and
    CUSTOM; None for a reference to a class or function (GLOBAL); and the tuple of the
    values, in order, for the kinds with several (subclasses of builtins, ``__reduce__``
    results, exceptions). Placeholders compare by all four parts and are not hashable: a
    payload that uses one as a dict key or set element fails with ``unhashable``.
    """

    __slots__ = ("kind", "module", "qualname", "state")

    module: str
    qualname: str
    kind: str
    state: Any

    def __init__(self, module: str, qualname: str, kind: str, state: Any) -> None:
        self.module = module
        self.qualname = qualname
        self.kind = kind
        self.state = state

    def __repr__(self) -> str:
        return f"Placeholder({self.module}:{self.qualname}, kind={self.kind}, state={self.state!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Placeholder):
            return NotImplemented
        return (self.module, self.qualname, self.kind, self.state) == (
            other.module,
            other.qualname,
            other.kind,
            other.state,
        )

    # Equal by their parts, whose state fills in after a create-first placeholder is made and
    # may change: a hash would not stay true to that equality, so placeholders have none.
    __hash__ = None  # type: ignore[assignment]


def _dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _key(cls: Any) -> str:
    module, qualname = cls.__module__, cls.__qualname__
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise TypeError(f"{cls!r} has no str __module__ and __qualname__")
    return f"{module}:{qualname}"


def _all_slots(cls: type) -> tuple[str, ...]:
    """Every slot an instance of ``cls`` may hold, base classes first, without duplicates."""
    names: list[str] = []
    for base in reversed(cls.__mro__):
        declared = base.__dict__.get("__slots__", ())
        if isinstance(declared, str):
            declared = (declared,)
        for name in declared:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{base.__name__.lstrip('_')}{name}"
            if name not in names:
                names.append(name)
    return tuple(names)


def _has_instance_dict(cls: type) -> bool:
    return bool(cls.__dictoffset__)


_MISSING = object()


def _data_descriptor(cls: type, name: str) -> bool:
    """Whether ``cls.name`` resolves to a data descriptor, which ``object.__setattr__``
    would call instead of storing into the instance's ``__dict__``."""
    for base in cls.__mro__:
        attr = vars(base).get(name, _MISSING)
        if attr is not _MISSING:
            kind = type(attr)
            return hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    return False


def _overrides(cls: type, name: str) -> bool:
    for base in cls.__mro__:
        if base is object:
            return False
        if name in vars(base):
            return True
    return False


def _check_layout(cls: type) -> None:
    """Refuses classes whose instances keep data where attributes cannot reach it."""
    for base in cls.__mro__:
        if base is object:
            return
        if not base.__flags__ & _HEAPTYPE:
            raise TypeError(
                f"unsupported type {_dotted(cls)}: it is built on the C type {_dotted(base)}, "
                "whose data amber cannot see; register a CustomType for it"
            )
        if "__slots__" not in vars(base) and not _has_instance_dict(base):
            raise TypeError(
                f"unsupported type {_dotted(cls)}: {_dotted(base)} is an extension type; "
                "register a CustomType for it"
            )


def _builtin_bases() -> dict[type, int]:
    """The builtin bases of spec 5.17.3 and the kind of their subclasses' objects. Library
    types are looked up only in modules already loaded: a class cannot derive from a type of
    a module nobody imported."""
    table: dict[type, int] = {base: MUTABLE_SUBCLASS for base in (list, dict, set, bytearray)}
    table |= {base: VALUE_SUBCLASS for base in (str, bytes, int, float, complex, tuple, frozenset)}
    collections = sys.modules.get("collections")
    if collections is not None:
        for name in ("OrderedDict", "defaultdict", "Counter", "deque"):
            table[getattr(collections, name)] = MUTABLE_SUBCLASS
    datetime = sys.modules.get("datetime")
    if datetime is not None:
        for name in ("datetime", "date", "time", "timedelta"):
            table[getattr(datetime, name)] = VALUE_SUBCLASS
    decimal = sys.modules.get("decimal")
    if decimal is not None:
        table[decimal.Decimal] = VALUE_SUBCLASS
    return table


def builtin_base(cls: type) -> tuple[type, int] | None:
    """The first builtin base of ``cls`` in its method resolution order, with its kind."""
    table = _builtin_bases()
    for base in cls.__mro__:
        kind = table.get(base)
        if kind is not None:
            return base, kind
    return None


def _standard_reducer(owner: type) -> bool:
    """Whether ``owner``'s ``__reduce__`` is one amber's own forms replace (spec 5.17.7)."""
    if owner is object or owner.__module__ == "builtins" or owner in _builtin_bases():
        return True
    datetime = sys.modules.get("datetime")
    return owner is enum.Enum or (datetime is not None and owner in (datetime.tzinfo,))


def _first_declaring(cls: type, names: tuple[str, ...]) -> type | None:
    for base in cls.__mro__:
        declared = vars(base)
        if any(name in declared for name in names):
            return base
    return None


def _dispatched(cls: type) -> bool:
    """Whether pickle would use a ``copyreg`` function for ``cls``. Not for exceptions:
    libraries such as tblib (installed by Dask and Celery workers) register every exception
    class there to carry tracebacks along, which are not data (spec 5.17.7)."""
    return cls in copyreg.dispatch_table and not issubclass(cls, BaseException)


def _own_reduce(cls: type) -> bool:
    """Whether ``cls`` declares how pickle rebuilds it: a ``copyreg`` entry, or a
    ``__reduce_ex__``/``__reduce__``, or the ``__new__`` arguments (``__getnewargs_ex__``,
    ``__getnewargs__``), of its own or of a base that is not a standard one."""
    if _dispatched(cls):
        return True
    for names in (("__reduce_ex__", "__reduce__"), ("__getnewargs_ex__", "__getnewargs__")):
        owner = _first_declaring(cls, names)
        if owner is not None and not _standard_reducer(owner):
            return True
    return False


def _struct_fields(cls: type) -> tuple[str, ...] | None:
    """A msgspec Struct's field names (duck-typed: msgspec is never imported)."""
    fields = getattr(cls, "__struct_fields__", None)
    config = getattr(cls, "__struct_config__", None)
    if isinstance(fields, tuple) and config is not None:
        return fields
    return None


def encode_plan(cls: type) -> tuple[Any, ...]:
    """How to write instances of ``cls``: ``(kind, module, qualname, *details)``.

    - ``(ENUM, m, q)``: the member's ``_value_``.
    - ``(TUPLE_FIELDS, m, q, fields)``: a named tuple's items.
    - ``(ATTRS, m, q, has_dict, slots)``: ``__dict__`` items, then the set slots.
    - ``(STATE, m, q)``: ``__getstate__()``.
    - ``(PLACEHOLDER, m, q)``: an ``amber.Placeholder``, written as the class it names.
    - ``(PARTS, creates_first)``: each instance is worked out by ``instance_parts``
      (classes and functions, subclasses of builtins, ``__reduce__``, exceptions).

    Raises TypeError with the reason for classes amber cannot write.
    """
    if issubclass(cls, type) or cls in _FUNCTION_TYPES:
        return (PARTS, False)
    if cls is Placeholder:
        return (PLACEHOLDER, cls.__module__, cls.__qualname__)
    module, qualname = cls.__module__, cls.__qualname__
    if isinstance(cls, enum.EnumMeta):
        return (ENUM, module, qualname)
    if issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        return (TUPLE_FIELDS, module, qualname, tuple(getattr(cls, "_fields")))  # noqa: B009
    if _own_reduce(cls) or issubclass(cls, BaseException) or _struct_fields(cls) is not None:
        return (PARTS, False)
    found = builtin_base(cls)
    if found is not None:
        return (PARTS, found[1] == MUTABLE_SUBCLASS)
    if module == "builtins":
        raise TypeError(f"unsupported type {_dotted(cls)}: amber has no form for this builtin type")
    _check_layout(cls)
    field_based = dataclasses.is_dataclass(cls) or hasattr(cls, "__attrs_attrs__")
    if not field_based and (_overrides(cls, "__getstate__") or _overrides(cls, "__setstate__")):
        return (STATE, module, qualname)
    return (ATTRS, module, qualname, _has_instance_dict(cls), _all_slots(cls))


def _names_of(obj: Any, what: str) -> tuple[str, str]:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise TypeError(f"unsupported {what} {obj!r}: it has no str __module__ and __qualname__")
    return module, qualname


def _builtin_copy(obj: Any, base: Any) -> Any:
    """A new object of exactly ``base`` with ``obj``'s builtin contents, read through the
    base's own methods (a subclass's overrides are not what its data is)."""
    if base is dict:
        return dict(dict.items(obj))
    if base is list:
        return list.copy(obj)
    if base is set:
        return set(set.__iter__(obj))
    if base is frozenset:
        return frozenset(frozenset.__iter__(obj))
    if base is bytearray:
        return bytearray(obj)
    if base is str:
        return str.__str__(obj)
    if base is bytes:
        return bytes.__add__(b"", obj)
    if base is int:
        return int.__int__(obj)
    if base is float:
        return float.__float__(obj)
    if base is complex:
        return complex(complex.real.__get__(obj), complex.imag.__get__(obj))
    if base is tuple:
        return tuple.__getitem__(obj, slice(None))
    name = base.__qualname__
    if name == "OrderedDict":
        return base(base.items(obj))
    if name == "Counter":
        return base(dict(dict.items(obj)))
    if name == "defaultdict":
        return base(base.default_factory.__get__(obj), dict.items(obj))
    if name == "deque":
        return base(base.__iter__(obj), base.maxlen.__get__(obj))
    if name == "Decimal":
        return base(obj)
    fields = _TIME_FIELDS[name]
    values = [getattr(base, field).__get__(obj, base) for field in fields]
    if name in ("datetime", "time"):
        return base(*values[:-1], fold=values[-1])
    return base(*values)


_TIME_FIELDS = {
    "date": ("year", "month", "day"),
    "datetime": (
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "microsecond",
        "tzinfo",
        "fold",
    ),
    "time": ("hour", "minute", "second", "microsecond", "tzinfo", "fold"),
    "timedelta": ("days", "seconds", "microseconds"),
}


def _reduce_parts(obj: Any, reduced: Any) -> tuple[Any, ...]:
    """What pickle's ``save_reduce`` would use, as the parts of a REDUCE, NEWOBJ or GLOBAL."""
    cls = type(obj)
    if isinstance(reduced, str):
        module = getattr(obj, "__module__", None) or cls.__module__
        return (GLOBAL, module, reduced, obj, ())
    if not isinstance(reduced, tuple) or not 2 <= len(reduced) <= 6:
        raise TypeError(
            f"unsupported type {_dotted(cls)}: __reduce_ex__ returned {type(reduced).__name__}, "
            "not a str or a tuple of 2 to 6 items"
        )
    func, args, state, listitems, dictitems, setter = (*reduced, None, None, None, None)[:6]
    if setter is not None:
        raise TypeError(
            f"unsupported type {_dotted(cls)}: its __reduce__ names a state setter, "
            "which amber does not call"
        )
    if not isinstance(args, tuple):
        raise TypeError(f"unsupported type {_dotted(cls)}: __reduce__ arguments are not a tuple")
    items = None if listitems is None else list(listitems)
    pairs = None if dictitems is None else dict(dictitems)
    newobj = getattr(copyreg, "__newobj__")  # noqa: B009 (not in the module's stubs)
    if func is newobj or func is getattr(copyreg, "__newobj_ex__", None):
        if func is not newobj:
            target, args, kwargs = args
            if not isinstance(target, type):
                raise TypeError(f"unsupported type {_dotted(cls)}: __newobj_ex__ of a non-class")
            if kwargs:
                call = (tuple(args), dict(kwargs))
                names = _names_of(target, "class")
                return (NEWOBJ_KW, *names, target, (call, state, items, pairs))
            args = tuple(args)
        else:
            target, args = args[0], args[1:]
        if not isinstance(target, type):
            raise TypeError(f"unsupported type {_dotted(cls)}: __newobj__ of a non-class")
        return (NEWOBJ, *_names_of(target, "class"), target, (args, state, items, pairs))
    return (REDUCE, *_names_of(func, "callable"), func, (args, state, items, pairs))


def instance_parts(obj: Any) -> tuple[Any, ...]:
    """``(kind, module, qualname, named, values)`` for an instance of a PARTS class:
    ``named`` is the object the names are of (the class, the callable, the object itself
    for GLOBAL), ``values`` the kind's values in order (spec 5.17.3 and 5.17.7)."""
    cls = type(obj)
    if isinstance(obj, type) or cls in _FUNCTION_TYPES:
        return (GLOBAL, *_names_of(obj, "class or function"), obj, ())
    fields = _struct_fields(cls)
    if fields is not None:
        # By name, whatever the Struct's options (kw_only, array_like, tags): its own
        # constructor takes them so, and fields added since with defaults still load.
        call = ((), {name: getattr(obj, name) for name in fields})
        return (REDUCE_KW, cls.__module__, cls.__qualname__, cls, (call, None, None, None))
    reducer = copyreg.dispatch_table.get(cls) if _dispatched(cls) else None
    if reducer is not None or _own_reduce(cls):
        try:
            reduced = reducer(obj) if reducer is not None else obj.__reduce_ex__(5)
        except TypeError as exc:
            raise TypeError(f"unsupported type {_dotted(cls)}: {exc}") from exc
        return _reduce_parts(obj, reduced)
    if isinstance(obj, BaseException):
        reduced = obj.__reduce__()
        args = tuple(reduced[1]) if len(reduced) > 1 else ()
        state = reduced[2] if len(reduced) > 2 and reduced[2] else None
        parts = (args, state, obj.__cause__, obj.__context__, obj.__suppress_context__)
        return (EXCEPTION, cls.__module__, cls.__qualname__, cls, parts)
    found = builtin_base(cls)
    if found is None:
        raise TypeError(f"unsupported type {_dotted(cls)}")
    base, kind = found
    state = default_state(obj)
    return (kind, cls.__module__, cls.__qualname__, cls, (_builtin_copy(obj, base), state))


def default_state(obj: Any) -> Any:
    """``__getstate__()`` where Python has no default for it (before 3.11)."""
    getstate = getattr(obj, "__getstate__", None)
    if getstate is not None and (
        _OBJECT_GETSTATE is None or type(obj).__getstate__ is not _OBJECT_GETSTATE
    ):
        return getstate()
    if _OBJECT_GETSTATE is not None:
        return _OBJECT_GETSTATE(obj)
    # The instance's own __dict__, not a copy, as Python 3.11's default returns it: a state
    # that contains the instance then leads back to a dict already written.
    state = getattr(obj, "__dict__", None) or None
    slots = {n: getattr(obj, n) for n in _all_slots(type(obj)) if hasattr(obj, n)}
    return (state, slots) if slots else state


# -- decoding ---------------------------------------------------------------------------------


def registry(types: Any, custom: Any) -> tuple[dict[str, type], dict[str, Callable[[Any], Any]]]:
    """The allow-list and custom decoders, keyed by ``"module:qualname"``."""
    allowed: dict[str, Any] = {}
    if types is not None:
        items: Iterable[Any] = types.items() if isinstance(types, Mapping) else types
        for item in items:
            if isinstance(item, tuple):
                if len(item) != 2 or not isinstance(item[0], str) or not callable(item[1]):
                    raise TypeError(
                        'types entries must be classes, functions or ("module:qualname", '
                        f"object) pairs, got {item!r}"
                    )
                name, cls = item
                if name.count(":") != 1:
                    raise ValueError(f'alias {name!r} must be written "module:qualname"')
                allowed[name] = cls
            elif isinstance(item, type) or isinstance(item, _FUNCTION_TYPES):
                allowed[_key(item)] = item
            else:
                raise TypeError(f"types entries must be classes or functions, got {item!r}")
    decoders: dict[str, Callable[[Any], Any]] = {}
    for entry in custom or ():
        if not isinstance(entry, CustomType):
            raise TypeError(f"custom entries must be amber.CustomType, got {entry!r}")
        decoders[_key(entry.cls)] = entry.decode
    return allowed, decoders


def encoders(custom: Any) -> dict[type, Callable[[Any], Any]] | None:
    """The custom encode functions by exact class, or None when there are none."""
    table: dict[type, Callable[[Any], Any]] = {}
    for entry in custom or ():
        if not isinstance(entry, CustomType):
            raise TypeError(f"custom entries must be amber.CustomType, got {entry!r}")
        table[entry.cls] = entry.encode
    return table or None


class Refusal(Exception):
    """A shape the local class cannot take; ``kind`` is the DecodeError kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _declared_fields(cls: type) -> dict[str, tuple[bool, Any, bool]] | None:
    """Declared fields as ``name -> (has_default, default, is_factory)``; None if undeclared."""
    if dataclasses.is_dataclass(cls):
        out: dict[str, tuple[bool, Any, bool]] = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = (True, f.default, False)
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = (True, f.default_factory, True)
            else:
                # A field outside __init__ without a default may stay unset, as after pickle.
                out[f.name] = (not f.init, None, None)  # type: ignore[assignment]
        return out
    attrs_fields = getattr(cls, "__attrs_attrs__", None)
    if attrs_fields is not None:
        attr = sys.modules.get("attr")
        nothing = getattr(attr, "NOTHING", object())
        factory_type = getattr(attr, "Factory", None)
        out = {}
        for a in attrs_fields:
            default = a.default
            if default is nothing:
                out[a.name] = (not a.init, None, None)  # type: ignore[assignment]
            elif factory_type is not None and isinstance(default, factory_type):
                if default.takes_self:
                    out[a.name] = (False, None, False)
                else:
                    out[a.name] = (True, default.factory, True)
            else:
                out[a.name] = (True, default, False)
        return out
    slots = _all_slots(cls)
    if slots and not _has_instance_dict(cls):
        return {name: (True, None, None) for name in slots}  # type: ignore[misc]
    return None


def _missing(name: str, field: str) -> Refusal:
    return Refusal(
        "missing_field",
        f"{name} needs field {field!r}, which the payload lacks and which has no default",
    )


def decode_plan(
    cls: type, kind: int, fields: tuple[str, ...], unknown_error: bool
) -> tuple[Any, ...]:
    """How to rebuild instances of ``cls`` from a payload shape.

    ``(ATTRS, uses_object_new, actions, names, defaults)``: ``actions[i]`` says where
    payload field ``i`` goes (TO_DICT, TO_SETATTR or DROP), ``names`` are the field names,
    ``defaults`` is a tuple of ``(name, value, is_factory, action)`` for fields the payload
    lacks. ``(TUPLE_FIELDS, positions, size, defaults)``, ``(ENUM,)``, ``(STATE,)``.
    Raises Refusal when the class cannot take the shape.
    """
    written = _KIND_NAMES[kind]
    if kind >= MUTABLE_SUBCLASS:
        return _parts_plan(cls, kind)
    local = encode_plan_or_none(cls)
    if local is None or local != kind:
        if local == PARTS:
            expected = "its parts (a builtin subclass, its own __reduce__ or an exception)"
        elif local is not None:
            expected = _KIND_NAMES[local]
        else:
            expected = "nothing amber can build"
        raise Refusal(
            "bad_shape",
            f"the payload writes {_dotted(cls)} as {written}, but the allowed class is "
            f"written as {expected}",
        )
    name = _dotted(cls)
    if kind == ATTRS:
        declared = _declared_fields(cls)
        slots = set(_all_slots(cls))
        has_dict = _has_instance_dict(cls)
        frozen_like = dataclasses.is_dataclass(cls) or hasattr(cls, "__attrs_attrs__")
        actions = []
        for field in fields:
            if declared is not None and field not in declared:
                if unknown_error:
                    raise Refusal("unknown_field", f"{name} has no field {field!r}")
                actions.append(DROP)
            elif field in slots or (frozen_like and not has_dict):
                actions.append(TO_SETATTR)
            elif has_dict:
                # object.__setattr__ stores into the instance's own storage (CPython keeps it
                # inline, without a dict object) exactly as a __dict__ store would, unless
                # the class has a data descriptor of that name.
                actions.append(TO_DICT if _data_descriptor(cls, field) else TO_SETATTR)
            elif unknown_error:
                raise Refusal("unknown_field", f"{name} has no field {field!r}")
            else:
                actions.append(DROP)
        defaults = []
        for field, (has_default, value, is_factory) in (declared or {}).items():
            if field in fields:
                continue
            if not has_default:
                raise _missing(name, field)
            if is_factory is None:
                continue  # may stay unset
            action = TO_SETATTR if (field in slots or not has_dict) else TO_DICT
            defaults.append((field, value, is_factory, action))
        new_is_plain = vars(object)["__new__"] is getattr(cls, "__new__")  # noqa: B009
        # The class's own name objects (interned by Python) for the fields it declares; the
        # payload's text otherwise, never interned here (see the decoder).
        own = {name: name for name in (declared or {})} | {name: name for name in slots}
        # A plain class declares nothing, but the attribute names its __init__ assigns are
        # interned constants of its code object.
        init_code = getattr(getattr(cls, "__init__", None), "__code__", None)
        if declared is None and init_code is not None:
            own |= {name: name for name in init_code.co_names}
        names = tuple(own.get(field, field) for field in fields)
        return (ATTRS, new_is_plain, tuple(actions), names, tuple(defaults))
    if kind == TUPLE_FIELDS:
        local_fields = tuple(cls._fields)  # type: ignore[attr-defined]
        positions = []
        for field in fields:
            if field in local_fields:
                positions.append(local_fields.index(field))
            elif unknown_error:
                raise Refusal("unknown_field", f"{name} has no field {field!r}")
            else:
                positions.append(-1)
        field_defaults = getattr(cls, "_field_defaults", {})
        tuple_defaults: list[tuple[int, Any]] = []
        for i, field in enumerate(local_fields):
            if field in fields:
                continue
            if field not in field_defaults:
                raise _missing(name, field)
            tuple_defaults.append((i, field_defaults[field]))
        return (TUPLE_FIELDS, tuple(positions), len(local_fields), tuple(tuple_defaults))
    return (kind,)


def _parts_plan(target: Any, kind: int) -> tuple[Any, ...]:
    """Checks that the allowed ``target`` can be what a shape of ``kind`` names (spec
    5.17.4); the plan is ``(kind, base)`` for subclasses and exceptions, ``(kind,)`` else."""
    written = _KIND_NAMES[kind]

    def refuse(needs: str) -> Refusal:
        return Refusal(
            "bad_shape",
            f"the payload writes {_dotted(target)} as {written}, which needs {needs}",
        )

    if kind == GLOBAL:
        return (kind,)
    if kind in (REDUCE, REDUCE_KW):
        if not callable(target):
            raise refuse("something callable")
        return (kind,)
    if not isinstance(target, type):
        raise refuse("a class")
    if kind in (NEWOBJ, NEWOBJ_KW):
        return (kind,)
    if kind == EXCEPTION:
        if not issubclass(target, BaseException):
            raise refuse("an exception class")
        _require_written_by_parts(target, written)
        base = next(b for b in target.__mro__ if b in _BUILTIN_EXCEPTION_CLASSES)
        return (kind, base)
    found = builtin_base(target)
    if found is None or found[1] != kind:
        family = (
            "list, dict, set, bytearray or collections"
            if kind == MUTABLE_SUBCLASS
            else ("str, bytes, int, float, complex, tuple, frozenset, datetime or Decimal")
        )
        raise refuse(f"a subclass of a {family} type")
    _require_written_by_parts(target, written)
    return (kind, found[0])


def _require_written_by_parts(target: type, written: str) -> None:
    """Refuses a subclass or exception kind for a class written with a kind of its own.

    These kinds make the instance with the builtin base's constructor, skipping the class's:
    a named tuple with no items, an int enum "member" that is none of its members, an
    exception enum's likewise. Such a class is refused them as any other wrong kind is."""
    local = encode_plan_or_none(target)
    if local != PARTS:
        expected = _KIND_NAMES[local] if local is not None else "nothing amber can build"
        raise Refusal(
            "bad_shape",
            f"the payload writes {_dotted(target)} as {written}, but the allowed class is "
            f"written as {expected}",
        )


def encode_plan_or_none(cls: type) -> int | None:
    try:
        return int(encode_plan(cls)[0])
    except TypeError:
        return None


def build_tuple(cls: type, plan: tuple[Any, ...], values: list[Any]) -> Any:
    """A named tuple from payload values, placed and completed by ``plan``."""
    _, positions, size, defaults = plan
    items: list[Any] = [None] * size
    for position, value in zip(positions, values, strict=True):
        if position >= 0:
            items[position] = value
    for position, value in defaults:
        items[position] = value
    return tuple.__new__(cls, items)


def enum_member(cls: Any, value: Any) -> Any:
    """The member of an allowed enum with this value (aliases give the canonical member)."""
    try:
        return cls(value)
    except Exception as exc:
        raise Refusal("bad_state", f"{_dotted(cls)} has no member with value {value!r}") from exc


def _check_pydantic_state(cls: type, fields: Mapping[str, Any], state: Any) -> None:
    """Refuses a pydantic model state that names fields the model lacks: pydantic's own
    ``__setstate__`` would store them unchecked."""
    if not isinstance(state, dict):
        raise Refusal("bad_state", f"{_dotted(cls)} state must be a dict, got {state!r}")
    values = state.get("__dict__")
    if not isinstance(values, dict):
        raise Refusal("bad_state", f"{_dotted(cls)} state has no __dict__ of field values")
    for name in values:
        if name not in fields:
            raise Refusal(
                "bad_state", f"{_dotted(cls)} has no field {name!r}, which the payload sets"
            )
    extra = state.get("__pydantic_extra__")
    known = set(fields) | (set(extra) if isinstance(extra, dict) else set())
    fields_set = state.get("__pydantic_fields_set__")
    for name in fields_set or ():
        if name not in known:
            raise Refusal(
                "bad_state", f"{_dotted(cls)} has no field {name!r}, which the payload marks as set"
            )


def apply_state(obj: Any, state: Any) -> None:
    """Gives a ``STATE`` object its state as pickle would: ``__setstate__`` or the default."""
    pydantic_fields = getattr(type(obj), "__pydantic_fields__", None)
    if isinstance(pydantic_fields, Mapping):
        _check_pydantic_state(type(obj), pydantic_fields, state)
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None and _overrides(type(obj), "__setstate__"):
        setstate(state)
        return
    slot_state = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slot_state = state
    if state:
        if not isinstance(state, dict):
            raise Refusal("bad_state", f"{_dotted(type(obj))} state must be a dict, got {state!r}")
        obj.__dict__.update(state)
    if slot_state:
        if not isinstance(slot_state, dict):
            raise Refusal("bad_state", f"{_dotted(type(obj))} slot state must be a dict")
        for name, value in slot_state.items():
            object.__setattr__(obj, name, value)


def fill_defaults(obj: Any, defaults: tuple[tuple[str, Any, bool, int], ...]) -> None:
    """Sets fields the payload lacked from the class's defaults."""
    for name, value, is_factory, action in defaults:
        if is_factory:
            value = value()
        if action == TO_DICT:
            obj.__dict__[name] = value
        else:
            object.__setattr__(obj, name, value)


def placeholder(module: str, qualname: str, kind: int, state: Any) -> Placeholder:
    return Placeholder(module, qualname, _KIND_NAMES[kind], state)


# -- the kinds built by their parts ------------------------------------------------------------


def builtin_named(key: str, kind: int) -> Any:
    """The object the spec's fixed tables allow under ``key`` for ``kind``, or None: builtin
    exception classes for EXCEPTION and GLOBAL, builtin types for GLOBAL (spec 5.17.4)."""
    module, _, name = key.partition(":")
    if module != "builtins":
        return None
    if name in _BUILTIN_EXCEPTIONS:
        return _BUILTIN_EXCEPTIONS[name]
    if name in _BUILTIN_EXCEPTION_NAMES:
        raise Refusal(
            "class_not_allowed",
            f"class builtins.{name} is a builtin exception this Python "
            f"({sys.version_info.major}.{sys.version_info.minor}) does not have",
        )
    if kind == GLOBAL:
        return _BUILTIN_TYPES.get(name)
    return None


def parts_begin(cls: type, plan: tuple[Any, ...]) -> Any:
    """An empty instance of a MUTABLE_SUBCLASS class, made by its builtin base's ``__new__``."""
    base = plan[1]
    return base.__new__(cls)


def _require_base(obj_cls: type, base: type, value: Any) -> None:
    if type(value) is not base:
        raise Refusal(
            "bad_state",
            f"{_dotted(obj_cls)} is a subclass of {base.__qualname__}, but the payload gives "
            f"its builtin value as {type(value).__qualname__}",
        )


def _value_subclass(cls: type, base: type, value: Any) -> Any:
    name = base.__qualname__
    if name in _TIME_FIELDS and base.__module__ == "datetime":
        fields = [getattr(value, field) for field in _TIME_FIELDS[name]]
        if name in ("datetime", "time"):
            return base.__new__(cls, *fields[:-1], fold=fields[-1])
        return base.__new__(cls, *fields)
    return base.__new__(cls, value)


def _exception(cls: type, base: Any, args: tuple[Any, ...]) -> Any:
    made = base.__new__(cls, *args)
    if type(made) is not cls:
        raise Refusal(
            "bad_state",
            f"{_dotted(cls)} arguments {args!r} make a {_dotted(type(made))}, not the class named",
        )
    base.__init__(made, *args)
    return made


def _call(target: Any, call: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments and keyword arguments of a REDUCE_KW or NEWOBJ_KW (spec 5.17.3)."""
    if len(call) == 2:
        args, kwargs = call
        if (
            type(args) is tuple
            and type(kwargs) is dict
            and all(type(name) is str for name in kwargs)
        ):
            return args, kwargs
    raise Refusal(
        "bad_state",
        f"{_dotted(target)} call must be a pair of a tuple of arguments and a dict of "
        "keyword arguments with str keys",
    )


def parts_from_first(kind: int, target: Any, plan: tuple[Any, ...], first: Any) -> Any:
    """An instance of a kind made from its first value (spec 5.17.3)."""
    if kind == VALUE_SUBCLASS:
        _require_base(target, plan[1], first)
        return _value_subclass(target, plan[1], first)
    if kind == REDUCE:
        return target(*first)
    if kind == NEWOBJ:
        return target.__new__(target, *first)
    if kind in (REDUCE_KW, NEWOBJ_KW):
        args, kwargs = _call(target, first)
        if kind == REDUCE_KW:
            return target(*args, **kwargs)
        return target.__new__(target, *args, **kwargs)
    if kind == EXCEPTION:
        return _exception(target, plan[1], first)
    raise Refusal("bad_shape", f"object kind {_KIND_NAMES[kind]} is not made from a value")


def _fill(obj: Any, base: Any, value: Any) -> None:
    """Puts a builtin value's contents into a new subclass instance by the base's methods."""
    name = base.__qualname__
    if base is list:
        list.extend(obj, value)
    elif base is dict or name == "Counter":
        dict.update(obj, value)
    elif base is set:
        set.update(obj, value)
    elif base is bytearray:
        bytearray.extend(obj, value)
    elif name == "OrderedDict":
        for key, item in value.items():
            base.__setitem__(obj, key, item)
    elif name == "defaultdict":
        base.default_factory.__set__(obj, value.default_factory)
        dict.update(obj, value)
    elif name == "deque":
        base.__init__(obj, value, value.maxlen)


def _set_state(obj: Any, state: Any) -> None:
    """pickle's BUILD: ``__setstate__`` whenever the instance has one, else the default."""
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None:
        setstate(state)
    else:
        apply_state(obj, state)


def parts_finish(kind: int, obj: Any, plan: tuple[Any, ...], values: list[Any]) -> None:
    """Gives an instance its values, the first (the one it was made from) included."""
    if kind == MUTABLE_SUBCLASS:
        value, state = values
        _require_base(type(obj), plan[1], value)
        _fill(obj, plan[1], value)
        if state is not None:
            apply_state(obj, state)
    elif kind == VALUE_SUBCLASS:
        if values[1] is not None:
            apply_state(obj, values[1])
    elif kind in (REDUCE, NEWOBJ, REDUCE_KW, NEWOBJ_KW):
        _, state, items, pairs = values
        # pickle's order: the items, then the state.
        if items is not None:
            extend = getattr(obj, "extend", None)
            if extend is not None:
                extend(items)
            else:
                for item in items:
                    obj.append(item)
        if pairs is not None:
            for key, item in pairs.items():
                obj[key] = item
        if state is not None:
            _set_state(obj, state)
    elif kind == EXCEPTION:
        _, state, cause, context, suppress = values
        for what, link in (("cause", cause), ("context", context)):
            if link is not None and not isinstance(link, BaseException):
                raise Refusal(
                    "bad_state",
                    f"{_dotted(type(obj))} {what} must be an exception or None, "
                    f"got {type(link).__qualname__}",
                )
        if state is not None:
            obj.__setstate__(state)
        obj.__cause__ = cause
        obj.__context__ = context
        obj.__suppress_context__ = suppress
