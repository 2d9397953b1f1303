"""The OBJECT kinds built from their parts (spec 5.17.3): what the encoder's allow-list
(``dumps(types=...)``) refuses, and hostile payloads of these kinds, refused with a clear
``DecodeError`` before anything half-built can escape."""

from __future__ import annotations

import collections
import datetime
import decimal
import gc
import types
from typing import Any

import _vector_classes as vc
import amber
import pydantic
import pytest
from _common import HEADER
from _rich_strategies import (
    MUTABLE_SUBCLASS,
    NEWOBJ,
    REDUCE,
    STATE,
    VALUE_SUBCLASS,
    object_body,
    object_payload,
)
from amber.contrib import Codec

MOD = "_vector_classes"


class Model(pydantic.BaseModel):
    name: str
    tags: list[str] = []


class Nest(list):  # type: ignore[type-arg]
    pass


class Built:
    """Counts its constructions: a refused payload must leave none behind."""

    made = 0

    def __init__(self, value: Any = None) -> None:
        Built.made += 1
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        return (Built, (self.value,))


# -- the encoder's allow-list ---------------------------------------------------------------


def test_dumps_types_refuses_what_loads_would_refuse():
    value = {"ok": vc.Point(1, 2), "tag": vc.Tag("x")}
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value, types=[vc.Point])
    assert "class _vector_classes.Tag is not in types=[...]" in str(info.value)
    assert info.value.path == 'root["tag"]'
    data = amber.dumps(value, types=[vc.Point, vc.Tag])
    assert data == amber.dumps(value)
    assert amber.loads(data, types=[vc.Point, vc.Tag])["tag"] == "x"


def test_dumps_types_lets_the_fixed_tables_and_custom_types_through():
    custom = amber.CustomType(vc.Empty, lambda e: None, lambda s: vc.Empty())
    value = [ValueError("v"), KeyError, int, vc.Empty()]
    data = amber.dumps(value, types=[], custom=[custom])
    back = amber.loads(data, custom=[custom])
    assert [type(back[0]), back[1], back[2], type(back[3])] == [ValueError, KeyError, int, vc.Empty]
    with pytest.raises(amber.EncodeError, match=r"builtins\.len is not in types"):
        amber.dumps([len], types=[])
    with pytest.raises(amber.EncodeError, match=r"builtins\.len is not in types"):
        amber.Encoder(types=[int]).encode(len)


def test_dumps_types_checks_the_callable_a_reduce_names():
    box = vc.Box()
    with pytest.raises(amber.EncodeError, match=r"_vector_classes\.Box is not in types"):
        amber.dumps(box, types=[vc.Point])
    partial_types = [vc.Box]
    assert amber.loads(amber.dumps(box, types=partial_types), types=partial_types).state is None


@pytest.mark.parametrize("bad", [[42], ["nope"], [("no-colon", vc.Point)]])
def test_dumps_types_argument_is_checked(bad):
    with pytest.raises((TypeError, ValueError)):
        amber.dumps(1, types=bad)


def test_codec_strict_dumps():
    lenient = Codec(types=[vc.Point])
    strict = Codec(types=[vc.Point], strict_dumps=True)
    tag = vc.Tag("x")
    data = lenient.dumps(tag)
    with pytest.raises(amber.ClassNotAllowedError):
        lenient.loads(data)
    with pytest.raises(amber.EncodeError, match="not in types"):
        strict.dumps(tag)
    assert strict.loads(strict.dumps(vc.Point(1, 2))) == vc.Point(1, 2)


# -- hostile payloads -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "kind", "given"),
    [
        (vc.MyDict, MUTABLE_SUBCLASS, []),
        (vc.MyDict, MUTABLE_SUBCLASS, {1, 2}),
        (vc.MyDict, MUTABLE_SUBCLASS, bytearray(b"x")),
        (vc.Tag, VALUE_SUBCLASS, b"x"),
        (vc.Tag, VALUE_SUBCLASS, 5),
        (vc.Tag, VALUE_SUBCLASS, (1,)),
    ],
    ids=lambda x: type(x).__name__ if not isinstance(x, (type, int)) else str(x),
)
def test_a_builtin_part_that_lies_about_its_type_is_refused(cls, kind, given):
    data = object_payload(MOD, cls.__qualname__, kind, None, [given, None])
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[cls])
    assert (info.value.kind, info.value.offset) == ("bad_state", 3)
    assert cls.__qualname__ in str(info.value) and type(given).__name__ in str(info.value)


