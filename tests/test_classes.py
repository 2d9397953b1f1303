"""Class instances (OBJECT): every class kind, the allow-list, placeholders, aliases, schema
evolution, custom types, cycles and sharing through objects, and what dumps refuses."""

from __future__ import annotations

import dataclasses
import enum
import threading
from decimal import Decimal
from typing import Any

import _rich_classes as rc
import amber
import pytest
from _common import HEADER, varint
from _rich_classes import Employee
from _rich_strategies import (
    ATTRS,
    CUSTOM,
    ENUM,
    KIND_NAMES,
    STATE,
    TUPLE_FIELDS,
    object_payload,
    rich_diff,
)

MOD = "_rich_classes"


def roundtrip(value: Any, types: Any = None, **options: Any) -> Any:
    custom = options.pop("custom", None)
    data = amber.dumps(value, custom=custom) if custom is not None else amber.dumps(value)
    out = amber.loads(data, types=types, custom=custom, **options)
    diff = rich_diff(value, out)
    assert diff is None, diff
    return out


def fake_instance(module: str, qualname: str, **attrs: Any) -> Any:
    """An instance of a local class that claims another module and name (dumps looks
    nothing up: it writes the class's __module__ and __qualname__)."""
    cls = type("Fake", (), {})
    cls.__module__ = module
    cls.__qualname__ = qualname
    obj = cls()
    obj.__dict__.update(attrs)
    return obj


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def read_name(data: bytes, pos: int) -> tuple[str, int]:
    n, pos = read_varint(data, pos)
    return data[pos : pos + n].decode("utf-8"), pos + n


def first_shape(data: bytes) -> tuple[str, str, int, list[str] | None]:
    """(module, qualname, kind, fields) of the first inline shape definition in a payload."""
    # the first OBJECT tag (0x77, or 0xF7 when tracked) followed by s = 0; the test values
    # hold no other such byte pair before it
    pos = next(i for i in range(3, len(data) - 1) if data[i] in (0x77, 0xF7) and data[i + 1] == 0)
    module, pos = read_name(data, pos + 2)
    qualname, pos = read_name(data, pos)
    kind = data[pos]
    pos += 1
    fields = None
    if kind in (ATTRS, TUPLE_FIELDS):
        n, pos = read_varint(data, pos)
        fields = []
        for _ in range(n):
            name, pos = read_name(data, pos)
            fields.append(name)
    return module, qualname, kind, fields


# --------------------------------------------------------------------------- API


def test_public_names_and_exception_hierarchy():
    assert issubclass(amber.ClassNotAllowedError, amber.DecodeError)
    assert issubclass(amber.ClassNotAllowedError, ValueError)
    assert not issubclass(amber.ClassNotAllowedError, amber.DecodeLimitError)
    assert isinstance(amber.Placeholder, type)
    ct = amber.CustomType(rc.Money, rc.money_encode, rc.money_decode)
    assert ct is not None


# --------------------------------------------------------------------------- every kind


def _samples() -> dict[str, tuple[Any, list[type]]]:
    private = rc.PrivateSlots("hidden", [1])
    unset = rc.SlotsOnly(1, 2)
    del unset.b
    out: dict[str, tuple[Any, list[type]]] = {
        "employee": (Employee(1001, "Alice", 30), [Employee]),
        "node": (rc.Node({"k": [1, 2]}), [rc.Node]),
        "slots_only": (rc.SlotsOnly(1, "two"), [rc.SlotsOnly]),
        "slots_only_unset": (unset, [rc.SlotsOnly]),
        "private_slots": (private, [rc.PrivateSlots]),
        "slots_and_dict": (rc.SlotsAndDict(1, extra=[2], more="x"), [rc.SlotsAndDict]),
        "slots_inherited": (rc.SlotsChild("b", "c"), [rc.SlotsChild]),
        "with_state": (rc.WithState(1, [2]), [rc.WithState]),
        "with_state_dict": (rc.WithStateDict({"a": 1}), [rc.WithStateDict]),
        "namedtuple_defaults": (rc.Point(1), [rc.Point]),
        "namedtuple_full": (rc.Point([1], (2,), "x"), [rc.Point]),
        "dataclass": (rc.Plain("n", [1, "t"], 2.5), [rc.Plain]),
        "dataclass_defaults": (rc.Plain("n"), [rc.Plain]),
        "dataclass_frozen": (rc.Frozen("k", (1, 2)), [rc.Frozen]),
        "dataclass_slots": (rc.Slotted(1, {"b": 2}), [rc.Slotted]),
        "dataclass_kw_only": (rc.KwOnly(first=1), [rc.KwOnly]),
        "dataclass_nested": (rc.Linked(1, rc.Linked(2, rc.Linked(3))), [rc.Linked]),
    }
    for cls in rc.ENUM_CLASSES:
        for member in cls:
            out[f"enum_{cls.__name__}_{member.name}"] = (member, [cls])
    out["flag_combination"] = (rc.Perm.R | rc.Perm.X, [rc.Perm])
    out["flag_empty"] = (rc.Perm(0), [rc.Perm])
    return out


