"""graph_diff's rules for exceptions, namespaces, builtin subclasses, struct sequences,
partials, msgspec Structs, pydantic models and identity-only objects.

Each rule is checked both ways: an exact copy (made by hand or by pickle) passes, and a copy
that differs in one part is reported with that part's path.
"""

from __future__ import annotations

import builtins
import collections
import datetime
import decimal
import enum
import functools
import os
import time
import types
from typing import Any

import msgspec
import pydantic
import pytest
from _class_patterns import pickle_copy
from amber._compare import _EXCEPTION_FIELDS, graph_diff


def pickled(value: Any) -> Any:
    # Plain pickle, whatever a Dask or Celery test installed into copyreg before (tblib).
    return pickle_copy(value)


def assert_reported(expected: object, actual: object, *fragments: str) -> None:
    message = graph_diff(expected, actual)
    assert message is not None, "the difference went unnoticed"
    for fragment in fragments:
        assert fragment in message, message


# --------------------------------------------------------------------------- exceptions


def test_exception_args_are_compared_not_equality():
    assert graph_diff(ValueError("bad", 3), ValueError("bad", 3)) is None
    assert_reported(ValueError("bad", 3), ValueError("bad", 4), "root.args[1]", "expected 3")


def test_exception_type_must_match():
    assert_reported(KeyError("k"), LookupError("k"), "expected KeyError, got LookupError")


def test_exception_instance_dict_is_compared():
    exp, act = RuntimeError("x"), RuntimeError("x")
    exp.job_id = 7  # type: ignore[attr-defined]
    act.job_id = 8  # type: ignore[attr-defined]
    assert_reported(exp, act, "root.job_id", "expected 7, got 8")


def test_exception_notes_are_compared():
    # __notes__ is what add_note (3.11+) appends to; set directly, it is the same attribute on
    # every supported Python.
    exp, act = ValueError("x"), ValueError("x")
    exp.__notes__ = ["while loading row 3"]
    act.__notes__ = ["while loading row 3"]
    assert graph_diff(exp, act) is None
    act.__notes__[0] = "while loading row 4"
    assert_reported(exp, act, "root.__notes__[0]")
    assert_reported(exp, ValueError("x"), "attributes differ", "__notes__")


def test_oserror_fields_outside_args_are_compared():
    exp = FileNotFoundError(2, "No such file", "a.txt", None)
    assert graph_diff(exp, pickled(exp)) is None
    act = FileNotFoundError(2, "No such file", "a.txt", None)
    act.filename = "b.txt"
    assert_reported(exp, act, "root.filename", "a.txt")
    act = FileNotFoundError(2, "No such file", "a.txt", None)
    act.errno = 13
    assert_reported(exp, act, "root.errno", "expected 2, got 13")


def test_importerror_name_and_path_are_compared():
    exp = ImportError("no module", name="plugins.x", path="plugins/x.py")
    assert graph_diff(exp, pickled(exp)) is None
    assert_reported(exp, ImportError("no module", name="plugins.x"), "root.path")


def test_stop_iteration_value_and_system_exit_code_are_compared():
    exp = StopIteration("done")
    act = StopIteration("done")
    act.value = "other"
    assert_reported(exp, act, "root.value", "expected 'done', got 'other'")
    code = SystemExit(3)
    other = SystemExit(3)
    other.code = 4
    assert_reported(code, other, "root.code", "expected 3, got 4")


def test_exception_group_members_are_compared():
    group = getattr(builtins, "ExceptionGroup", None)
    if group is None:
        # Python 3.10 has no exception groups: no rule may name them.
        assert all(cls.__name__ != "BaseExceptionGroup" for cls, _ in _EXCEPTION_FIELDS)
        return
    exp = group("batch", [ValueError(1), TypeError("t")])
    assert graph_diff(exp, pickled(exp)) is None
    act = group("batch", [ValueError(1), TypeError("u")])
    assert_reported(exp, act, "root.", "expected 't', got 'u'")


