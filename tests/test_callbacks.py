"""The Python functions the extension calls, and the clock it reads, named in one place.

`_callbacks()` is the extension's own list (crates/amber-py/src/callbacks.rs); each entry
must be a function of amber's Python side, or the first call that needs it would fail in a
user's program instead of here.
"""

from __future__ import annotations

import importlib
import inspect

import amber
import amber._amber
import pytest

SECRET = b"k" * 32
T0 = 1_700_000_000


def test_every_callback_exists_and_is_a_function() -> None:
    callbacks = amber._amber._callbacks()
    assert len(callbacks) == len(set(callbacks)), "a callback is listed twice"
    # The three modules of amber's Python side that the extension calls into.
    assert {module for module, _ in callbacks} == {
        "amber._classes",
        "amber._dtypes",
        "amber._clock",
    }
    for module_name, name in callbacks:
        function = getattr(importlib.import_module(module_name), name, None)
        assert inspect.isfunction(function), f"{module_name}.{name} is not a function"


def test_the_class_callbacks_are_all_the_functions_the_rust_side_reaches() -> None:
    """A function of amber._classes that the list leaves out and nothing in Python calls
    would be dead code or a callback the table forgot."""
    import amber._classes as classes

    listed = {name for module, name in amber._amber._callbacks() if module == classes.__name__}
    public = {
        name
        for name, value in vars(classes).items()
        if inspect.isfunction(value)
        and value.__module__ == classes.__name__
        and not name.startswith("_")
    }
    source = inspect.getsource(classes)
    unlisted = {name for name in public - listed if source.count(f"{name}(") < 2}
    assert not unlisted, f"amber._classes functions nothing calls: {sorted(unlisted)}"
    assert listed <= public


def test_dumps_takes_the_timestamp_from_the_clock_given() -> None:
    payload = amber.dumps([1], key=SECRET, timestamp=True, clock=lambda: T0)
    assert amber.verify(payload, key=SECRET)["timestamp"] == T0
    encoder = amber.Encoder(key=SECRET, timestamp=True, clock=lambda: T0 + 5)
    assert amber.verify(encoder.encode([1]), key=SECRET)["timestamp"] == T0 + 5


def test_loads_judges_max_age_by_the_clock_given_on_every_call() -> None:
    payload = amber.dumps({"a": 1}, key=SECRET, timestamp=True, clock=lambda: T0)
    assert amber.loads(payload, key=SECRET, max_age=10, clock=lambda: T0 + 10) == {"a": 1}
    with pytest.raises(amber.SignatureError) as caught:
        amber.loads(payload, key=SECRET, max_age=10, clock=lambda: T0 + 11)
    assert caught.value.kind == "expired"
    now = [T0]
    decoder = amber.Decoder(key=SECRET, max_age=10, clock=lambda: now[0])
    assert decoder.decode(payload) == {"a": 1}
    now[0] = T0 + 60
    with pytest.raises(amber.SignatureError):
        decoder.decode(payload)
    with pytest.raises(amber.SignatureError):
        amber.verify(payload, key=SECRET, max_age=10, clock=lambda: T0 + 60)


def test_the_clock_given_is_kept_and_shown() -> None:
    def clock() -> int:
        return T0

    assert amber.Encoder(key=SECRET, timestamp=True, clock=clock).clock is clock
    assert amber.Decoder(key=SECRET, max_age=1, clock=clock).clock is clock
    assert amber.Encoder().clock is None
    assert amber.Decoder().clock is None


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: amber.dumps(1, key=SECRET, timestamp=True, clock=5), TypeError, "clock must be"),
        (lambda: amber.dumps(1, clock=lambda: T0), ValueError, "clock needs timestamp=True"),
        (lambda: amber.loads(b"", clock=lambda: T0), ValueError, "clock needs max_age="),
        (
            lambda: amber.dumps(1, key=SECRET, timestamp=True, clock=lambda: -1),
            ValueError,
            "clock() must return seconds since 1970",
        ),
        (
            lambda: amber.dumps(1, key=SECRET, timestamp=True, clock=lambda: "now"),
            ValueError,
            "clock() must return seconds since 1970",
        ),
    ],
)
def test_a_bad_clock_is_refused_with_its_name(call, error, message) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_an_exception_in_the_clock_reaches_the_caller() -> None:
    def broken() -> int:
        raise RuntimeError("clock broke")

    with pytest.raises(RuntimeError, match="clock broke"):
        amber.dumps(1, key=SECRET, timestamp=True, clock=broken)