SAMPLES = _samples()


@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_class_kind_roundtrips(name):
    value, types = SAMPLES[name]
    out = roundtrip(value, types=types)
    assert type(out) is type(value)
    if isinstance(value, enum.Enum):
        assert out is value or (isinstance(value, rc.Perm) and out == value)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_class_kind_roundtrips_with_all_types_and_the_decoder(name):
    value, _ = SAMPLES[name]
    data = amber.dumps(value)
    dec = amber.Decoder(types=rc.ALL_CLASSES)
    for _ in range(2):
        diff = rich_diff(value, dec.decode(data))
        assert diff is None, diff


def test_employee_info_intact():
    out = roundtrip([Employee(1001, "Alice", 30), Employee(1002, "Bob", 25)], types=[Employee])
    assert [e.info() for e in out] == [
        "ID: 1001, Name: Alice, Age: 30",
        "ID: 1002, Name: Bob, Age: 25",
    ]


def test_setstate_is_used():
    out = roundtrip(rc.WithState(1, 2), types=[rc.WithState])
    assert (out.x, out.y, out.cache) == (1, 2, "derived")
    out2 = roundtrip(rc.WithStateDict([3]), types=[rc.WithStateDict])
    assert out2.__dict__ == {"payload": [3]}  # the state's key "p" went through __setstate__


def test_frozen_dataclass_stays_frozen_and_hashable():
    out = roundtrip(rc.Frozen("k", (1,)), types=[rc.Frozen])
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.key = "other"
    assert hash(out) == hash(rc.Frozen("k", (1,)))


def test_slots_unset_stays_unset_and_private_slots_work():
    unset = rc.SlotsOnly(1, 2)
    del unset.b
    out = roundtrip(unset, types=[rc.SlotsOnly])
    assert out.a == 1 and not hasattr(out, "b")
    p = roundtrip(rc.PrivateSlots("s", "p"), types=[rc.PrivateSlots])
    assert p.secret() == "s" and p.public == "p"


def test_dataclass_slots_has_no_dict():
    out = roundtrip(rc.Slotted(1, 2), types=[rc.Slotted])
    assert not hasattr(out, "__dict__")


class _Guarded:
    """Keeps ``x`` in its ``__dict__`` under the name of a property whose setter refuses, as
    a class caching a computed value might: a decoder must store it as pickle does, into the
    instance dict, never through the setter."""

    def __init__(self, x: Any, y: Any) -> None:
        self.__dict__["x"] = x
        self.y = y

    @property
    def x(self) -> Any:
        return ("via property", self.__dict__["x"])

    @x.setter
    def x(self, value: Any) -> None:
        raise AttributeError("x is read-only")


def test_fields_named_like_data_descriptors_go_to_the_instance_dict():
    first = _Guarded(1, [2])
    out = amber.loads(amber.dumps([first, first, _Guarded(3, 4)]), types=[_Guarded])
    assert out[0] is out[1]
    assert vars(out[0]) == {"x": 1, "y": [2]}
    assert out[0].x == ("via property", 1)
    assert vars(out[2]) == {"x": 3, "y": 4}


def test_plain_fields_are_the_instances_own_attributes():
    # Stored through object.__setattr__ (no dict object is made for them): the instance
    # reads, lists and deletes them like attributes its __init__ set.
    out = roundtrip([rc.Plain("p", [1]), Employee(7, "Ann", 30)], types=[rc.Plain, Employee])
    assert vars(out[0]) == {"name": "p", "tags": [1], "score": 0.0}
    out[0].score = 2.5
    assert out[0] == rc.Plain("p", [1], 2.5)
    del out[1].name
    assert vars(out[1]) == {"id": 7, "age": 30}


