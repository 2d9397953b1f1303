"""amber against the class-pattern corpus (issue 21): every pattern pickle copies exactly, and
every one the issue promises beyond pickle, amber copies exactly too, given its allow-list;
without it, ``loads`` refuses before any of the pattern's code runs, or gives placeholders.

Failures name the pattern, its family and the first difference.
"""

from __future__ import annotations

import gc
import sys
import sysconfig
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import _class_patterns
import amber
import pytest
from _class_patterns import FAMILIES, PATTERNS, Pattern, exact_copy, pickle_copy

PROMISED = [p for p in PATTERNS if p.amber_exact]
BEYOND = [p for p in PATTERNS if not p.amber_exact]
NEEDS_ALLOW_LIST = [p for p in PROMISED if p.types]
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def ids(patterns: list[Pattern]) -> list[str]:
    return [f"{p.family}:{p.name}" for p in patterns]


def label(p: Pattern) -> str:
    return f"pattern {p.name!r} ({p.family})"


def encode(p: Pattern) -> tuple[object, bytes]:
    value = p.build()
    try:
        return value, amber.dumps(value)
    except amber.EncodeError as error:
        pytest.fail(f"{label(p)}: dumps raised EncodeError: {error}")


def test_corpus_is_large_enough_and_covers_every_family():
    assert len(PATTERNS) >= 45
    assert len({p.name for p in PATTERNS}) == len(PATTERNS), "pattern names must be unique"
    assert {p.family for p in PATTERNS} == set(FAMILIES)


@pytest.mark.parametrize("p", PATTERNS, ids=ids(PATTERNS))
def test_pickle_exactness_is_as_declared(p: Pattern):
    """Keeps the corpus honest: a wrong declaration (or a blind spot of exact_copy) would
    silently move a pattern in or out of the amber checks."""
    value = p.build()
    try:
        problem = exact_copy(value, pickle_copy(value))
    except Exception as error:
        problem = f"{type(error).__name__}: {error}"
    if p.pickle_exact:
        assert problem is None, f"{label(p)}: pickle's copy differs: {problem}"
    else:
        assert problem is not None, f"{label(p)}: declared beyond pickle, but pickle copies it"


@pytest.mark.parametrize("p", PROMISED, ids=ids(PROMISED))
def test_amber_round_trips_exactly(p: Pattern):
    value, data = encode(p)
    try:
        copy = amber.loads(data, types=list(p.types))
    except amber.DecodeError as error:
        pytest.fail(f"{label(p)}: loads raised {type(error).__name__}: {error}")
    problem = exact_copy(value, copy)
    assert problem is None, f"{label(p)}: amber's copy differs: {problem}"


@pytest.mark.parametrize("p", BEYOND, ids=ids(BEYOND))
def test_amber_refuses_or_copies_exactly_what_is_beyond_pickle(p: Pattern):
    """What pickle cannot copy, amber may refuse, but never copy inexactly."""
    value = p.build()
    try:
        copy = amber.loads(amber.dumps(value), types=list(p.types))
    except (amber.EncodeError, amber.DecodeError):
        return
    problem = exact_copy(value, copy)
    assert problem is None, f"{label(p)}: amber returned an inexact copy: {problem}"


def guarded_files(p: Pattern) -> set[str]:
    """Source files whose code must not run while a payload is refused: the corpus module
    and the non-stdlib modules of the allowed classes (pydantic's BaseModel, ...)."""
    files = {_class_patterns.__file__}
    for allowed in p.types:
        for cls in allowed.__mro__ if isinstance(allowed, type) else (allowed,):
            module = sys.modules.get(getattr(cls, "__module__", None) or "")
            file = getattr(module, "__file__", None)
            if file and not Path(file).resolve().is_relative_to(STDLIB):
                files.add(file)
    # co_filename is the path the module was imported by; either spelling may show up
    return files | {str(Path(file).resolve()) for file in files}


def calls_into(files: set[str], run: Any) -> list[str]:
    """Runs ``run()`` and returns the functions it called that are defined in ``files``."""
    called: list[str] = []

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename in files:
            called.append(f"{code.co_name} ({Path(code.co_filename).name}:{code.co_firstlineno})")

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return called


