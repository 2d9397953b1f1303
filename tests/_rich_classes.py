"""Module-level classes for the rich-type and class tests (stable module and qualified names).

Payloads name these classes as ``_rich_classes.<qualname>`` (tests/ is on sys.path in pytest and
in the child interpreters of ``_common.run_python``), so a payload written by one process can be
read by another. Nothing here imports amber: ``money_custom_type()`` builds the CustomType.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

try:
    import attrs
except ImportError:  # attrs is optional: its tests are skipped without it
    attrs = None  # type: ignore[assignment]

HAVE_ATTRS = attrs is not None
HAVE_STRENUM = sys.version_info >= (3, 11)

# --------------------------------------------------------------------------- canary

CANARY_MARKS: list[str] = []
CANARY_ENV = "AMBER_CANARY_FILE"


def _mark(what: str) -> None:
    """Record that code of this module ran: in CANARY_MARKS, and in $AMBER_CANARY_FILE if set."""
    CANARY_MARKS.append(what)
    path = os.environ.get(CANARY_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(what + "\n")


if os.environ.get("AMBER_CANARY_ON_IMPORT"):
    _mark("module _rich_classes imported")


def __getattr__(name: str) -> Any:
    # PEP 562: runs for any lookup of a missing module attribute, e.g. a decoder resolving
    # "_rich_classes.NoSuchClass" by getattr.
    _mark(f"module __getattr__ {name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CanaryMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        _mark("metaclass __call__")
        return super().__call__(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        _mark(f"metaclass __getattr__ {name}")
        raise AttributeError(name)


class Canary(metaclass=_CanaryMeta):
    """Every hook a decoder could trigger writes a mark. Never allowed in the hostile tests."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        _mark("__init_subclass__")
        super().__init_subclass__(**kwargs)

    def __new__(cls, *args: Any, **kwargs: Any) -> Canary:
        _mark("__new__")
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _mark("__init__")

    def __setstate__(self, state: Any) -> None:
        _mark("__setstate__")
        if isinstance(state, dict):
            self.__dict__.update(state)

    def __getstate__(self) -> Any:
        return dict(self.__dict__)

    def __setattr__(self, name: str, value: Any) -> None:
        _mark(f"__setattr__ {name}")
        object.__setattr__(self, name, value)

    def __reduce_ex__(self, protocol: Any) -> Any:
        _mark("__reduce_ex__")
        return object.__reduce_ex__(self, protocol)


# --------------------------------------------------------------------------- plain classes


class Employee:
    """The seed scenario's class (Perl's Storable/Sereal example)."""

    def __init__(self, id: int, name: str, age: int) -> None:
        self.id = id
        self.name = name
        self.age = age

    def info(self) -> str:
        return f"ID: {self.id}, Name: {self.name}, Age: {self.age}"

    def __repr__(self) -> str:
        return f"Employee({self.id!r}, {self.name!r}, {self.age!r})"


class Node:
    """A plain class for graphs: cycles, back-pointers, shared children."""

    def __init__(self, label: Any = None) -> None:
        self.label = label
        self.children: list[Node] = []
        self.parent: Node | None = None

    def add(self, child: Node) -> Node:
        child.parent = self
        self.children.append(child)
        return child


class SlotsOnly:
    __slots__ = ("a", "b")

    def __init__(self, a: Any = None, b: Any = None) -> None:
        self.a = a
        self.b = b


class PrivateSlots:
    """A private slot is stored under its mangled name, _PrivateSlots__secret."""

    __slots__ = ("__secret", "public")

    def __init__(self, secret: Any, public: Any) -> None:
        self.__secret = secret
        self.public = public

    def secret(self) -> Any:
        return self.__secret


class SlotsAndDict:
    __slots__ = ("__dict__", "a")

    def __init__(self, a: Any, **extra: Any) -> None:
        self.a = a
        self.__dict__.update(extra)


class SlotsBase:
    __slots__ = ("base",)


class SlotsChild(SlotsBase):
    """Slots declared in two classes of the MRO."""

    __slots__ = ("child",)

    def __init__(self, base: Any, child: Any) -> None:
        self.base = base
        self.child = child


class WithState:
    """Custom __getstate__/__setstate__: the state is a tuple, not the __dict__."""

    def __init__(self, x: Any, y: Any) -> None:
        self.x = x
        self.y = y
        self.cache = "derived"  # not part of the state: rebuilt by __setstate__

    def __getstate__(self) -> Any:
        return ("v1", self.x, self.y)

    def __setstate__(self, state: Any) -> None:
        tag, x, y = state
        assert tag == "v1"
        self.x = x
        self.y = y
        self.cache = "derived"