def test_class_instances_as_dict_keys_and_set_elements():
    value = {rc.Frozen("k", (1,)): 1, rc.Color.RED: 2, rc.Point(1, 2): 3, rc.Priority.HIGH: 4}
    out = roundtrip(
        [value, set(value), frozenset(value)], types=[rc.Frozen, rc.Color, rc.Point, rc.Priority]
    )
    assert list(out[0].values()) == [1, 2, 3, 4]


def test_local_class_with_locals_in_its_qualname():
    class Local:
        def __init__(self, v: Any) -> None:
            self.v = v

    assert "<locals>" in Local.__qualname__
    out = roundtrip([Local(1), Local([2])], types=[Local])
    assert type(out[0]) is Local and out[1].v == [2]


@pytest.mark.skipif(not rc.HAVE_ATTRS, reason="attrs is not installed")
def test_attrs_classes_roundtrip():
    pytest.importorskip("attrs")
    p = rc.AttrsPoint(1, [2], ["t"])
    out = roundtrip(p, types=[rc.AttrsPoint])
    assert type(out) is rc.AttrsPoint
    f = rc.AttrsFrozen("k", {"v": 1})
    out2 = roundtrip(f, types=[rc.AttrsFrozen])
    assert type(out2) is rc.AttrsFrozen
    assert first_shape(amber.dumps(p))[2:] == (ATTRS, ["x", "y", "tags"])


# --------------------------------------------------------------------------- wire layout


def test_employee_exact_bytes():
    def name(s: str) -> bytes:
        return varint(len(s)) + s.encode()

    expected = (
        HEADER
        + bytes([0x77, 0x00])
        + name(MOD)
        + name("Employee")
        + bytes([ATTRS, 3])
        + name("id")
        + name("name")
        + name("age")
        + bytes([0x01, 0x41, 0x41, 0x1E])
    )
    assert amber.dumps(Employee(1, "A", 30)).hex(" ") == expected.hex(" ")