def test_library_subclasses_check_their_builtin_part_too():
    class Stamp(datetime.datetime):
        pass

    class Ordered(collections.OrderedDict):  # type: ignore[type-arg]
        pass

    for cls, kind, value in [
        (Stamp, VALUE_SUBCLASS, datetime.date(2024, 1, 2)),
        (Ordered, MUTABLE_SUBCLASS, {"a": 1}),
    ]:
        good = amber.dumps(cls.__new__(cls) if kind == MUTABLE_SUBCLASS else cls(2024, 1, 2))
        assert type(amber.loads(good, types=[cls])) is cls
        body = amber.dumps(value)[3:]
        shape = object_body(__name__, cls.__qualname__, kind)
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(HEADER + shape + body + b"\x90", types=[cls])
        assert info.value.kind == "bad_state", info.value


def test_deeply_nested_subclasses_stop_at_the_depth_limit():
    inner: Any = Nest()
    for _ in range(3000):
        inner = Nest([inner])
    data = amber.dumps(inner, max_depth=10_000)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[Nest])
    assert info.value.kind == "depth_limit"
    assert amber.loads(data, types=[Nest], max_depth=10_000)[0][0].__class__ is Nest


def test_pydantic_state_with_fields_the_model_lacks_is_refused():
    good = amber.dumps(Model(name="a"))
    assert amber.loads(good, types=[Model]) == Model(name="a")
    state = Model(name="a").__getstate__()
    for bad_state, field in [
        ({**state, "__dict__": {**state["__dict__"], "is_admin": True}}, "is_admin"),
        ({**state, "__pydantic_fields_set__": {"name", "role"}}, "role"),
    ]:
        data = object_payload(__name__, "Model", STATE, None, [bad_state])
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(data, types=[Model])
        assert info.value.kind == "bad_state"
        assert f"has no field {field!r}" in str(info.value)


def test_pydantic_load_runs_no_validator():
    class Strict(pydantic.BaseModel):
        count: int

        @pydantic.field_validator("count")
        @classmethod
        def positive(cls, v: int) -> int:
            raise AssertionError("validators must not run on load")

    obj = Strict.model_construct(count=3)
    back = amber.loads(amber.dumps(obj), types=[Strict])
    assert back.count == 3 and back.model_fields_set == obj.model_fields_set


def test_a_refused_reduce_leaves_no_instance_behind():
    """The callable is called only once the arguments are complete and allowed; a payload
    that fails later (here: a bad state) drops the instance, and nothing escapes."""
    Built.made = 0
    data = object_payload(__name__, "Built", REDUCE, None, [(1,), None, None, {1: 2}])
    with pytest.raises(amber.DecodeError):
        amber.loads(data, types=[Built])
    gc.collect()
    assert [o for o in gc.get_objects() if type(o) is Built] == []
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data)
    assert Built.made == 1


def test_newobj_of_a_class_not_allowed_calls_nothing():
    data = object_payload("os", "system", NEWOBJ, None, [("echo hi",), None, None, None])
    with pytest.raises(amber.ClassNotAllowedError) as info:
        amber.loads(data)
    assert (info.value.module, info.value.qualname) == ("os", "system")
    assert "pass it in types=[...]" in str(info.value)


def test_a_namespace_with_a_non_str_attribute_is_refused():
    ns = types.SimpleNamespace(a=1)
    assert amber.loads(amber.dumps(ns)) == ns
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(HEADER + bytes.fromhex("76 17 61 01 02"))
    assert (info.value.kind, info.value.offset) == ("invalid_ext", 3)
    with pytest.raises(amber.EncodeError, match="not a str"):
        bad = types.SimpleNamespace()
        bad.__dict__[1] = 2
        amber.dumps(bad)


def test_exceptions_keep_their_type_arguments_and_chain_but_no_traceback():
    try:
        try:
            raise OSError(2, "no such file", "/x")
        except OSError as inner:
            raise ValueError("wrapped", decimal.Decimal("1.5")) from inner
    except ValueError as outer:
        caught = outer
    back = amber.loads(amber.dumps(caught))
    assert type(back) is ValueError and back.args == ("wrapped", decimal.Decimal("1.5"))
    assert back.__traceback__ is None and caught.__traceback__ is not None
    cause = back.__cause__
    assert type(cause) is FileNotFoundError
    assert (cause.errno, cause.strerror, cause.filename) == (2, "no such file", "/x")
    assert back.__suppress_context__ is True


def test_a_placeholder_cannot_be_a_set_element():
    """Placeholders compare by their state, which fills in after they are made, so they have
    no hash: a set of refused-class instances is ``unhashable`` with placeholders, and exact
    with the class allowed. (Found by the atheris fuzzer when placeholders briefly hashed by
    class: set membership then changed as states filled in.)"""
    data = amber.dumps(frozenset({vc.Tag("a"), vc.Tag("b")}))
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, placeholders=True)
    assert info.value.kind == "unhashable"
    assert amber.loads(data, types=[vc.Tag]) == frozenset({"a", "b"})
    with pytest.raises(TypeError, match="unhashable"):
        hash(amber.Placeholder("m", "C", "STATE", None))
