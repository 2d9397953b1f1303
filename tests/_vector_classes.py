"""Classes named by the OBJECT vectors in spec/vectors/*.json.

The vectors name classes by module and qualified name; this module is imported as
``_vector_classes`` (tests/ is on sys.path), which is the module name the vectors use. Keep
the classes' names, fields and kinds in step with the vectors.
"""

from __future__ import annotations

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

CLASSES: dict[tuple[str, str], type] = {
    (cls.__module__, cls.__qualname__): cls
    for cls in (Point, Person, Empty, Node, Slotted, Temperature, Pair, Color, Local)
}


def class_named(module: str, qualname: str) -> type:
    """The class the vectors call ``module:qualname``."""
    try:
        return CLASSES[(module, qualname)]
    except KeyError:
        raise LookupError(f"no vector class {module}:{qualname}") from None