@pytest.mark.parametrize(
    ("value", "qualname", "kind", "fields"),
    [
        (Employee(1, "a", 2), "Employee", ATTRS, ["id", "name", "age"]),
        (rc.Plain("n"), "Plain", ATTRS, ["name", "tags", "score"]),
        (rc.Slotted(1, 2), "Slotted", ATTRS, ["a", "b"]),
        (rc.SlotsAndDict(1, extra=2), "SlotsAndDict", ATTRS, ["extra", "a"]),
        (rc.SlotsChild(1, 2), "SlotsChild", ATTRS, None),
        (rc.WithState(1, 2), "WithState", STATE, None),
        (rc.Point(1), "Point", TUPLE_FIELDS, ["x", "y", "label"]),
        (rc.Color.GREEN, "Color", ENUM, None),
        (rc.Priority.LOW, "Priority", ENUM, None),
        (rc.Perm.W, "Perm", ENUM, None),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_shape_kind_and_fields_on_the_wire(value, qualname, kind, fields):
    module, q, k, f = first_shape(amber.dumps(value))
    assert (module, q) == (MOD, qualname)
    assert KIND_NAMES[k] == KIND_NAMES[kind]
    if fields is not None:
        assert f == fields
    elif kind == ATTRS:
        assert sorted(f or []) == ["base", "child"]


def test_enum_value_follows_the_shape():
    data = amber.dumps(rc.Color.GREEN)
    assert data.endswith(bytes([0x45]) + b"green")


def test_one_shape_per_class_and_field_tuple():
    # In a tuple, each instance is an OBJECT (a list of them would be OBJECT_ROWS).
    staff = tuple(Employee(i, f"n{i}", 20 + i) for i in range(50))
    data = amber.dumps(staff)
    assert data.count(b"Employee") == 1
    assert data.count(MOD.encode()) == 1
    assert data.count(b"\x77\x01") >= 49  # every later instance refers to shape number 0
    # another field tuple (an extra attribute) is another shape, of the same class
    odd = Employee(0, "x", 1)
    odd.extra = True
    data2 = amber.dumps([staff[0], odd, staff[1]])
    assert data2.count(b"Employee") == 2
    out = amber.loads(data2, types=[Employee])
    assert out[1].extra is True and not hasattr(out[0], "extra")


def test_shapes_restart_with_each_payload():
    enc = amber.Encoder()
    a = enc.encode(Employee(1, "a", 2))
    b = enc.encode(Employee(1, "a", 2))
    assert a == b == amber.dumps(Employee(1, "a", 2))
    assert b"Employee" in b


# --------------------------------------------------------------------------- allow-list


@pytest.mark.parametrize(
    "name",
    ["employee", "with_state", "namedtuple_full", "dataclass", "enum_Color_RED", "slots_only"],
)
def test_without_types_class_not_allowed(name):
    value, types = SAMPLES[name]
    cls = types[0]
    data = amber.dumps([value])
    for call in (
        lambda: amber.loads(data),
        lambda: amber.loads(data, types=[rc.Node if cls is not rc.Node else Employee]),
        lambda: amber.Decoder().decode(data),
        lambda: amber.loads(data, types=[]),
        lambda: amber.loads(data, types={}),
    ):
        with pytest.raises(amber.ClassNotAllowedError) as info:
            call()
        e = info.value
        assert isinstance(e, amber.DecodeError)
        assert e.kind == "class_not_allowed"
        assert e.offset == 4  # the OBJECT tag, after the header and the list tag
        assert (e.module, e.qualname) == (MOD, cls.__qualname__)
        assert f"{MOD}.{cls.__qualname__}" in str(e)
        assert "types" in str(e)


def test_a_subclass_or_base_is_not_the_class():
    class Sub(Employee):
        pass

    data = amber.dumps(Sub(1, "a", 2))
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=[Employee])
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(amber.dumps(Employee(1, "a", 2)), types=[Sub])


def test_types_accepts_any_iterable_and_mapping():
    data = amber.dumps(Employee(1, "a", 2))
    for types in (
        [Employee],
        (Employee,),
        {Employee},
        iter([Employee]),
        (c for c in [Employee]),
        {f"{MOD}:Employee": Employee},
        [(f"{MOD}:Employee", Employee)],
    ):
        assert amber.loads(data, types=types).info() == "ID: 1, Name: a, Age: 2"


@pytest.mark.parametrize(
    "types",
    [[42], ["not a class"], [("no-colon-here", Employee)], [(f"{MOD}:Employee", 42)]],
    ids=["int", "str", "alias_without_colon", "alias_to_non_class"],
)
def test_bad_types_argument_is_rejected(types):
    data = amber.dumps(Employee(1, "a", 2))
    with pytest.raises((TypeError, ValueError)) as info:
        amber.loads(data, types=types)
    assert not isinstance(info.value, amber.DecodeError)


def test_unknown_fields_option_is_validated():
    with pytest.raises((TypeError, ValueError)):
        amber.loads(amber.dumps(1), unknown_fields="bogus")


# --------------------------------------------------------------------------- placeholders


def _kind_name(p: Any) -> str:
    return str(p.kind).upper()


def test_placeholders_for_every_kind():
    values = [
        Employee(1, "Ann", 30),
        rc.WithState(1, 2),
        rc.Point(5, 6, "p"),
        rc.Color.BLUE,
    ]
    out = amber.loads(amber.dumps(values), placeholders=True)
    assert all(type(p) is amber.Placeholder for p in out)
    assert [(p.module, p.qualname) for p in out] == [
        (MOD, "Employee"),
        (MOD, "WithState"),
        (MOD, "Point"),
        (MOD, "Color"),
    ]
    assert [_kind_name(p) for p in out] == ["ATTRS", "STATE", "TUPLE_FIELDS", "ENUM"]
    assert out[0].state == {"id": 1, "name": "Ann", "age": 30}
    assert out[1].state == ("v1", 1, 2)
    # design reading: a TUPLE_FIELDS state keeps the field names, like ATTRS
    assert out[2].state == {"x": 5, "y": 6, "label": "p"}
    assert out[3].state == (3, "blue")


def test_placeholders_only_for_classes_not_allowed():
    data = amber.dumps([Employee(1, "a", 2), rc.Node("n")])
    out = amber.loads(data, types=[Employee], placeholders=True)
    assert type(out[0]) is Employee
    assert type(out[1]) is amber.Placeholder and out[1].qualname == "Node"
    out2 = amber.Decoder(placeholders=True).decode(data)
    assert [type(x) for x in out2] == [amber.Placeholder, amber.Placeholder]


def test_placeholders_keep_sharing_and_cycles():
    n = rc.Node("root")
    n.me = n
    data = amber.dumps([n, n])
    out = amber.loads(data, placeholders=True)
    assert out[0] is out[1]
    assert out[0].state["me"] is out[0]


def test_placeholders_write_back_the_same_payload():
    n = rc.Node("root")
    n.me = n
    values = [Employee(1, "Ann", 30), rc.WithState(1, 2), rc.Point(5, 6, "p"), rc.Color.BLUE, n, n]
    data = amber.dumps(values)
    held = amber.loads(data, placeholders=True)
    again = amber.dumps(held)
    assert again == data
    real = amber.loads(again, types=[Employee, rc.WithState, rc.Point, rc.Color, rc.Node])
    assert real[0].info() == "ID: 1, Name: Ann, Age: 30"
    assert real[3] is rc.Color.BLUE
    assert real[4] is real[5] and real[4].me is real[4]


def test_placeholder_for_custom_kind():
    data = amber.dumps(rc.Money(Decimal("1.50"), "EUR"), custom=[rc.money_custom_type()])
    p = amber.loads(data, placeholders=True)
    assert type(p) is amber.Placeholder
    assert (p.module, p.qualname, _kind_name(p)) == (MOD, "Money", "CUSTOM")
    assert p.state == ["1.50", "EUR"]


# --------------------------------------------------------------------------- aliases


def test_alias_reads_a_renamed_class():
    old = fake_instance("old.module", "OldName", id=7, name="Zed", age=40)
    data = amber.dumps([old, old])
    with pytest.raises(amber.ClassNotAllowedError) as info:
        amber.loads(data, types=[Employee])
    assert (info.value.module, info.value.qualname) == ("old.module", "OldName")
    for types in (
        [("old.module:OldName", Employee)],
        {"old.module:OldName": Employee},
        [rc.Node, ("old.module:OldName", Employee)],
    ):
        out = amber.loads(data, types=types)
        assert type(out[0]) is Employee
        assert out[0] is out[1]
        assert out[0].info() == "ID: 7, Name: Zed, Age: 40"


def test_alias_with_nested_qualname_to_a_dataclass():
    old = fake_instance("legacy.pkg", "Outer.Inner", name="x", tags=[1], score=1.5)
    out = amber.loads(amber.dumps(old), types=[("legacy.pkg:Outer.Inner", rc.Plain)])
    assert out == rc.Plain("x", [1], 1.5)


# --------------------------------------------------------------------------- schema evolution


def test_evolution_v1_to_v2_fills_defaults():
    data = amber.dumps([rc.RecordV1("ann", 30), rc.RecordV1("bob", 40)])
    out = amber.loads(data, types=[rc.RecordV2])
    assert out == [rc.RecordV2("ann", 30), rc.RecordV2("bob", 40)]
    assert type(out[0]) is rc.RecordV2
    assert out[0].email == "unknown"
    assert out[0].tags == [] and out[0].tags is not out[1].tags  # default_factory per instance


@pytest.mark.parametrize("how", ["default", "explicit", "decoder"])
def test_evolution_v2_to_v1_ignores_unknown_fields(how):
    data = amber.dumps(rc.RecordV2("ann", 30, "a@example.org", ["t"]))
    if how == "default":
        out = amber.loads(data, types=[rc.RecordV1])
    elif how == "explicit":
        out = amber.loads(data, types=[rc.RecordV1], unknown_fields="ignore")
    else:
        out = amber.Decoder(types=[rc.RecordV1]).decode(data)
    assert type(out) is rc.RecordV1
    assert out.__dict__ == {"name": "ann", "age": 30}


def test_evolution_v2_to_v1_unknown_field_error():
    data = amber.dumps(rc.RecordV2("ann", 30, "a@example.org"))
    for call in (
        lambda: amber.loads(data, types=[rc.RecordV1], unknown_fields="error"),
        lambda: amber.Decoder(types=[rc.RecordV1], unknown_fields="error").decode(data),
    ):
        with pytest.raises(amber.DecodeError) as info:
            call()
        assert info.value.kind == "unknown_field"
        assert "email" in str(info.value)
        assert 3 <= info.value.offset < len(data)


def test_evolution_missing_field_without_default():
    data = amber.dumps(rc.RecordV1("ann", 30))
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[rc.RecordV3])
    assert info.value.kind == "missing_field"
    assert "email" in str(info.value)
    assert "Record" in str(info.value)


