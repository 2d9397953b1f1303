"""The encoder reads ``__slots__`` fields at their offsets in the instance, and the decoder
stores them there (``slot_offsets.rs``), only while ``getattr`` and ``object.__setattr__``
would do the same: these tests change a class after amber has met one of its instances, and
check the next one goes through what Python would call.

The encode tests decode with ``placeholders=True``, whose ``state`` is the fields as written.
"""

from __future__ import annotations

from typing import Any

import amber
import pytest


def written_state(obj: object) -> dict[str, Any]:
    placeholder = amber.loads(amber.dumps(obj), placeholders=True)
    assert isinstance(placeholder, amber.Placeholder), placeholder
    return dict(placeholder.state)


def test_a_slot_replaced_on_its_class_is_written_as_getattr_reads_it():
    class Reading:
        __slots__ = ("sensor", "value")

    reading = Reading()
    reading.sensor, reading.value = "t1", 20.5
    assert written_state(reading) == {"sensor": "t1", "value": 20.5}
    Reading.value = property(lambda self: -1.0)  # type: ignore[assignment]
    assert reading.value == -1.0
    assert written_state(reading) == {"sensor": "t1", "value": -1.0}


def test_a_slot_replaced_on_a_base_class_is_written_as_getattr_reads_it():
    class Base:
        __slots__ = ("a",)

    class Child(Base):
        __slots__ = ("b",)

    child = Child()
    child.a, child.b = 1, 2
    assert written_state(child) == {"a": 1, "b": 2}
    Base.a = property(lambda self: "from the base")  # type: ignore[assignment]
    assert written_state(child) == {"a": "from the base", "b": 2}


def test_an_unrelated_change_to_the_class_keeps_the_slots_read():
    class Counted:
        __slots__ = ("n",)
        made = 0

    first = Counted()
    first.n = 1
    assert written_state(first) == {"n": 1}
    for n in range(2, 6):
        Counted.made += 1  # a new version tag each time
        item = Counted()
        item.n = n
        assert written_state(item) == {"n": n}
    del first.n
    assert written_state(first) == {}


def test_a_class_with_its_own_getattribute_is_read_through_it():
    class Upper:
        __slots__ = ("name",)

        def __getattribute__(self, attr: str) -> Any:
            value = object.__getattribute__(self, attr)
            return value.upper() if attr == "name" else value

    upper = Upper()
    upper.name = "quiet"
    assert written_state(upper) == {"name": "QUIET"}


def test_an_empty_slot_of_a_class_with_getattr_is_read_through_it():
    class Defaulted:
        __slots__ = ("given", "missing")

        def __getattr__(self, attr: str) -> Any:
            if attr == "missing":
                return "default"
            raise AttributeError(attr)

    item = Defaulted()
    item.given = 1
    assert written_state(item) == {"given": 1, "missing": "default"}


def test_a_slot_descriptor_of_another_class_raises_as_getattr_does():
    class Holder:
        __slots__ = ("value",)

    class Other:
        __slots__ = ("first",)

    holder = Holder()
    holder.value = "kept"
    assert written_state(holder) == {"value": "kept"}
    # The member descriptor of an unrelated class, at the offset Holder's own slot has:
    # getattr refuses to read it on a Holder.
    Holder.value = Other.__dict__["first"]  # type: ignore[assignment]
    with pytest.raises(TypeError):
        _ = holder.value
    with pytest.raises(TypeError):
        amber.dumps(holder)


def test_a_slot_name_pointed_at_another_slot_is_read_from_that_slot():
    class Pair:
        __slots__ = ("left", "right")

    pair = Pair()
    pair.left, pair.right = "L", "R"
    assert written_state(pair) == {"left": "L", "right": "R"}
    # Both names now find the descriptor of `right`.
    Pair.left = Pair.__dict__["right"]  # type: ignore[assignment]
    assert pair.left == "R"
    assert written_state(pair) == {"left": "R", "right": "R"}


# The decoder's classes live at module level: loads(types=[...]) finds a class by its module
# and qualified name.
SETTER_CALLS: list[object] = []


class Gauge:
    __slots__ = ("level",)

    def __init__(self, level: object) -> None:
        self.level = level


class ReplaceGaugeLevel:
    """Its state, set while the payload is decoded, swaps ``Gauge.level`` for a property."""

    def __getstate__(self) -> object:
        return "replace"

    def __setstate__(self, state: object) -> None:
        slot = Gauge.__dict__["level"]

        def store(gauge: Gauge, value: object) -> None:
            SETTER_CALLS.append(value)
            slot.__set__(gauge, value)

        Gauge.level = property(slot.__get__, store)  # type: ignore[assignment]


def test_a_slot_replaced_during_a_decode_is_set_through_what_replaced_it():
    slot = Gauge.__dict__["level"]
    data = amber.dumps([Gauge(1), ReplaceGaugeLevel(), Gauge(2)])
    SETTER_CALLS.clear()
    try:
        first, _, second = amber.loads(data, types=[Gauge, ReplaceGaugeLevel])
    finally:
        Gauge.level = slot  # type: ignore[misc]
    assert (first.level, second.level) == (1, 2)
    assert SETTER_CALLS == [2]


class Wide:
    """What ``Made.__new__`` returns: the same field name, at another place in the instance."""

    __slots__ = ("padding", "value")


class Made:
    __slots__ = ("value",)

    def __new__(cls) -> Any:
        return object.__new__(Wide)


def test_a_slot_is_set_on_what_the_class_new_made_not_on_the_class():
    made = object.__new__(Made)
    made.value = "v"
    decoded = amber.loads(amber.dumps(made), types=[Made])
    assert type(decoded) is Wide
    assert decoded.value == "v"
    assert not hasattr(decoded, "padding")
