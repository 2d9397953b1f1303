"""Classes named by the OBJECT vectors in spec/vectors/*.json.

The vectors name classes by module and qualified name; this module is imported as
``_vector_classes`` (tests/ is on sys.path), which is the module name the vectors use. Keep
the classes' names, fields and kinds in step with the vectors.
"""

from __future__ import annotations

import builtins
import enum
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass
class Point:
    """ATTRS with two fields and no defaults (missing_field / unknown_field vectors use it)."""

    x: Any
    y: Any


@dataclass
class Person:
    """ATTRS with three fields."""

    name: Any
    age: Any
    email: Any


class Empty:
    """ATTRS without fields."""


class Node:
    """A plain class whose instances may refer to themselves (``n.me = n``)."""

    me: Any


class Slotted:
    """A ``__slots__`` class; the vector leaves ``b`` unset."""

    __slots__ = ("a", "b")


class Temperature:
    """STATE: a custom ``__getstate__`` / ``__setstate__`` pair."""

    def __init__(self, degrees: Any, unit: Any) -> None:
        self.degrees = degrees
        self.unit = unit

    def __getstate__(self) -> tuple[Any, Any]:
        return (self.degrees, self.unit)

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        self.degrees, self.unit = state


class Pair(NamedTuple):
    """TUPLE_FIELDS."""

    a: Any
    b: Any


class Color(enum.Enum):
    """ENUM."""

    RED = 1
    GREEN = 2


def make_local() -> type:
    """A class whose qualified name contains ``<locals>``."""

    class Local:
        v: Any

    return Local


Local = make_local()


class MyDict(dict):  # type: ignore[type-arg]
    """MUTABLE_SUBCLASS."""


class Tag(str):
    """VALUE_SUBCLASS (instances may carry attributes)."""


class Box:
    """REDUCE: its own ``__reduce__`` names the class, no arguments, and its state, which
    ``__setstate__`` stores whole (a state that contains the box keeps the cycle)."""

    def __init__(self) -> None:
        self.state: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (Box, (), self.state)

    def __setstate__(self, state: Any) -> None:
        self.state = state


class Fixed:
    """NEWOBJ: ``__new__`` needs the value ``__getnewargs__`` gives."""

    value: Any

    def __new__(cls, value: Any) -> Fixed:
        self = super().__new__(cls)
        self.value = value
        return self

    def __getnewargs__(self) -> tuple[Any]:
        return (self.value,)


class KwOnly:
    """NEWOBJ_KW: ``__new__`` takes a keyword argument (``__getnewargs_ex__``)."""

    a: Any

    def __new__(cls, *, a: Any) -> KwOnly:
        self = super().__new__(cls)
        self.a = a
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((), {"a": self.a})


class StructLike:
    """REDUCE_KW: shaped like a ``msgspec.Struct`` (its field names and a config), which
    amber writes as a call of the class with the fields by name."""

    __struct_fields__ = ("a", "b")
    __struct_config__ = "config"

    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b


class AppError(Exception):
    """EXCEPTION of an application: its ``__init__`` takes other arguments than it passes on."""

    def __init__(self, code: Any) -> None:
        super().__init__(f"code {code}")
        self.code = code


CLASSES: dict[tuple[str, str], type] = {
    (cls.__module__, cls.__qualname__): cls
    for cls in (
        Point,
        Person,
        Empty,
        Node,
        Slotted,
        Temperature,
        Pair,
        Color,
        Local,
        MyDict,
        Tag,
        Box,
        Fixed,
        KwOnly,
        StructLike,
        AppError,
    )
}


def class_named(module: str, qualname: str) -> Any:
    """The class the vectors call ``module:qualname``; for ``builtins``, the builtin exception
    or type of that name (the spec's fixed tables, which need no allow-list)."""
    if module == "builtins":
        found = getattr(builtins, qualname, None)
        if isinstance(found, type):
            return found
    try:
        return CLASSES[(module, qualname)]
    except KeyError:
        raise LookupError(f"no vector class {module}:{qualname}") from None