def test_evolution_namedtuple_both_ways():
    out = amber.loads(amber.dumps(rc.PointV1(1, 2)), types=[rc.PointV2])
    assert type(out) is rc.PointV2 and tuple(out) == (1, 2, 0)
    data = amber.dumps(rc.PointV2(1, 2, 3))
    back = amber.loads(data, types=[rc.PointV1])
    assert type(back) is rc.PointV1 and tuple(back) == (1, 2)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[rc.PointV1], unknown_fields="error")
    assert info.value.kind == "unknown_field"
    # a NamedTuple field without a default that the payload lacks
    short = object_payload(MOD, "PointV", TUPLE_FIELDS, ["x"], [1])
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(short, types=[rc.PointV1])
    assert info.value.kind == "missing_field"
    assert "y" in str(info.value)


def test_evolution_slots_class():
    data = amber.dumps(rc.SlotsV2(1, 2))
    out = amber.loads(data, types=[rc.SlotsV1])
    assert type(out) is rc.SlotsV1 and out.a == 1 and not hasattr(out, "b")
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[rc.SlotsV1], unknown_fields="error")
    assert info.value.kind == "unknown_field"
    back = amber.loads(amber.dumps(rc.SlotsV1(5)), types=[rc.SlotsV2])
    assert back.a == 5 and not hasattr(back, "b")