class WithStateDict:
    """__getstate__ returns a dict under other keys: only __setstate__ restores `payload`."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def __getstate__(self) -> Any:
        return {"p": self.payload}

    def __setstate__(self, state: Any) -> None:
        self.payload = state["p"]


# --------------------------------------------------------------------------- enums


class Color(enum.Enum):
    RED = 1
    GREEN = "green"
    BLUE = (3, "blue")


class Priority(enum.IntEnum):
    LOW = -1
    MID = 0
    HIGH = 2**70  # an IntEnum member outside the i64 range


class Perm(enum.Flag):
    R = 4
    W = 2
    X = 1


if HAVE_STRENUM:

    class Shade(enum.StrEnum):
        LIGHT = "light"
        DARK = "dark"

    ENUM_CLASSES: tuple[type[enum.Enum], ...] = (Color, Priority, Perm, Shade)
else:  # pragma: no cover - Python 3.10
    ENUM_CLASSES = (Color, Priority, Perm)


# --------------------------------------------------------------------------- NamedTuple


class Point(NamedTuple):
    x: Any
    y: Any = 0
    label: str = "origin"


class Pair(NamedTuple):
    left: Any
    right: Any


# --------------------------------------------------------------------------- dataclasses


@dataclass
class Plain:
    name: str
    tags: list[Any] = field(default_factory=list)
    score: float = 0.0


@dataclass(frozen=True)
class Frozen:
    key: Any
    items: Any = ()


@dataclass(slots=True)
class Slotted:
    a: Any
    b: Any = None


@dataclass(kw_only=True)
class KwOnly:
    first: Any
    second: Any = "two"


@dataclass
class Linked:
    value: Any
    next: Any = None


# --------------------------------------------------------------------------- attrs (optional)

if HAVE_ATTRS:

    @attrs.define
    class AttrsPoint:
        x: Any
        y: Any = 0
        tags: list[Any] = attrs.Factory(list)

    @attrs.frozen
    class AttrsFrozen:
        key: Any
        value: Any = None

else:
    AttrsPoint = None  # type: ignore[assignment,misc]
    AttrsFrozen = None  # type: ignore[assignment,misc]


# --------------------------------------------------------------------------- custom type

MONEY_CALLS: list[str] = []


class Money:
    """Written with amber.CustomType: the state is (str(amount), currency)."""

    __slots__ = ("amount", "currency")

    def __init__(self, amount: Decimal, currency: str) -> None:
        self.amount = amount
        self.currency = currency

    def __eq__(self, other: object) -> bool:
        if type(other) is not Money:
            return NotImplemented
        return (str(self.amount), self.currency) == (str(other.amount), other.currency)

    def __hash__(self) -> int:
        return hash((str(self.amount), self.currency))

    def __repr__(self) -> str:
        return f"Money({self.amount!r}, {self.currency!r})"


def money_encode(m: Money) -> Any:
    MONEY_CALLS.append("encode")
    return [str(m.amount), m.currency]


def money_decode(state: Any) -> Money:
    MONEY_CALLS.append("decode")
    amount, currency = state
    return Money(Decimal(amount), currency)


def money_custom_type() -> Any:
    import amber

    return amber.CustomType(Money, money_encode, money_decode)


# --------------------------------------------------------------------------- schema evolution
# Each pair of versions shares one __module__/__qualname__, as the same class would in two
# releases of a program: a payload written with one version is read with the other.


@dataclass
class RecordV1:
    name: str
    age: int


@dataclass
class RecordV2:
    name: str
    age: int
    email: str = "unknown"
    tags: list[Any] = field(default_factory=list)


@dataclass
class RecordV3:
    """A new field without a default: a v1 payload cannot fill it."""

    name: str
    age: int
    email: str


class PointV1(NamedTuple):
    x: Any
    y: Any


class PointV2(NamedTuple):
    x: Any
    y: Any
    z: Any = 0


class SlotsV1:
    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = a


class SlotsV2:
    __slots__ = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b


class PlainV1:
    def __init__(self, a: Any) -> None:
        self.a = a


class PlainV2:
    def __init__(self, a: Any, extra: Any) -> None:
        self.a = a
        self.extra = extra


def _same_name(qualname: str, *classes: type) -> None:
    for cls in classes:
        cls.__module__ = __name__
        cls.__qualname__ = qualname


_same_name("Record", RecordV1, RecordV2, RecordV3)
_same_name("PointV", PointV1, PointV2)
_same_name("SlotsV", SlotsV1, SlotsV2)
_same_name("PlainV", PlainV1, PlainV2)


# --------------------------------------------------------------------------- refused by dumps


class MyDict(dict):  # type: ignore[type-arg]
    pass


class MyList(list):  # type: ignore[type-arg]
    pass


class MyInt(int):
    pass


class Boxed:
    """Its own ``__reduce__`` (REDUCE): the class, no arguments, and a state that
    ``__setstate__`` stores whole; the state may hold the instance itself."""

    def __init__(self, state: Any = None) -> None:
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        return (Boxed, (), self.state)

    def __setstate__(self, state: Any) -> None:
        self.state = state


# --------------------------------------------------------------------------- collections

# Every class a round trip of the classes above needs in types=[...].
ALL_CLASSES: list[type] = [
    Employee,
    Node,
    SlotsOnly,
    PrivateSlots,
    SlotsAndDict,
    SlotsChild,
    WithState,
    WithStateDict,
    *ENUM_CLASSES,
    Point,
    Pair,
    Plain,
    Frozen,
    Slotted,
    KwOnly,
    Linked,
    MyDict,
    MyList,
    MyInt,
    Boxed,
]
if HAVE_ATTRS:
    ALL_CLASSES += [AttrsPoint, AttrsFrozen]


def is_dataclass_instance(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)