def test_exception_cause_context_and_suppression_are_compared():
    cause = ConnectionError("reset")
    exp = RuntimeError("fetch failed")
    exp.__cause__ = cause
    act = RuntimeError("fetch failed")
    act.__cause__ = ConnectionError("reset")
    assert graph_diff(exp, act) is None
    # pickle drops the chain: the copy must be reported
    assert_reported(exp, pickled(exp), "root.__cause__", "expected ConnectionError, got NoneType")
    act.__cause__ = ConnectionError("refused")
    assert_reported(exp, act, "root.__cause__.args[0]")
    # `raise ... from None`: no cause, and the context hidden
    suppressed = RuntimeError("x")
    suppressed.__suppress_context__ = True
    assert_reported(suppressed, RuntimeError("x"), "root.__suppress_context__", "expected True")
    ctx = RuntimeError("x")
    ctx.__context__ = KeyError("k")
    assert_reported(ctx, RuntimeError("x"), "root.__context__")


def test_exception_traceback_is_not_compared():
    try:
        raise ValueError("raised")
    except ValueError as error:
        raised = error
    assert raised.__traceback__ is not None
    assert graph_diff(raised, ValueError("raised")) is None


def test_exceptions_keep_identity():
    shared = ValueError("once")
    assert graph_diff([shared, shared], pickled([shared, shared])) is None
    assert_reported([shared, shared], [ValueError("once"), ValueError("once")], "same object")


def test_exception_cycle_through_context_terminates():
    first, second = ValueError("a"), ValueError("b")
    first.__context__ = second
    second.__context__ = first
    copy_first, copy_second = ValueError("a"), ValueError("b")
    copy_first.__context__ = copy_second
    copy_second.__context__ = copy_first
    assert graph_diff(first, copy_first) is None
    copy_second.__context__ = ValueError("a")
    assert_reported(first, copy_first, "root.__context__.__context__", "same object")


# --------------------------------------------------------------------------- namespaces


def test_simple_namespace_compares_attributes_and_keeps_cycles():
    exp = types.SimpleNamespace(host="db", port=5432)
    exp.me = exp
    assert graph_diff(exp, pickled(exp)) is None
    act = types.SimpleNamespace(host="db", port=5433)
    act.me = act
    assert_reported(exp, act, "root.port", "expected 5432, got 5433")


# --------------------------------------------------------------------------- builtin subclasses


class Tagged(int):
    pass


class Stamp(datetime.datetime):
    pass


class Day(datetime.date):
    pass


class Span(datetime.timedelta):
    pass


class Money(decimal.Decimal):
    pass


class Recent(collections.deque):  # type: ignore[type-arg]
    pass


class Label(str):
    pass


def test_scalar_subclass_value_and_attributes_are_compared():
    exp, act = Tagged(5), Tagged(5)
    exp.unit = act.unit = "ms"  # type: ignore[attr-defined]
    assert graph_diff(exp, act) is None
    act.unit = "s"  # type: ignore[attr-defined]
    assert_reported(exp, act, "root.unit")
    assert_reported(Tagged(5), Tagged(6), "expected 5, got 6")


def test_scalar_subclass_with_attributes_keeps_identity():
    shared = Label("x")
    shared.lang = "en"  # type: ignore[attr-defined]
    twin, other = Label("x"), Label("x")
    twin.lang = other.lang = "en"  # type: ignore[attr-defined]
    assert graph_diff([shared, shared], [twin, twin]) is None
    assert_reported([shared, shared], [twin, other], "root[1]", "same object")


@pytest.mark.parametrize(
    ("cls", "first", "second"),
    [
        (Stamp, (2024, 5, 1, 12), (2024, 5, 1, 13)),
        (Day, (2024, 5, 1), (2024, 5, 2)),
        (Span, (1, 30), (1, 31)),
        (Money, ("1.50",), ("1.5",)),
    ],
    ids=["datetime", "date", "timedelta", "Decimal"],
)
def test_value_type_subclass_value_and_attributes_are_compared(
    cls: Any, first: tuple[Any, ...], second: tuple[Any, ...]
):
    exp, act = cls(*first), cls(*first)
    exp.note = act.note = "n"
    assert graph_diff(exp, act) is None
    act.note = "m"
    assert_reported(exp, act, "root.note")
    differs = cls(*second)
    differs.note = "n"
    assert_reported(exp, differs, "root: expected")