def test_evolution_plain_class_accepts_any_attribute():
    data = amber.dumps(rc.PlainV2(1, "more"))
    for mode in ("ignore", "error"):
        out = amber.loads(data, types=[rc.PlainV1], unknown_fields=mode)
        assert type(out) is rc.PlainV1
        assert out.__dict__ == {"a": 1, "extra": "more"}


@pytest.mark.skipif(not rc.HAVE_ATTRS, reason="attrs is not installed")
def test_evolution_attrs_class():
    pytest.importorskip("attrs")
    extra = amber.dumps(fake_instance(MOD, "AttrsPoint", x=1, y=2, tags=["t"], z=3))
    out = amber.loads(extra, types=[rc.AttrsPoint])
    assert out == rc.AttrsPoint(1, 2, ["t"])
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(extra, types=[rc.AttrsPoint], unknown_fields="error")
    assert info.value.kind == "unknown_field" and "z" in str(info.value)
    short = amber.dumps([fake_instance(MOD, "AttrsPoint", x=n) for n in (1, 2)])
    a, b = amber.loads(short, types=[rc.AttrsPoint])
    assert (a, b) == (rc.AttrsPoint(1), rc.AttrsPoint(2))
    assert a.tags is not b.tags  # attrs.Factory: a new list per instance
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(amber.dumps(fake_instance(MOD, "AttrsPoint", y=1)), types=[rc.AttrsPoint])
    assert info.value.kind == "missing_field" and "x" in str(info.value)


def test_evolution_kw_only_and_slots_dataclasses_fill_defaults():
    out = amber.loads(amber.dumps(fake_instance(MOD, "KwOnly", first=1)), types=[rc.KwOnly])
    assert out == rc.KwOnly(first=1) and out.second == "two"
    out2 = amber.loads(amber.dumps(fake_instance(MOD, "Slotted", a=[1])), types=[rc.Slotted])
    assert type(out2) is rc.Slotted and out2.a == [1] and out2.b is None
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(amber.dumps(fake_instance(MOD, "Slotted", b=1)), types=[rc.Slotted])
    assert info.value.kind == "missing_field" and "a" in str(info.value)


def test_evolution_field_order_does_not_matter():
    old = fake_instance(MOD, "Record", age=30, name="ann")  # fields in another order
    out = amber.loads(amber.dumps(old), types=[rc.RecordV2])
    assert out == rc.RecordV2("ann", 30)


# --------------------------------------------------------------------------- custom types


def test_custom_type_roundtrip_runs_both_functions():
    ct = rc.money_custom_type()
    m = rc.Money(Decimal("12.30"), "EUR")
    rc.MONEY_CALLS.clear()
    data = amber.dumps([m, m], custom=[ct])
    assert rc.MONEY_CALLS == ["encode"]
    assert first_shape(data)[:3] == (MOD, "Money", CUSTOM)
    out = amber.loads(data, custom=[ct])
    assert rc.MONEY_CALLS == ["encode", "decode"]  # once: the second is a REF
    assert out[0] is out[1]
    assert type(out[0]) is rc.Money and str(out[0].amount) == "12.30"


def test_custom_decode_not_run_unless_registered_for_decoding():
    ct = rc.money_custom_type()
    data = amber.dumps(rc.Money(Decimal("1"), "USD"), custom=[ct])
    rc.MONEY_CALLS.clear()
    for options in ({}, {"types": [rc.Money]}, {"custom": []}):
        with pytest.raises(amber.ClassNotAllowedError) as info:
            amber.loads(data, **options)
        assert (info.value.module, info.value.qualname) == (MOD, "Money")
    assert rc.MONEY_CALLS == []


def test_custom_kind_is_only_resolved_against_the_custom_registry():
    # a CUSTOM shape naming a class that is allowed in types (but not registered as custom)
    data = object_payload(MOD, "Employee", CUSTOM, values=[[1, "a", 2]])
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data, types=[Employee])


