"""The caches amber keeps between calls hold no class alive and stay bounded.

The encoder caches how to write each class and the decoder how to rebuild each class from a
payload's shape, both keyed by the class's address. Services that make classes at run time
(``make_dataclass``, ``namedtuple``, pydantic's ``create_model``) must get their memory back
when those classes go, and a new class that lands at a dead one's address must never be
written or rebuilt with the dead one's plan.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import gc
import tracemalloc
import weakref
from collections.abc import Callable
from typing import Any

import amber


def _memory_in_use() -> Callable[[], int]:
    """A function returning the process's memory in use, in bytes: its resident set size
    where ``/proc`` has it (it sees the extension's Rust allocations too), else what
    tracemalloc traces (Python allocations only, which hold the classes)."""
    try:
        with open("/proc/self/statm") as f:
            f.read()
    except OSError:
        tracemalloc.start()
        return lambda: tracemalloc.get_traced_memory()[0]

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    return rss


def _make_class(kind: int, name: str) -> tuple[type, Any]:
    """A class made at run time, of one of several kinds, and an instance of it."""
    if kind == 0:
        cls: Any = dataclasses.make_dataclass(name, [("a", int), ("b", str)], slots=True)
        return cls, cls(1, "two")
    if kind == 1:
        cls = collections.namedtuple(name, ["x", "y", "z"])
        return cls, cls(1, 2.5, "three")
    if kind == 2:
        cls = dataclasses.make_dataclass(name, [("p", int)])
        return cls, cls(7)
    cls = enum.Enum(name, ["RED", "GREEN"])
    return cls, cls.GREEN


def test_dropped_classes_are_freed_after_encode_and_decode() -> None:
    for kind in range(4):
        cls, obj = _make_class(kind, f"Dropped{kind}")
        data = amber.dumps([obj, obj])
        back = amber.loads(data, types=[cls])
        assert back == [obj, obj] and type(back[0]) is cls
        # The decoder's class-options path too: a reusable Decoder with the class allowed.
        assert amber.Decoder(types=[cls]).decode(data) == [obj, obj]
        ref = weakref.ref(cls)
        del cls, obj, back
        gc.collect()
        assert ref() is None, f"class of kind {kind} is still alive after encode and decode"


def test_memory_returns_to_baseline_after_20000_classes() -> None:
    """Each class made by make_dataclass or namedtuple costs about 7 KB with its functions;
    an encoder cache that kept every class grew this loop by 150 MB (pickle, by under 2 MB).
    With the classes freed, what remains is allocator slack: memory CPython's and the C
    library's allocators keep for reuse, measured at under 1 MB here. 10 MB is 1,300
    classes' worth: any cache that still held most classes (or a fixed share of them above
    7%) fails, and the slack of any allocator passes."""
    rss = _memory_in_use()
    for i in range(200):  # warm up: one-off allocations (imports, interned names, caches)
        cls, obj = _make_class(i % 2, f"Warm{i}")
        amber.loads(amber.dumps(obj), types=[cls])
    del cls, obj
    gc.collect()
    before = rss()
    for i in range(20_000):
        cls, obj = _make_class(i % 3, f"Made{i}")
        back = amber.loads(amber.dumps(obj), types=[cls])
        assert back == obj
    del cls, obj, back
    gc.collect()
    grown = rss() - before
    assert grown < 10_000_000, f"memory grew by {grown / 1e6:.1f} MB after 20,000 classes"


def test_a_new_class_at_a_dead_class_address_gets_its_own_encode_plan() -> None:
    """Classes of different kinds, names and fields, each dropped before the next is made:
    CPython hands a new class the memory of the one just freed, so most of them share one
    address. Each must be written as itself."""
    dead: set[int] = set()
    reused = 0
    for k in range(60):
        cls, obj = _make_class(k % 4, f"Reused{k}")
        reused += id(cls) in dead
        data = amber.dumps(obj)
        [seen] = amber.loads(amber.dumps([obj]), placeholders=True)
        assert seen.qualname == f"Reused{k}"
        back = amber.loads(data, types=[cls])
        assert back == obj and type(back) is cls
        dead.add(id(cls))
        del cls, obj, back, seen
        gc.collect()
    # Otherwise this test would not test what it claims.
    assert reused > 0, "no class was made at a dead class's address"


def test_a_new_class_at_a_dead_class_address_gets_its_own_decode_plan() -> None:
    """One payload decoded into a series of classes with one name and the payload's fields,
    each with its own default for the field the payload lacks: the decode plan holds that
    default, so a plan reused across classes would fill in a dead class's value."""
    short = dataclasses.make_dataclass("Same", ["a", "b"])
    payload = amber.dumps(short(1, 2))
    dead: set[int] = set()
    reused = 0
    for k in range(60):
        cls: Any = dataclasses.make_dataclass(
            "Same", ["a", "b", ("c", int, dataclasses.field(default=k))]
        )
        reused += id(cls) in dead
        back = amber.loads(payload, types=[cls])
        assert type(back) is cls and (back.a, back.b, back.c) == (1, 2, k)
        dead.add(id(cls))
        del cls, back
        gc.collect()
    assert reused > 0, "no class was made at a dead class's address"


def test_many_shapes_of_one_class_stay_bounded() -> None:
    """A payload chooses its field names, so one allowed class can be sent any number of
    shapes; the decoder's cache of plans starts over past its bound instead of growing."""
    target: Any = dataclasses.make_dataclass("Target", [("a", int, dataclasses.field(default=0))])
    rss = _memory_in_use()

    def shapes(start: int, count: int) -> None:
        for i in range(start, start + count):
            # A payload writing Target with one field Target lacks (dropped on decode).
            name = f"f{i}_" + "x" * 1000
            fake = amber.Placeholder(target.__module__, "Target", "ATTRS", {name: i})
            assert amber.loads(amber.dumps(fake), types=[target]) == target()

    shapes(0, 2_000)
    gc.collect()
    before = rss()
    shapes(2_000, 20_000)
    gc.collect()
    grown = rss() - before
    # Each plan keeps its 1 KB field name twice (the key's text and the plan's names), so
    # 20,000 more plans would add over 40 MB; the cache keeps at most 1 MiB of key text.
    assert grown < 8_000_000, f"memory grew by {grown / 1e6:.1f} MB"


def test_cached_plans_still_serve_live_classes() -> None:
    """The caches still work: a class encoded and decoded many times, with other classes made
    and dropped in between, keeps giving the same bytes and objects."""
    point: Any = dataclasses.make_dataclass("Point", [("x", int), ("y", int)])
    first = amber.dumps(point(1, 2))
    for i in range(50):
        other, obj = _make_class(i % 4, f"Other{i}")
        amber.loads(amber.dumps(obj), types=[other])
        del other, obj
        gc.collect()
        assert amber.dumps(point(1, 2)) == first
        assert amber.loads(first, types=[point]) == point(1, 2)
    ref = weakref.ref(point)
    del point
    gc.collect()
    assert ref() is None