@pytest.mark.parametrize("p", NEEDS_ALLOW_LIST, ids=ids(NEEDS_ALLOW_LIST))
def test_loads_without_the_allow_list_refuses_before_building(p: Pattern):
    _, data = encode(p)
    refusal: list[amber.ClassNotAllowedError] = []

    def load() -> None:
        try:
            amber.loads(data)
        except amber.ClassNotAllowedError as error:
            refusal.append(error)

    ran = calls_into(guarded_files(p), load)
    assert refusal, f"{label(p)}: loads without types did not raise ClassNotAllowedError"
    allowed_names = {(t.__module__, t.__qualname__) for t in p.types}
    named = (refusal[0].module, refusal[0].qualname)
    assert named in allowed_names, f"{label(p)}: the refusal names {named}, not one of {p.types}"
    assert not ran, f"{label(p)}: refused, but ran the pattern's code first: {ran}"


def reachable(root: object, limit: int = 100_000) -> Iterator[object]:
    """Every object reachable from ``root``, not looking inside classes, functions and
    modules (whose referents lead to the whole interpreter)."""
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if not isinstance(item, (type, types.FunctionType, types.ModuleType, types.CodeType)):
            stack.extend(gc.get_referents(item))


def hashes_an_allowed_instance(value: object, allowed: tuple[type, ...]) -> bool:
    """Whether ``value`` holds an instance of an allowed class as a set element or dict key."""
    for item in reachable(value):
        if isinstance(item, (set, frozenset)):
            held: Iterable[object] = item
        elif isinstance(item, dict):
            held = item.keys()
        else:
            continue
        if any(isinstance(x, allowed) for x in held):
            return True
    return False


def placeholders_of(p: Pattern, value: object, data: bytes) -> object | None:
    """``loads(data, placeholders=True)``, or None for the one documented refusal: a
    placeholder has no hash (its state may still change), so a payload that hashes an
    instance of a refused class fails with ``unhashable`` (spec/json-mapping.md 9)."""
    try:
        return amber.loads(data, placeholders=True)
    except amber.DecodeError as error:
        allowed = tuple(t for t in p.types if isinstance(t, type))
        if error.kind == "unhashable" and hashes_an_allowed_instance(value, allowed):
            return None
        pytest.fail(f"{label(p)}: loads(placeholders=True) raised {type(error).__name__}: {error}")


@pytest.mark.parametrize("p", NEEDS_ALLOW_LIST, ids=ids(NEEDS_ALLOW_LIST))
def test_placeholders_stand_for_the_refused_classes(p: Pattern):
    value, data = encode(p)
    held = placeholders_of(p, value, data)
    if held is None:
        return
    allowed_ids = {id(t) for t in p.types}
    allowed_names = {(t.__module__, t.__qualname__) for t in p.types}
    placeholders = []
    for item in reachable(held):
        assert id(item) not in allowed_ids and id(type(item)) not in allowed_ids, (
            f"{label(p)}: placeholders=True still built or referred to {item!r}"
        )
        if type(item) is amber.Placeholder:
            placeholders.append(item)
    assert placeholders, f"{label(p)}: no Placeholder in {held!r}"
    stray = {(h.module, h.qualname) for h in placeholders} - allowed_names
    assert not stray, f"{label(p)}: placeholders for what the pattern does not use: {stray}"


@pytest.mark.parametrize("p", NEEDS_ALLOW_LIST, ids=ids(NEEDS_ALLOW_LIST))
def test_placeholders_write_back_what_they_stand_for(p: Pattern, graph_diff):
    """``dumps`` writes a Placeholder of every kind as the OBJECT it stands for: its values
    as the kind has them (none for GLOBAL, each item of the state tuple for the kinds with
    several), so the payload reads back as the same graph."""
    value, data = encode(p)
    held = placeholders_of(p, value, data)
    if held is None:
        return
    again = amber.dumps(held)
    assert graph_diff(held, amber.loads(again, placeholders=True)) is None, label(p)
    real = amber.loads(again, types=p.types)
    assert graph_diff(amber.loads(data, types=p.types), real) is None, label(p)