def test_custom_type_with_encoder_and_decoder_objects():
    ct = rc.money_custom_type()
    m = rc.Money(Decimal("-0.00"), "JPY")
    data = amber.Encoder(custom=[ct]).encode({"price": m})
    assert data == amber.dumps({"price": m}, custom=[ct])
    out = amber.Decoder(custom=[ct]).decode(data)
    assert out["price"] == m and str(out["price"].amount) == "-0.00"


def test_custom_type_takes_over_a_builtin_subclass():
    """A CustomType wins over the subclass kinds: the payload names no class to allow."""
    ct = amber.CustomType(rc.MyDict, lambda d: dict(d), lambda s: rc.MyDict(s))
    value = rc.MyDict(a=1)
    data = amber.dumps(value, custom=[ct])
    assert data != amber.dumps(value)
    out = amber.loads(data, custom=[ct])
    assert type(out) is rc.MyDict and out == {"a": 1}


def test_custom_encode_must_return_encodable_state():
    ct = amber.CustomType(rc.Money, lambda m: threading.Lock(), rc.money_decode)
    with pytest.raises(amber.EncodeError):
        amber.dumps(rc.Money(Decimal(1), "X"), custom=[ct])


def test_custom_type_inside_class_instances():
    ct = rc.money_custom_type()
    e = Employee(1, "a", rc.Money(Decimal("3"), "EUR"))
    out = amber.loads(amber.dumps(e, custom=[ct]), types=[Employee], custom=[ct])
    assert out.age == rc.Money(Decimal("3"), "EUR")


# --------------------------------------------------------------------------- cycles and sharing


def test_object_referring_to_itself():
    n = rc.Node("self")
    n.me = n
    out = roundtrip(n, types=[rc.Node])
    assert out.me is out


def test_parent_child_back_pointers():
    root = rc.Node("root")
    kids = [root.add(rc.Node(i)) for i in range(3)]
    kids[0].add(rc.Node("grandchild"))
    out = roundtrip(root, types=[rc.Node])
    assert all(child.parent is out for child in out.children)
    assert out.children[0].children[0].parent is out.children[0]


def test_dataclass_cycle_and_frozen_cycle():
    a = rc.Linked(1)
    b = rc.Linked(2, a)
    a.next = b
    out = roundtrip(a, types=[rc.Linked])
    assert out.next.next is out
    f = rc.Frozen("k", [])
    f.items.append(f)
    out2 = roundtrip(f, types=[rc.Frozen])
    assert out2.items[0] is out2


def test_namedtuple_cycle_through_a_list():
    p = rc.Pair([], "r")
    p.left.append(p)
    out = roundtrip(p, types=[rc.Pair])
    assert out.left[0] is out


def test_shape_numbers_survive_the_supersede_second_pass():
    # a cycle through a NamedTuple makes the encoder write the payload twice (SUPERSEDE); the
    # shapes must be numbered identically on the second pass
    p = rc.Pair([], rc.Employee(1, "a", 2))
    p.left.append(p)
    value = [rc.Node("first"), p, rc.Employee(3, "b", 4), rc.Point(1), p, rc.Node("last")]
    data = amber.dumps(value)
    assert b"\x94" in data  # SUPERSEDE
    out = roundtrip(value, types=[rc.Pair, rc.Employee, rc.Node, rc.Point])
    assert out[1] is out[4] and out[1].left[0] is out[1]
    assert amber.dumps(out) == data


def test_state_kind_cycle():
    w = rc.WithStateDict(None)
    w.payload = [w]
    out = roundtrip(w, types=[rc.WithStateDict])
    assert out.payload[0] is out


def test_shared_instances_stay_shared_and_distinct_stay_distinct():
    e = Employee(1, "a", 2)
    twin = Employee(1, "a", 2)
    out = roundtrip([e, e, {"x": e}, (e,), twin], types=[Employee])
    assert out[0] is out[1] is out[2]["x"] is out[3][0]
    assert out[4] is not out[0]


def test_cycles_with_refs_false_are_refused():
    n = rc.Node("n")
    n.me = n
    with pytest.raises(amber.EncodeError):
        amber.dumps(n, refs=False)
    e = Employee(1, "a", 2)
    out = amber.loads(amber.dumps([e, e], refs=False), types=[Employee])
    assert out[0] is not out[1] and out[0].info() == out[1].info()


# --------------------------------------------------------------------------- refused by dumps


