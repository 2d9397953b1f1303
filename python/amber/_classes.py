"""How amber writes and rebuilds class instances.

The extension asks these functions once per class (encoding) or once per shape in a payload
(decoding) and caches the answer; the per-instance work happens in Rust. Nothing here imports
a module or looks up a name that comes from a payload: a payload's class names are only
compared with the classes the caller passed in ``types`` or ``custom``.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["CustomType", "Placeholder"]

T = TypeVar("T")

_HEAPTYPE = 1 << 9
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)

# Payload object kinds, as in the spec's OBJECT kind table.
ATTRS, STATE, TUPLE_FIELDS, ENUM, CUSTOM = range(5)
# Not a payload kind: a Placeholder is written as the instance it stands for.
PLACEHOLDER = 255
_KIND_NAMES = ("ATTRS", "STATE", "TUPLE_FIELDS", "ENUM", "CUSTOM")

# How a payload field reaches a rebuilt instance (see ``decode_plan``).
TO_DICT, TO_SETATTR, DROP = range(3)

# Builtin bases whose subclasses amber cannot write as plain attribute bags: their data
# lives in the builtin part, which ATTRS would silently lose.
_BUILTIN_BASES = (
    dict,
    list,
    set,
    frozenset,
    tuple,
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
)


class CustomType(Generic[T]):
    """A class the caller teaches amber to write and rebuild with two functions.

    ``encode(obj)`` returns any amber-encodable state; ``decode(state)`` rebuilds the
    object. Pass the same ``CustomType`` to ``dumps(..., custom=[...])`` and
    ``loads(..., custom=[...])``: a payload can only ever run the ``decode`` functions the
    caller registered for the decode.
    """

    __slots__ = ("cls", "decode", "encode")

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

    ``state`` is a dict of field values for attribute and named-tuple classes, or the single
    state value (``__getstate__`` result, enum value, custom state) otherwise.
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

    __hash__ = None  # type: ignore[assignment]


def _dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _key(cls: type) -> str:
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


def encode_plan(cls: type) -> tuple[Any, ...]:
    """How to write instances of ``cls``: ``(kind, module, qualname, *details)``.

    - ``(ENUM, m, q)``: the member's ``_value_``.
    - ``(TUPLE_FIELDS, m, q, fields)``: a named tuple's items.
    - ``(ATTRS, m, q, has_dict, slots)``: ``__dict__`` items, then the set slots.
    - ``(STATE, m, q)``: ``__getstate__()``.
    - ``(PLACEHOLDER, m, q)``: an ``amber.Placeholder``, written as the class it names.

    Raises TypeError with the reason for classes amber cannot write.
    """
    if issubclass(cls, type):
        raise TypeError(
            f"unsupported type {_dotted(cls)}: amber writes instances of classes, not classes"
        )
    if cls is Placeholder:
        return (PLACEHOLDER, cls.__module__, cls.__qualname__)
    module, qualname = cls.__module__, cls.__qualname__
    if module == "builtins":
        raise TypeError(f"unsupported type {_dotted(cls)}: amber has no form for this builtin type")
    if isinstance(cls, enum.EnumMeta):
        return (ENUM, module, qualname)
    if issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        return (TUPLE_FIELDS, module, qualname, tuple(getattr(cls, "_fields")))  # noqa: B009
    for base in _BUILTIN_BASES:
        if issubclass(cls, base):
            raise TypeError(
                f"unsupported type {_dotted(cls)}: a subclass of {base.__name__}, whose "
                "builtin part amber cannot write (only enums and named tuples are); "
                "register a CustomType for it"
            )
    _check_layout(cls)
    field_based = dataclasses.is_dataclass(cls) or hasattr(cls, "__attrs_attrs__")
    if not field_based and (_overrides(cls, "__getstate__") or _overrides(cls, "__setstate__")):
        return (STATE, module, qualname)
    return (ATTRS, module, qualname, _has_instance_dict(cls), _all_slots(cls))


def default_state(obj: Any) -> Any:
    """``__getstate__()`` where Python has no default for it (before 3.11)."""
    getstate = getattr(obj, "__getstate__", None)
    if getstate is not None and (
        _OBJECT_GETSTATE is None or type(obj).__getstate__ is not _OBJECT_GETSTATE
    ):
        return getstate()
    if _OBJECT_GETSTATE is not None:
        return _OBJECT_GETSTATE(obj)
    state = dict(getattr(obj, "__dict__", {}))
    slots = {n: getattr(obj, n) for n in _all_slots(type(obj)) if hasattr(obj, n)}
    return (state or None, slots) if slots else (state or None)


# -- decoding ---------------------------------------------------------------------------------


def registry(types: Any, custom: Any) -> tuple[dict[str, type], dict[str, Callable[[Any], Any]]]:
    """The allow-list and custom decoders, keyed by ``"module:qualname"``."""
    allowed: dict[str, type] = {}
    if types is not None:
        items: Iterable[Any] = types.items() if isinstance(types, Mapping) else types
        for item in items:
            if isinstance(item, tuple):
                if len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], type):
                    raise TypeError(
                        'types entries must be classes or ("module:qualname", class) pairs, '
                        f"got {item!r}"
                    )
                name, cls = item
                if name.count(":") != 1:
                    raise ValueError(f'alias {name!r} must be written "module:qualname"')
                allowed[name] = cls
            elif isinstance(item, type):
                allowed[_key(item)] = item
            else:
                raise TypeError(f"types entries must be classes, got {item!r}")
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
    local = encode_plan_or_none(cls)
    if local is None or local != kind:
        expected = _KIND_NAMES[local] if local is not None else "nothing amber can build"
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


def apply_state(obj: Any, state: Any) -> None:
    """Gives a ``STATE`` object its state as pickle would: ``__setstate__`` or the default."""
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