def test_deque_subclass_items_maxlen_and_attributes_are_compared():
    exp = Recent([1, 2], maxlen=5)
    exp.source = "ws"  # type: ignore[attr-defined]
    assert graph_diff(exp, pickled(exp)) is None
    act = Recent([1, 3], maxlen=5)
    act.source = "ws"  # type: ignore[attr-defined]
    assert_reported(exp, act, "root[1]")
    act = Recent([1, 2], maxlen=6)
    act.source = "ws"  # type: ignore[attr-defined]
    assert_reported(exp, act, "maxlen 5")
    act = Recent([1, 2], maxlen=5)
    act.source = "http"  # type: ignore[attr-defined]
    assert_reported(exp, act, "root.source")


# --------------------------------------------------------------------------- struct sequences


def test_struct_time_named_only_fields_are_compared():
    exp = time.localtime(1_700_000_000)
    assert graph_diff(exp, pickled(exp)) is None
    # the same nine items without tm_zone / tm_gmtoff
    assert_reported(exp, time.struct_time(tuple(exp)), "root.tm_zone")
    assert_reported(exp, time.localtime(1_700_000_001), "root[5]")


def test_stat_result_named_only_fields_are_compared():
    exp = os.stat(__file__)
    assert graph_diff(exp, pickled(exp)) is None
    fields = exp.__reduce__()[1]
    hidden = dict(fields[1], st_mtime_ns=fields[1]["st_mtime_ns"] + 1)
    assert_reported(exp, os.stat_result(fields[0], hidden), "root.st_mtime_ns")


# --------------------------------------------------------------------------- partial


def notify(channel: str, text: str, *, retries: int = 0) -> str:
    return f"{channel}:{text}:{retries}"


def test_partial_func_args_keywords_and_dict_are_compared():
    exp = functools.partial(notify, "ops", retries=3)
    assert graph_diff(exp, pickled(exp)) is None
    assert_reported(exp, functools.partial(print, "ops", retries=3), "root.func")
    assert_reported(exp, functools.partial(notify, "dev", retries=3), "root.args[0]")
    assert_reported(exp, functools.partial(notify, "ops", retries=2), 'root.keywords["retries"]')
    exp.owner = "billing"  # type: ignore[attr-defined]
    assert_reported(exp, functools.partial(notify, "ops", retries=3), "attributes differ")


# --------------------------------------------------------------------------- msgspec


class Address(msgspec.Struct):
    city: str
    zip: str


class Customer(msgspec.Struct, frozen=True):
    name: str
    address: Address


def test_msgspec_struct_fields_are_compared():
    exp = Customer("Ann", Address("Oslo", "0150"))
    assert graph_diff(exp, pickled(exp)) is None
    assert_reported(exp, Customer("Ann", Address("Oslo", "0151")), "root.address.zip")


def test_msgspec_struct_keeps_identity():
    home = Address("Oslo", "0150")
    exp = [home, home]
    assert graph_diff(exp, pickled(exp)) is None
    assert_reported(exp, [home, Address("Oslo", "0150")], "root[1]", "same object")


# --------------------------------------------------------------------------- pydantic


class Profile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")

    name: str
    active: bool = True
    _token: str = pydantic.PrivateAttr(default="t0")


def test_pydantic_field_values_are_compared():
    exp = Profile(name="Ann")
    assert graph_diff(exp, pickled(exp)) is None
    assert_reported(exp, Profile(name="Bob"), 'root.__dict__["name"]')


def test_pydantic_fields_set_is_compared():
    exp = Profile(name="Ann")
    act = Profile(name="Ann", active=True)  # same values, but `active` was set explicitly
    assert_reported(exp, act, "root.__pydantic_fields_set__")


def test_pydantic_extra_and_private_are_compared():
    exp = Profile(name="Ann", plan="pro")
    assert_reported(exp, Profile(name="Ann", plan="free"), 'root.__pydantic_extra__["plan"]')
    act = Profile(name="Ann", plan="pro")
    act._token = "t1"
    assert_reported(exp, act, 'root.__pydantic_private__["_token"]')


# --------------------------------------------------------------------------- identity only


class Mode(enum.IntEnum):
    READ = 1


def test_classes_functions_and_enum_members_compare_by_identity():
    assert graph_diff([Profile, notify, Mode.READ], [Profile, notify, Mode.READ]) is None

    def notify_copy() -> None:
        pass

    assert_reported(notify, notify_copy, "root: expected the object")
    # equal as ints, but not the member
    assert_reported(Mode.READ, Tagged(1), "expected")
    assert_reported({"cls": Profile}, {"cls": Customer}, 'root["cls"]')