def _refused() -> dict[str, Any]:
    import sys

    def generator() -> Any:
        yield 1

    # Classes, functions and subclasses of builtin types are written now (GLOBAL and the
    # subclass kinds, spec 5.17.3); what has no name or no visible state is still refused.
    return {
        "lambda": lambda: 0,
        "bound_method": Employee(1, "a", 2).info,
        "module": sys,
        "lock": threading.Lock(),
        "generator": generator(),
        "nested_lock": [1, {"a": threading.Lock()}],
    }


REFUSED = _refused()


@pytest.mark.parametrize("name", list(REFUSED))
def test_dumps_refuses(name):
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(REFUSED[name])
    assert isinstance(info.value, TypeError)
    if name == "nested_lock":
        assert info.value.path.startswith("root[1]")


def test_instance_attribute_holding_a_refused_value():
    e = Employee(1, "a", 2)
    e.callback = lambda: None
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(e)
    assert info.value.path == "root.callback"


# --------------------------------------------------------------------------- hostile class code


class _Meddler:
    """Its __getstate__ empties the containers around it while they are being encoded."""

    def __init__(self, victims: list) -> None:
        self.victims = victims

    def __getstate__(self) -> dict:
        for victim in self.victims:
            victim.clear()
        self.victims = []
        return {"done": True}


def test_class_code_that_empties_its_containers_is_refused_not_a_crash():
    inner = [[1, 2], "x" * 50, 3.5]
    outer = [inner, {"k": inner}]
    inner.insert(1, _Meddler([inner, outer]))
    del outer[1]
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([outer, inner])
    assert "changed size" in str(info.value)


@pytest.mark.parametrize("cut", ["clear", "tail", "one_ahead"])
def test_class_code_that_shrinks_a_long_list_of_shared_objects_is_refused(cut):
    # Past the first 4,096 shared objects the encoder reads a list's items ahead of the one
    # it writes (to prefetch their lookups); items cut from under it must still be refused.
    pool = [f"s{n}" for n in range(6000)]
    victim: list = pool * 2
    at = len(victim) - 100

    class Cutter:
        def __getstate__(self) -> dict:
            if cut == "clear":
                victim.clear()
            elif cut == "tail":
                del victim[at + 10 :]
            else:
                del victim[at + 1]
            return {}

    victim.insert(at, Cutter())
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([pool, victim], types=[Cutter])
    assert "changed size" in str(info.value)


class _DictMeddler:
    """Changes the dict it sits in, while that dict is being encoded, one of several ways."""

    def __init__(self, victim: dict, how: str) -> None:
        self.victim = victim
        self.how = how

    def __getstate__(self) -> dict:
        victim, how = self.victim, self.how
        self.victim = None
        if how == "clear":
            victim.clear()
        elif how == "grow":  # a resize: the dict gets a new table
            victim.update((f"new{i}", i) for i in range(100))
        elif how == "delete_passed":
            del victim["a"]
        elif how == "delete_ahead":
            del victim["z"]
        elif how == "int_key":  # str keys only no more: a table of another kind
            del victim["z"]
            victim[7] = "seven"
        elif how == "same_size":  # one key out, another in: the count still matches
            del victim["z"]
            victim["y"] = "why"
        return {"how": how}


@pytest.mark.parametrize(
    "how", ["clear", "grow", "delete_passed", "delete_ahead", "int_key", "same_size"]
)
def test_class_code_that_changes_the_dict_being_encoded(how):
    victim: dict = {"a": 1}
    victim["m"] = _DictMeddler(victim, how)
    victim["z"] = [1, 2]
    try:
        data = amber.dumps(victim)
    except amber.EncodeError as e:
        assert "changed size" in str(e)
        return
    # What was written must decode: the items the walk met, each once.
    out = amber.loads(data, types=[_DictMeddler])
    assert out["a"] == 1 and out["m"].how == how
    assert len(out) == len(set(out))


def test_class_code_that_drops_the_last_reference_to_its_parent():
    holder = {"data": None}
    child = _Meddler([])

    class Dropper:
        def __getstate__(self) -> dict:
            holder["data"] = None  # the list being encoded loses its only other holder
            return {"gone": True}

    holder["data"] = [Dropper(), [1.5, "abc"], child]
    payload = amber.dumps(holder, refs=True)
    back = amber.loads(payload, types=[Dropper, _Meddler])
    assert isinstance(back["data"][0], Dropper)
    assert back["data"][1] == [1.5, "abc"]
