"""Hostile class and EXT payloads.

- Payloads naming os.system, builtins.eval, subprocess.Popen, ... must raise DecodeError (or give
  a Placeholder when asked) without importing a module, looking a name up or running any code:
  checked in a child interpreter (``set(sys.modules)`` before/after, so nothing else imports
  meanwhile) with a canary class whose every hook would leave a mark.
- Malformed names (NUL, dots, empty, overlong, invalid UTF-8, whitespace) -> ``bad_name``;
  malformed shapes -> ``bad_shape``; malformed EXT blobs -> ``invalid_ext``.
- Truncations and random mutations of class and EXT payloads never crash (child interpreter).

Hostile payloads are made two ways: (a) by dumping an instance of a local class whose
``__module__``/``__qualname__`` were set to, e.g., "os"/"system" (dumps looks nothing up), and
(b) byte by byte, following the design's wire layout (``_rich_strategies.object_payload``).
"""

from __future__ import annotations

import array
import base64
import collections
import datetime as dt
import enum
import ipaddress
import json
import os
import pathlib
import sys
import unicodedata
import uuid
from collections import Counter, OrderedDict, defaultdict, deque
from decimal import Decimal
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

import _rich_classes as rc
import _vector_classes
import amber
import pytest
from _common import ERROR_KINDS, HEADER, LIMIT_KINDS, run_python, varint
from _ref import zigzag
from _rich_strategies import (
    ATTRS,
    CUSTOM,
    ENUM,
    EXT_CODES,
    HAVE_NUMPY,
    NEW_ERROR_KINDS,
    NEWOBJ,
    STATE,
    TUPLE_FIELDS,
    ext_composite_payload,
    ext_payload,
    object_body,
    object_payload,
    rich_diff,
    rows_payload,
    shape_def,
    wire_name,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

ALL_KINDS = ERROR_KINDS | NEW_ERROR_KINDS
MOD = "_rich_classes"
MUTATIONS = int(os.environ.get("AMBER_RICH_MUTATIONS", "6000"))
FUZZ_SEED = int(os.environ.get("AMBER_FUZZ_SEED", "20240601"))
CONSTRUCTION_MARKS = (
    "__new__",
    "__init__",
    "metaclass __call__",
    "__setstate__",
    "__init_subclass__",
    "__reduce_ex__",
)


def fake_instance(module: str, qualname: str, **attrs: Any) -> Any:
    cls = type("Fake", (), {})
    cls.__module__ = module
    cls.__qualname__ = qualname
    obj = cls()
    obj.__dict__.update(attrs)
    return obj


def qualname_offset(module: bytes) -> int:
    """Offset of the qualname's length varint in HEADER + 77 00 <module> <qualname> ..."""
    return 5 + len(varint(len(module))) + len(module)


def run_child_json(code: str, *args: str, env: dict[str, str] | None = None) -> Any:
    proc = run_python(code, *args, env=env, timeout=300)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"child interpreter failed (exit code {proc.returncode}; negative = killed by signal)\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    )
    return json.loads(lines[-1])


# --------------------------------------------------------------------------- hostile names

TARGETS = [
    ("os", "system"),
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("builtins", "__import__"),
    ("subprocess", "Popen"),
    ("posix", "system"),
    ("os.path", "join"),
    ("importlib", "import_module"),
    ("pickle", "loads"),
    (MOD, "Canary"),  # in the module of allowed classes, but not allowed itself
    (MOD, "NoSuchClass"),  # the module's __getattr__ would leave a mark
    (MOD, "money_decode"),  # a function next to allowed classes
    (MOD, "Employee.info"),  # a method of an allowed class
    (MOD, "Employee.__init__.__globals__"),
    (MOD, "Employee.__class__"),
]

# Field names and values that would do harm if a decoder passed them to the named callable.
HARM_FIELDS = ["cmd"]
HARM_VALUES = ["echo amber-canary > amber-canary.txt"]


def _expect_not_allowed(module: str, qualname: str) -> dict[str, Any]:
    return {"kind": "class_not_allowed", "offset": 3, "module": module, "qualname": qualname}


def _hostile_cases() -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = {}

    def add(name: str, data: Any, opts: str, expect: dict[str, Any]) -> None:
        assert name not in cases, name
        if data is False:
            return
        cases[name] = {"hex": None if data is None else data.hex(), "opts": opts, "expect": expect}

    for module, qualname in TARGETS:
        label = f"{module}.{qualname}"
        # (a) dumps of a local class that claims the name
        try:
            fake = amber.dumps(fake_instance(module, qualname, cmd=HARM_VALUES[0]))
        except amber.EncodeError:
            # a class claiming to be in "builtins" may be taken for a builtin type and refused;
            # those names are covered byte by byte below
            if module == "builtins":
                fake = False
            else:
                fake = None
        for opts in ("none", "employee", "all", "decoder_employee"):
            add(f"fake/{label}/{opts}", fake, opts, _expect_not_allowed(module, qualname))
        add(
            f"fake/{label}/placeholders",
            fake,
            "placeholders",
            {"placeholder": [module, qualname, "ATTRS"]},
        )
        # (b) byte-level, every kind
        for kind, kname in [
            (ATTRS, "ATTRS"),
            (STATE, "STATE"),
            (TUPLE_FIELDS, "TUPLE_FIELDS"),
            (ENUM, "ENUM"),
            (CUSTOM, "CUSTOM"),
        ]:
            fields = HARM_FIELDS if kind in (ATTRS, TUPLE_FIELDS) else None
            data = object_payload(module, qualname, kind, fields, HARM_VALUES)
            opts = "custom" if kind == CUSTOM else "employee"
            add(f"bytes/{label}/{kname}", data, opts, _expect_not_allowed(module, qualname))
            add(
                f"bytes/{label}/{kname}/placeholders",
                data,
                "employee_placeholders",
                {"placeholder": [module, qualname, kname]},
            )

    # a CUSTOM shape naming a class that is allowed in types but not registered as custom
    add(
        "bytes/custom_kind_for_allowed_class",
        object_payload(MOD, "Employee", CUSTOM, None, [[1, "a", 2]]),
        "custom",
        _expect_not_allowed(MOD, "Employee"),
    )
    # a hostile class nested deep inside allowed data: the error is at its OBJECT tag
    nested = (
        HEADER
        + bytes([0x59, 0x61, 0x41])
        + b"k"
        + object_body("os", "system", ATTRS, HARM_FIELDS, HARM_VALUES)
    )
    expect = {**_expect_not_allowed("os", "system"), "offset": 7}
    add("bytes/nested_in_list_and_dict", nested, "employee", expect)

    # ---- names that are not dotted names / not strict UTF-8 / out of range: bad_name
    bad = {
        "nul": b"os\x00",
        "only_nul": b"\x00",
        "leading_dot": b".os",
        "trailing_dot": b"os.",
        "double_dot": b"os..path",
        "only_dot": b".",
        "empty": b"",
        "overlong_1025": b"a" * 1025,
        "overlong_dotted": b"a." * 512 + b"a",
        "invalid_utf8_ff": b"\xff",
        "invalid_utf8_overlong_slash": b"os\xc0\xaf",
        "surrogate_utf8": b"\xed\xa0\x80",
        "truncated_utf8": b"os\xe2\x82",
        "space": b"os system",
        "tab": b"os\tpath",
        "newline": b"os\n",
        "escape_control": b"os\x1b",
        "del_control": b"os\x7f",
    }
    for label, raw in bad.items():
        add(
            f"bad_name/module/{label}",
            object_payload(raw, "system", ATTRS, HARM_FIELDS, HARM_VALUES),
            "employee",
            {"kind": "bad_name", "offset": 5},
        )
        add(
            f"bad_name/module/{label}/placeholders",
            object_payload(raw, "system", ATTRS, HARM_FIELDS, HARM_VALUES),
            "placeholders",
            {"kind": "bad_name", "offset": 5},
        )
        add(
            f"bad_name/qualname/{label}",
            object_payload("os", raw, ATTRS, HARM_FIELDS, HARM_VALUES),
            "employee",
            {"kind": "bad_name", "offset": qualname_offset(b"os")},
        )

    # ---- valid edge names: not bad_name, just not allowed
    for label, module, qualname in [
        ("module_1024_bytes", "a" * 1024, "C"),
        ("qualname_1024_bytes", "m", "b" * 1024),
        ("locals_segment", "pkg.mod", "f.<locals>.C"),
        ("unicode_identifiers", "mod\u00fcl\u00e9", "Kl\u00e4sse"),
    ]:
        add(
            f"valid_name/{label}",
            object_payload(module, qualname, ATTRS, HARM_FIELDS, HARM_VALUES),
            "employee",
            _expect_not_allowed(module, qualname),
        )

    # ---- field names (class allowed, so only the field name can be wrong)
    def employee_shape(fields: list[bytes], values: list[Any]) -> bytes:
        return object_payload(MOD, "Employee", ATTRS, fields, values)

    field_start = 5 + len(wire_name(MOD)) + len(wire_name("Employee")) + 2  # kind, count
    for label, raw in [
        ("empty", b""),
        ("overlong_1025", b"f" * 1025),
        ("invalid_utf8", b"\xff"),
        ("surrogate_utf8", b"\xed\xb0\x80"),
    ]:
        add(
            f"bad_name/field/{label}",
            employee_shape([raw], [1]),
            "employee",
            {"kind": "bad_name", "offset": field_start},
        )
        add(
            f"bad_name/field_second/{label}",
            employee_shape([b"id", raw], [1, 2]),
            "employee",
            {"kind": "bad_name", "offset": field_start + 3},
        )
    add(
        "bad_shape/duplicate_fields",
        employee_shape([b"id", b"id"], [1, 2]),
        "employee",
        {"kind": "bad_shape"},
    )
    for kind in (5, 0x7F, 0xFF):
        add(
            f"bad_shape/unknown_kind_{kind}",
            HEADER + bytes([0x77, 0]) + wire_name(MOD) + wire_name("Employee") + bytes([kind]),
            "employee",
            {"kind": "bad_shape"},
        )
    add(
        "bad_shape/undefined_shape",
        HEADER + b"\x77\x01",
        "employee",
        {"kind": "bad_shape", "offset": 3},
    )
    defined = object_body(MOD, "Employee", ATTRS, [b"id"], [1])
    add(
        "bad_shape/undefined_second_shape",
        HEADER + b"\x5a" + defined + b"\x77\x02\x01",
        "employee",
        {"kind": "bad_shape", "offset": 4 + len(defined)},
    )
    add(
        "bad_shape/too_many_fields",
        HEADER
        + bytes([0x77, 0])
        + wire_name(MOD)
        + wire_name("Employee")
        + bytes([ATTRS])
        + varint(65536)
        + b"\x01f" * 65536,
        "employee",
        {"kinds": ["bad_shape", "length_too_large"]},
    )
    add(
        "bad_shape/field_count_beyond_input",
        HEADER
        + bytes([0x77, 0])
        + wire_name(MOD)
        + wire_name("Employee")
        + bytes([ATTRS])
        + varint(1000)
        + b"\x01a",
        "employee",
        {"kinds": ["bad_shape", "length_too_large", "truncated"]},
    )
    add(
        "truncated/module_name",
        HEADER + bytes([0x77, 0, 50]) + b"os",
        "employee",
        {"kind": "truncated"},
    )

    # ---- a kind that does not fit the allowed class: rejected before anything is built
    add(
        "mismatch/enum_kind_for_canary",
        object_payload(MOD, "Canary", ENUM, None, [1]),
        "canary",
        {"error": True, "no_construction": True},
    )
    add(
        "mismatch/tuple_fields_kind_for_canary",
        object_payload(MOD, "Canary", TUPLE_FIELDS, ["a"], [1]),
        "canary",
        {"error": True, "no_construction": True},
    )
    add(
        "mismatch/attrs_kind_for_enum",
        object_payload(MOD, "Color", ATTRS, ["_value_", "_name_"], [99, "FORGED"]),
        "all",
        {"error": True},
    )
    add(
        "mismatch/attrs_kind_for_namedtuple",
        object_payload(MOD, "Point", ATTRS, ["x"], [1]),
        "all",
        {"error": True},
    )
    add(
        "mismatch/tuple_fields_kind_for_plain_class",
        object_payload(MOD, "Employee", TUPLE_FIELDS, ["id", "name", "age"], [1, "a", 2]),
        "all",
        {"error": True},
    )
    add(
        "mismatch/state_kind_for_plain_class",
        object_payload(MOD, "Employee", STATE, None, [{"id": 1}]),
        "all",
        {"type_or_error": f"{MOD}.Employee"},
    )
    add(
        "enum/unknown_value",
        object_payload(MOD, "Color", ENUM, None, [99]),
        "all",
        {"error": True},
    )
    add(
        "enum/unhashable_value",
        object_payload(MOD, "Color", ENUM, None, [[1]]),
        "all",
        {"error": True},
    )
    add(
        "enum/flag_value_out_of_range",
        object_payload(MOD, "Perm", ENUM, None, [64]),
        "all",
        {"error": True},
    )
    add(
        "dunder_fields/employee",
        object_payload(
            MOD,
            "Employee",
            ATTRS,
            ["__class__", "__dict__", "info", "__setstate__"],
            ["os.system", {"x": 1}, "not a method", "nope"],
        ),
        "all",
        {"type_or_error": f"{MOD}.Employee"},
    )
    # OBJECT_ROWS: each row is an instance built as an ATTRS OBJECT is, with the same checks.
    add(
        "rows/dunder_fields",
        rows_payload(
            MOD,
            "Employee",
            ["__class__", "__dict__", "info", "__setstate__"],
            [["os.system", {"x": 1}, "not a method", "nope"]] * 2,
        ),
        "all",
        {"type_or_error": "builtins.list"},
    )
    add(
        "rows/canary_not_allowed",
        rows_payload(MOD, "Canary", HARM_FIELDS, [HARM_VALUES] * 2),
        "all",
        _expect_not_allowed(MOD, "Canary"),
    )
    add(
        "rows/os_system_as_reduce",
        rows_payload("os", "system", [], [[], []], kind=8),
        "all",
        _expect_not_allowed("os", "system"),
    )
    return cases


CASES = _hostile_cases()

_HOSTILE_CHILD = r"""
import json, os, sys
import amber
import _rich_classes as rc

cases = json.load(open(sys.argv[1], encoding="utf-8"))
os.chdir(sys.argv[3])  # a shell command run by mistake would leave amber-canary.txt here
OPTS = {
    "none": {},
    "employee": {"types": [rc.Employee]},
    "all": {"types": rc.ALL_CLASSES},
    "placeholders": {"placeholders": True},
    "employee_placeholders": {"types": [rc.Employee], "placeholders": True},
    "custom": {"types": [rc.Employee], "custom": [rc.money_custom_type()]},
    "canary": {"types": [rc.Canary]},
}
DECODERS = {"decoder_employee": amber.Decoder(types=[rc.Employee])}

# warm up every code path a legitimate decode takes, so that lazy imports are done
warm = amber.dumps([rc.Employee(1, "a", 2), rc.Color.RED, rc.Point(1), rc.Plain("p")])
amber.loads(warm, types=rc.ALL_CLASSES)
amber.loads(warm, placeholders=True)
DECODERS["decoder_employee"].decode(amber.dumps(rc.Employee(1, "a", 2)))
for opts in OPTS.values():
    try:
        amber.loads(warm, **opts)
    except amber.DecodeError as e:
        str(e), repr(e)
try:
    amber.loads(b"\xab\x41\x01\x77\x00\x01x\x01y\x00\x00")
except amber.DecodeError as e:
    str(e), repr(e)
for bad in (b"\xab\x41\x01\x77\x00\x00", b"\xab\x41\x01\x77\x01"):
    try:
        amber.loads(bad)
    except amber.DecodeError as e:
        str(e), repr(e)

rc.CANARY_MARKS.clear()
before_all = set(sys.modules)
results = {}
for name, case in cases.items():
    if case["hex"] is None:
        results[name] = {"status": "no payload"}
        continue
    data = bytes.fromhex(case["hex"])
    before = set(sys.modules)
    marks_before = len(rc.CANARY_MARKS)
    try:
        if case["opts"] in DECODERS:
            value = DECODERS[case["opts"]].decode(data)
        else:
            value = amber.loads(data, **OPTS[case["opts"]])
        r = {"status": "ok", "type": f"{type(value).__module__}.{type(value).__qualname__}"}
        if isinstance(value, amber.Placeholder):
            r["placeholder"] = [value.module, value.qualname, str(value.kind).upper()]
    except amber.DecodeError as e:
        r = {"status": "error", "class": type(e).__name__, "kind": e.kind, "offset": e.offset,
             "message": str(e)[:300], "module": getattr(e, "module", None),
             "qualname": getattr(e, "qualname", None)}
    except BaseException as e:
        r = {"status": "other", "class": type(e).__name__, "message": str(e)[:300]}
    r["new_modules"] = sorted(set(sys.modules) - before)
    r["marks"] = rc.CANARY_MARKS[marks_before:]
    results[name] = r
after_all = set(sys.modules)
out = {
    "results": results,
    "new_modules": sorted(after_all - before_all),
    "absent_before": {m: m not in before_all for m in ("subprocess", "pickle")},
    "harm_file": os.path.exists("amber-canary.txt"),
}
# positive control: the canary does detect code that runs (it is allowed here)
rc.CANARY_MARKS.clear()
state = bytes.fromhex(sys.argv[2])
value = amber.loads(state, types=[rc.Canary])
out["control_type"] = type(value).__qualname__
out["control_marks"] = list(rc.CANARY_MARKS)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("hostile")
    path = workdir / "cases.json"
    path.write_text(json.dumps(CASES), encoding="utf-8")
    # The canary declares its own __reduce_ex__, so amber writes it as NEWOBJ: made by its
    # __new__, then given its state by its __setstate__.
    control = object_payload(MOD, "Canary", NEWOBJ, None, [(), {"a": 1}, None, None])
    return run_child_json(_HOSTILE_CHILD, str(path), control.hex(), str(workdir))


def test_hostile_child_imported_nothing(hostile_run):
    assert hostile_run["new_modules"] == []
    assert hostile_run["harm_file"] is False
    # the check means something: these modules were not loaded before the hostile payloads.
    # On 3.10 `platform` imports subprocess at module level (3.11 made it lazy), and attrs,
    # which _rich_classes uses, imports platform: there subprocess is loaded from the start.
    subprocess_absent = sys.version_info >= (3, 11)
    assert hostile_run["absent_before"] == {"subprocess": subprocess_absent, "pickle": True}


def test_canary_positive_control(hostile_run):
    assert hostile_run["control_type"] == "Canary"
    assert "__setstate__" in hostile_run["control_marks"], hostile_run["control_marks"]


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_case(name, hostile_run):
    case = CASES[name]
    r = hostile_run["results"][name]
    assert r["status"] != "no payload", "dumps refused the fake class (it must write its names)"
    assert r["new_modules"] == [], f"decoding imported {r['new_modules']}"
    expect = case["expect"]
    if case["opts"] == "canary":
        # the canary is allowed here: looking at the class is fine, building it is not
        ran = [m for m in r["marks"] if m.startswith(CONSTRUCTION_MARKS)]
        assert ran == [], f"code of the class ran: {ran}"
    else:
        assert r["marks"] == [], f"code ran: {r['marks']}"
    if "placeholder" in expect:
        assert r["status"] == "ok", r
        assert r.get("placeholder") == expect["placeholder"], r
        return
    if "type_or_error" in expect:
        assert r["status"] in ("ok", "error"), r
        if r["status"] == "ok":
            assert r["type"] == expect["type_or_error"], r
        else:
            assert r["kind"] in ALL_KINDS, r
        return
    assert r["status"] == "error", r
    assert r["kind"] in ALL_KINDS, r
    if "kind" in expect:
        assert r["kind"] == expect["kind"], r
    if "kinds" in expect:
        assert r["kind"] in expect["kinds"], r
    if "offset" in expect:
        assert r["offset"] == expect["offset"], r
    if expect.get("kind") == "class_not_allowed":
        assert r["class"] == "ClassNotAllowedError", r
        assert (r["module"], r["qualname"]) == (expect["module"], expect["qualname"]), r
        if len(expect["module"]) + len(expect["qualname"]) < 200:
            assert f"{expect['module']}.{expect['qualname']}" in r["message"], r
    elif r["kind"] != "class_not_allowed":
        assert r["class"] in ("DecodeError", "DecodeLimitError"), r


def test_fake_class_names_are_written_as_given():
    data = amber.dumps(fake_instance("os", "system", cmd="x"))
    assert data[:5] == HEADER + b"\x77\x00"
    assert data[5:].startswith(wire_name("os") + wire_name("system") + bytes([ATTRS]))


# --------------------------------------------------------------------------- never imported

_NOT_IMPORTED_CHILD = r"""
import json, os, sys
import amber

cases = json.load(open(sys.argv[1], encoding="utf-8"))
class Local:
    pass
warm = amber.dumps(Local())
amber.loads(warm, types=[Local])
amber.loads(warm, placeholders=True)
try:
    amber.loads(warm)
except amber.DecodeError as e:
    str(e)
watched = ("_rich_classes", "subprocess", "antigravity", "this", "xml.dom.minidom")
absent = {m: m not in sys.modules for m in watched}
before = set(sys.modules)
results = {}
for name, hex_payload in cases.items():
    for label, opts in (("none", {}), ("placeholders", {"placeholders": True}),
                        ("local", {"types": [Local]})):
        try:
            v = amber.loads(bytes.fromhex(hex_payload), **opts)
            r = ["ok", type(v).__qualname__, getattr(v, "module", None),
                 getattr(v, "qualname", None)]
        except amber.DecodeError as e:
            r = [e.kind, getattr(e, "module", None), getattr(e, "qualname", None)]
        except BaseException as e:
            r = ["other", type(e).__name__, str(e)[:200]]
        results[name + "/" + label] = r
after = set(sys.modules)
marker = os.environ["AMBER_CANARY_FILE"]
out = {"results": results, "new_modules": sorted(after - before), "absent": absent,
       "marker_before_import": os.path.exists(marker)}
import _rich_classes  # positive control: importing the module does leave the mark
out["marker_after_import"] = os.path.exists(marker)
print(json.dumps(out))
"""

NOT_IMPORTED_TARGETS = [
    (MOD, "Canary", ATTRS),
    (MOD, "Canary", STATE),
    (MOD, "Employee", ATTRS),
    (MOD, "NoSuchClass", ATTRS),
    ("subprocess", "Popen", TUPLE_FIELDS),
    ("antigravity", "geohash", ATTRS),
    ("this", "s", ENUM),
    ("xml.dom.minidom", "parseString", CUSTOM),
]


def test_payload_never_imports_the_named_module(tmp_path):
    cases = {
        f"{m}.{q}/{k}": object_payload(
            m, q, k, ["x"] if k in (ATTRS, TUPLE_FIELDS) else None, ["v"]
        ).hex()
        for m, q, k in NOT_IMPORTED_TARGETS
    }
    cases["fake"] = amber.dumps(fake_instance(MOD, "Canary", x="v")).hex()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    marker = tmp_path / "marks.txt"
    env = {"AMBER_CANARY_FILE": str(marker), "AMBER_CANARY_ON_IMPORT": "1"}
    out = run_child_json(_NOT_IMPORTED_CHILD, str(path), env=env)
    assert out["absent"] == dict.fromkeys(
        ("_rich_classes", "subprocess", "antigravity", "this", "xml.dom.minidom"), True
    )
    assert out["new_modules"] == []
    assert out["marker_before_import"] is False
    assert out["marker_after_import"] is True  # the marker works
    problems = []
    for name, r in out["results"].items():
        module, qualname = (
            (MOD, "Canary") if name.startswith("fake") else name.split("/")[0].rsplit(".", 1)
        )
        if name.endswith("/placeholders"):
            if r != ["ok", "Placeholder", module, qualname]:
                problems.append(f"{name}: {r}")
        elif r != ["class_not_allowed", module, qualname]:
            problems.append(f"{name}: {r}")
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- deep nesting

_DEEP_CHILD = r"""
import json, sys
from collections import deque
import amber
import _rich_classes as rc
N = 100_000
def chain(wrap):
    x = None
    for _ in range(N):
        x = wrap(x)
    return x
makers = {
    "dataclass": lambda: chain(lambda x: rc.Linked(1, x)),
    "plain": lambda: chain(lambda x: rc.Node(x)),
    "namedtuple": lambda: chain(lambda x: rc.Pair(x, None)),
    "deque": lambda: chain(lambda x: deque([x])),
    "slice": lambda: chain(lambda x: slice(x)),
}
out = {}
for name, make in makers.items():
    obj = make()
    try:
        amber.dumps(obj)
        out[name] = "no error"
    except amber.EncodeError:
        out[name] = "EncodeError"
    except BaseException as e:
        out[name] = f"{type(e).__name__}: {str(e)[:200]}"
first, n = bytes.fromhex(sys.argv[1]), int(sys.argv[2])
payload = b"\xab\x41\x01" + first + b"\x77\x01\x01" * (n - 1) + b"\x90"
try:
    amber.loads(payload, types=[rc.Linked])
    out["decode"] = ["no error"]
except amber.DecodeError as e:
    out["decode"] = [e.kind, e.offset]
try:
    amber.loads(payload, placeholders=True, max_depth=10)
    out["decode_placeholders"] = ["no error"]
except amber.DecodeError as e:
    out["decode_placeholders"] = [e.kind, e.offset]
print(json.dumps(out))
"""


def test_deep_object_chains_are_depth_errors_not_crashes():
    n = 200_000
    shape = shape_def(MOD, "Linked", ATTRS, ["value", "next"])
    first = bytes([0x77, 0x00]) + shape + b"\x01"
    # HEADER, then n Linked objects: each one's `next` is the following one (shape 0)
    out = run_child_json(_DEEP_CHILD, first.hex(), str(n))
    assert {k: v for k, v in out.items() if not k.startswith("decode")} == dict.fromkeys(
        ("dataclass", "plain", "namedtuple", "deque", "slice"), "EncodeError"
    )
    # object k (from 0) sits at depth k + 1: the 1001st is refused at its OBJECT tag
    assert out["decode"] == ["depth_limit", 3 + len(first) + 3 * 999]
    assert out["decode_placeholders"] == ["depth_limit", 3 + len(first) + 3 * 9]


# --------------------------------------------------------------------------- names, in process


def _clearly_valid(name: str, qualname: bool) -> bool:
    segments = name.split(".")
    if not name or len(name.encode("utf-8", "surrogatepass")) > 1024:
        return False
    return all(s.isidentifier() or (qualname and s == "<locals>") for s in segments)


def _clearly_invalid(name: str) -> bool:
    raw = name.encode("utf-8", "surrogatepass")
    if not name or len(raw) > 1024:
        return True
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return True
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in name):
        return True
    return any(s == "" for s in name.split("."))


_name_text = st.one_of(
    st.text(max_size=12),
    st.lists(
        st.one_of(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), st.just("<locals>")
        ),
        min_size=1,
        max_size=4,
    ).map(".".join),
    st.text(st.sampled_from("ab.\x00 \t_<>\u00e9\u2003\ud800"), max_size=8),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_name_text, _name_text)
def test_prop_random_names_are_never_looked_up(module, qualname):
    assume((module, qualname) != (MOD, "Employee"))
    data = HEADER + bytes([0x77, 0])
    data += wire_name(module.encode("utf-8", "surrogatepass"))
    data += wire_name(qualname.encode("utf-8", "surrogatepass"))
    data += bytes([ATTRS]) + varint(0)
    before = set(sys.modules)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, types=[rc.Employee])
    assert set(sys.modules) == before
    kind = info.value.kind
    assert kind in ("bad_name", "class_not_allowed"), info.value
    if _clearly_invalid(module) or _clearly_invalid(qualname):
        assert kind == "bad_name", (module, qualname, info.value)
    elif _clearly_valid(module, False) and _clearly_valid(qualname, True):
        assert kind == "class_not_allowed", (module, qualname, info.value)
        assert (info.value.module, info.value.qualname) == (module, qualname)


# --------------------------------------------------------------------------- EXT blobs


def _date(y: int, m: int, d: int) -> bytes:
    return varint(y) + bytes([m, d])


def _time(h: int, mi: int, s: int, us: int, flags: int = 0, tz: bytes = b"\x00") -> bytes:
    return bytes([h, mi, s]) + varint(us) + bytes([flags]) + tz


def _datetime(y, mo, d, h=0, mi=0, s=0, us=0, flags=0, tz=b"\x00") -> bytes:
    return varint(y) + bytes([mo, d, h, mi, s]) + varint(us) + bytes([flags]) + tz


def _tz_fixed(us: int, name: bytes = b"") -> bytes:
    return b"\x02" + varint(zigzag(us)) + varint(len(name)) + name


def _tz_zone(key: bytes) -> bytes:
    return b"\x03" + varint(len(key)) + key


def _timedelta(days: int, seconds: int, us: int) -> bytes:
    return varint(zigzag(days)) + varint(seconds) + varint(us)


def _decimal(form: int, exp: int | None = None, digits: bytes = b"") -> bytes:
    return bytes([form]) + (b"" if exp is None else varint(zigzag(exp))) + digits


def _ndarray(dims: list[int], dtype: bytes, data: bytes) -> bytes:
    out = varint(len(dims)) + b"".join(varint(d) for d in dims)
    return out + varint(len(dtype)) + dtype + data


def _scalar(dtype: bytes, data: bytes) -> bytes:
    return varint(len(dtype)) + dtype + data


_DAY_US = 86_400 * 10**6
_V6 = ipaddress.IPv6Address("fe80::1").packed

VALID_BLOBS: dict[str, tuple[str, bytes, Any]] = {
    "date": ("DATE", _date(2024, 2, 29), dt.date(2024, 2, 29)),
    "date_min": ("DATE", _date(1, 1, 1), dt.date.min),
    "time_utc_fold": (
        "TIME",
        _time(23, 59, 59, 999_999, 1, b"\x01"),
        dt.time(23, 59, 59, 999_999, tzinfo=dt.timezone.utc, fold=1),
    ),
    "datetime_zone": (
        "DATETIME",
        _datetime(2021, 10, 31, 2, 30, flags=1, tz=_tz_zone(b"Europe/Berlin")),
        dt.datetime(2021, 10, 31, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"), fold=1),
    ),
    "datetime_fixed_named": (
        "DATETIME",
        _datetime(9999, 12, 31, 23, 59, 59, 999_999, tz=_tz_fixed(_DAY_US - 1, b"X")),
        dt.datetime.max.replace(tzinfo=dt.timezone(dt.timedelta(microseconds=_DAY_US - 1), "X")),
    ),
    "timedelta": (
        "TIMEDELTA",
        _timedelta(-1, 5, 7),
        dt.timedelta(days=-1, seconds=5, microseconds=7),
    ),
    "tzinfo_fixed": ("TZINFO", _tz_fixed(-3600 * 10**6), dt.timezone(dt.timedelta(hours=-1))),
    "decimal": ("DECIMAL", _decimal(1, -1, b"15"), Decimal("-1.5")),
    "decimal_zero": ("DECIMAL", _decimal(0, 3, b"0"), Decimal("0E+3")),
    "decimal_snan": ("DECIMAL", _decimal(7, None, b"12"), Decimal("-sNaN12")),
    "uuid": ("UUID", bytes(range(16)), uuid.UUID(bytes=bytes(range(16)))),
    "uuid_safe": ("UUID", bytes(16) + b"\x00", uuid.UUID(int=0, is_safe=uuid.SafeUUID.safe)),
    "array": ("ARRAY", b"i" + (-2).to_bytes(4, "little", signed=True), array.array("i", [-2])),
    "path": ("PATH", b"\x00a/b", pathlib.PurePosixPath("a/b")),
    "path_windows": ("PATH", b"\x01C:\\x", pathlib.PureWindowsPath("C:\\x")),
    "ip4": ("IP_ADDRESS", bytes([10, 0, 0, 1]), ipaddress.IPv4Address("10.0.0.1")),
    "ip6_scope": ("IP_ADDRESS", _V6 + b"eth0", ipaddress.IPv6Address("fe80::1%eth0")),
    "net4": ("IP_NETWORK", bytes([8, 10, 0, 0, 0]), ipaddress.IPv4Network("10.0.0.0/8")),
    "iface4": ("IP_INTERFACE", bytes([8, 10, 0, 0, 1]), ipaddress.IPv4Interface("10.0.0.1/8")),
}

INVALID_BLOBS: dict[str, tuple[str, bytes]] = {
    "date_month_13": ("DATE", _date(2024, 13, 1)),
    "date_month_0": ("DATE", _date(2024, 0, 1)),
    "date_day_0": ("DATE", _date(2024, 1, 0)),
    "date_feb_31": ("DATE", _date(2024, 2, 31)),
    "date_feb_29_non_leap": ("DATE", _date(2023, 2, 29)),
    "date_apr_31": ("DATE", _date(2024, 4, 31)),
    "date_year_0": ("DATE", _date(0, 1, 1)),
    "date_year_10000": ("DATE", _date(10000, 1, 1)),
    "date_trailing_byte": ("DATE", _date(2024, 1, 1) + b"\x00"),
    "date_short": ("DATE", varint(2024) + b"\x01"),
    "date_empty": ("DATE", b""),
    "time_hour_24": ("TIME", _time(24, 0, 0, 0)),
    "time_minute_60": ("TIME", _time(0, 60, 0, 0)),
    "time_second_60": ("TIME", _time(0, 0, 60, 0)),
    "time_microsecond_1e6": ("TIME", _time(0, 0, 0, 10**6)),
    "time_flags_bit1": ("TIME", _time(0, 0, 0, 0, flags=2)),
    "time_flags_bit7": ("TIME", _time(0, 0, 0, 0, flags=0x80)),
    "time_bad_tz_kind": ("TIME", _time(0, 0, 0, 0, tz=b"\x09")),
    "time_missing_tz": ("TIME", bytes([0, 0, 0, 0, 0])),
    "time_offset_24h": ("TIME", _time(0, 0, 0, 0, tz=_tz_fixed(_DAY_US))),
    "time_offset_minus_24h": ("TIME", _time(0, 0, 0, 0, tz=_tz_fixed(-_DAY_US))),
    "time_tz_name_invalid_utf8": ("TIME", _time(0, 0, 0, 0, tz=_tz_fixed(60 * 10**6, b"\xff"))),
    "time_tz_name_surrogate": ("TIME", _time(0, 0, 0, 0, tz=_tz_fixed(0, b"\xed\xa0\x80"))),
    "time_tz_name_beyond_blob": ("TIME", _time(0, 0, 0, 0, tz=b"\x02\x00\x05ab")),
    "time_zone_key_empty": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b""))),
    "time_zone_key_dotdot": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"../../etc/passwd"))),
    "time_zone_key_leading_slash": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"/UTC"))),
    "time_zone_key_empty_segment": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"Europe//Berlin"))),
    "time_zone_key_dot_segment": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"Europe/./Berlin"))),
    "time_zone_key_space": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"Europe/Ber lin"))),
    "time_zone_key_nul": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"UTC\x00"))),
    "time_zone_key_non_ascii": (
        "TIME",
        _time(0, 0, 0, 0, tz=_tz_zone("Europe/B\u00e9rlin".encode())),
    ),
    "time_zone_key_256": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"A" * 256))),
    "time_zone_key_unknown": ("TIME", _time(0, 0, 0, 0, tz=_tz_zone(b"Nope/Nowhere"))),
    "time_trailing_byte": ("TIME", _time(0, 0, 0, 0) + b"\x00"),
    "datetime_day_32": ("DATETIME", _datetime(2024, 1, 32)),
    "datetime_feb_30": ("DATETIME", _datetime(2024, 2, 30)),
    "datetime_hour_24": ("DATETIME", _datetime(2024, 1, 1, 24)),
    "datetime_bad_tz_kind": ("DATETIME", _datetime(2024, 1, 1, tz=b"\x04")),
    "datetime_flags_bit1": ("DATETIME", _datetime(2024, 1, 1, flags=2)),
    "datetime_year_0": ("DATETIME", _datetime(0, 1, 1)),
    "timedelta_days_1e9": ("TIMEDELTA", _timedelta(10**9, 0, 0)),
    "timedelta_days_minus_1e9": ("TIMEDELTA", _timedelta(-(10**9), 0, 0)),
    "timedelta_seconds_86400": ("TIMEDELTA", _timedelta(0, 86_400, 0)),
    "timedelta_microseconds_1e6": ("TIMEDELTA", _timedelta(0, 0, 10**6)),
    "timedelta_trailing_byte": ("TIMEDELTA", _timedelta(0, 0, 0) + b"\x00"),
    "tzinfo_naive": ("TZINFO", b"\x00"),
    "tzinfo_empty": ("TZINFO", b""),
    "tzinfo_kind_7": ("TZINFO", b"\x07"),
    "tzinfo_utc_trailing": ("TZINFO", b"\x01\x00"),
    "decimal_leading_zero": ("DECIMAL", _decimal(0, 0, b"0012")),
    "decimal_double_zero": ("DECIMAL", _decimal(0, 0, b"00")),
    "decimal_no_digits": ("DECIMAL", _decimal(0, 0, b"")),
    "decimal_non_digit": ("DECIMAL", _decimal(0, 0, b"1a")),
    "decimal_form_bit3": ("DECIMAL", _decimal(0x08, 0, b"1")),
    "decimal_form_high_bits": ("DECIMAL", _decimal(0x80, 0, b"1")),
    "decimal_infinity_trailing": ("DECIMAL", _decimal(0x02, None, b"1")),
    "decimal_nan_leading_zero": ("DECIMAL", _decimal(0x04, None, b"01")),
    "decimal_empty": ("DECIMAL", b""),
    # exponents the zigzag varint holds but Python's Decimal cannot
    "decimal_exponent_1e18": ("DECIMAL", _decimal(0, 10**18, b"1")),
    "decimal_exponent_minus_2_62": ("DECIMAL", _decimal(0, -(2**62), b"1")),
    "decimal_adjusted_exponent_too_large": ("DECIMAL", _decimal(0, 999_999_999_999_999_999, b"12")),
    "decimal_no_exponent": ("DECIMAL", b"\x00"),
    "uuid_15_bytes": ("UUID", bytes(15)),
    "uuid_18_bytes": ("UUID", bytes(18)),
    "uuid_is_safe_2": ("UUID", bytes(16) + b"\x02"),
    "uuid_empty": ("UUID", b""),
    "array_bad_typecode": ("ARRAY", b"x"),
    "array_typecode_O": ("ARRAY", b"O" + bytes(8)),
    "array_i_3_bytes": ("ARRAY", b"i" + bytes(3)),
    "array_d_7_bytes": ("ARRAY", b"d" + bytes(7)),
    "array_empty_blob": ("ARRAY", b""),
    "path_flavour_4": ("PATH", b"\x04abc"),
    "path_invalid_utf8": ("PATH", b"\x00a\xff"),
    "path_empty_blob": ("PATH", b""),
    "ip_5_bytes": ("IP_ADDRESS", bytes(5)),
    "ip_0_bytes": ("IP_ADDRESS", b""),
    "ip_3_bytes": ("IP_ADDRESS", bytes(3)),
    "ip6_scope_percent": ("IP_ADDRESS", _V6 + b"a%b"),
    "ip6_scope_slash": ("IP_ADDRESS", _V6 + b"a/b"),
    "ip6_scope_invalid_utf8": ("IP_ADDRESS", _V6 + b"\xff"),
    "net4_prefix_33": ("IP_NETWORK", bytes([33, 10, 0, 0, 0])),
    "net6_prefix_129": ("IP_NETWORK", bytes([129]) + bytes(16)),
    "net4_host_bits_set": ("IP_NETWORK", bytes([8, 10, 0, 0, 1])),
    "net_no_address": ("IP_NETWORK", bytes([8])),
    "net_empty": ("IP_NETWORK", b""),
    "iface4_prefix_33": ("IP_INTERFACE", bytes([33, 10, 0, 0, 1])),
    "iface_5_byte_address": ("IP_INTERFACE", bytes([8, 10, 0, 0, 1, 1])),
    "ndarray_data_short": ("NDARRAY", _ndarray([3], b"<i4", bytes(11))),
    "ndarray_data_long": ("NDARRAY", _ndarray([3], b"<i4", bytes(13))),
    "ndarray_object_dtype": ("NDARRAY", _ndarray([1], b"|O", bytes(8))),
    "ndarray_object_dtype_O": ("NDARRAY", _ndarray([1], b"O", bytes(8))),
    "ndarray_structured_dtype": ("NDARRAY", _ndarray([1], b"<i4,<f8", bytes(12))),
    "ndarray_dtype_empty": ("NDARRAY", _ndarray([1], b"", bytes(1))),
    "ndarray_dtype_garbage": ("NDARRAY", _ndarray([1], b"<q9", bytes(8))),
    "ndarray_dtype_65_bytes": ("NDARRAY", _ndarray([1], b"<" + b"f" * 64, bytes(8))),
    "ndarray_ndim_65": ("NDARRAY", _ndarray([1] * 65, b"|i1", bytes(1))),
    "ndarray_dims_overflow": ("NDARRAY", _ndarray([2**40, 2**40, 2**40], b"<f8", b"")),
    "ndarray_dims_overflow_zero_data": ("NDARRAY", _ndarray([2**63, 2, 0], b"<f8", b"")),
    "ndarray_empty_blob": ("NDARRAY", b""),
    "numpy_scalar_short": ("NUMPY_SCALAR", _scalar(b"<f8", bytes(7))),
    "numpy_scalar_long": ("NUMPY_SCALAR", _scalar(b"<f8", bytes(9))),
    "numpy_scalar_object": ("NUMPY_SCALAR", _scalar(b"|O", bytes(8))),
    "numpy_scalar_empty": ("NUMPY_SCALAR", b""),
}
if os.name == "posix":
    INVALID_BLOBS["path_windows_concrete_on_posix"] = ("PATH", b"\x03C:\\x")


@pytest.mark.parametrize("name", list(VALID_BLOBS))
def test_valid_blob_control(name):
    code, blob, expected = VALID_BLOBS[name]
    out = amber.loads(ext_payload(code, blob))
    diff = rich_diff(expected, out)
    assert diff is None, diff


@pytest.mark.parametrize("name", list(INVALID_BLOBS))
def test_invalid_blob_is_invalid_ext(name):
    code, blob = INVALID_BLOBS[name]
    data = ext_payload(code, blob)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert info.value.kind == "invalid_ext", info.value
    assert info.value.offset == 3, info.value
    assert not isinstance(info.value, amber.DecodeLimitError)


def test_invalid_ext_detail_names_the_problem():
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(ext_payload("DATE", _date(2024, 13, 1)))
    assert "13" in str(info.value) and "month" in str(info.value).lower()


def test_invalid_ext_offset_inside_a_container():
    data = HEADER + b"\x5a\x01" + ext_payload("DATE", _date(2023, 2, 29))[3:]
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert (info.value.kind, info.value.offset) == ("invalid_ext", 5)


@pytest.mark.parametrize("code", [b"\x00", b"\x19", b"\x7f", b"\x80\x01", b"\xff\xff\x03"])
def test_unknown_ext_code(code):
    data = HEADER + b"\x76" + code + b"\x00"
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert (info.value.kind, info.value.offset) == ("unknown_ext", 3)


def test_blob_longer_than_input_is_truncated_at_the_tag():
    for data in (HEADER + b"\x76\x01\x05\x01\x01", HEADER + b"\x76\x14" + b"\xff" * 9 + b"\x01"):
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(data)
        assert (info.value.kind, info.value.offset) == ("truncated", 3)


# composite EXT kinds: the values are ordinary amber values that must fit the type

VALID_COMPOSITES: dict[str, tuple[str, list[Any], Any]] = {
    "deque": ("DEQUE", [None, [1, 2]], deque([1, 2])),
    "deque_maxlen": ("DEQUE", [2, [1, 2]], deque([1, 2], maxlen=2)),
    # more items than maxlen (never written by the encoder): kept as extend() keeps them
    "deque_items_beyond_maxlen": ("DEQUE", [2, [1, 2, 3]], deque([2, 3], maxlen=2)),
    "ordered_dict": ("ORDERED_DICT", [{"b": 1, "a": 2}], OrderedDict(b=1, a=2)),
    "counter": ("COUNTER", [{"a": 2}], Counter(a=2)),
    "defaultdict": ("DEFAULTDICT", ["list", {"a": [1]}], defaultdict(list, a=[1])),
    "defaultdict_none": ("DEFAULTDICT", [None, {}], defaultdict(None)),
    "range": ("RANGE", [1, 10, 2], range(1, 10, 2)),
    "slice": ("SLICE", [1, "x", None], slice(1, "x", None)),
    "fraction": ("FRACTION", [1, 3], Fraction(1, 3)),
    "fraction_negative": ("FRACTION", [-7, 2], Fraction(-7, 2)),
}

INVALID_COMPOSITES: dict[str, tuple[str, list[Any]]] = {
    "defaultdict_factory_eval": ("DEFAULTDICT", ["eval", {}]),
    "defaultdict_factory_dotted": ("DEFAULTDICT", ["os.system", {}]),
    "defaultdict_factory_wrong_case": ("DEFAULTDICT", ["List", {}]),
    "defaultdict_factory_int": ("DEFAULTDICT", [5, {}]),
    "defaultdict_items_list": ("DEFAULTDICT", ["list", []]),
    "deque_maxlen_negative": ("DEQUE", [-1, []]),
    "deque_maxlen_str": ("DEQUE", ["3", []]),
    "deque_maxlen_float": ("DEQUE", [1.5, []]),
    "deque_items_dict": ("DEQUE", [None, {}]),
    "deque_items_int": ("DEQUE", [None, 5]),
    "ordered_dict_items_list": ("ORDERED_DICT", [[1, 2]]),
    "counter_items_list": ("COUNTER", [["a"]]),
    "range_step_0": ("RANGE", [0, 10, 0]),
    "range_start_str": ("RANGE", ["a", 10, 1]),
    "range_stop_float": ("RANGE", [0, 1.5, 1]),
    "fraction_denominator_0": ("FRACTION", [1, 0]),
    "fraction_denominator_negative": ("FRACTION", [1, -3]),
    "fraction_numerator_str": ("FRACTION", ["1", 3]),
    "fraction_numerator_float": ("FRACTION", [1.5, 3]),
}


@pytest.mark.parametrize("name", list(VALID_COMPOSITES))
def test_valid_composite_control(name):
    code, values, expected = VALID_COMPOSITES[name]
    out = amber.loads(ext_composite_payload(code, values))
    diff = rich_diff(expected, out)
    assert diff is None, diff


@pytest.mark.parametrize("name", list(INVALID_COMPOSITES))
def test_invalid_composite_is_invalid_ext(name):
    # design reading: a composite whose values do not fit the type is `invalid_ext` too
    code, values = INVALID_COMPOSITES[name]
    data = ext_composite_payload(code, values)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert info.value.kind == "invalid_ext", info.value
    assert 3 <= info.value.offset < len(data)


# --------------------------------------------------------------------------- tracking rules


def test_tracked_ext_blob_is_shared():
    body = bytes([0x5A, 0xF6, 0x01, 0x04]) + _date(2024, 2, 29) + b"\x93\x01"
    out = amber.loads(HEADER + body)
    assert out == [dt.date(2024, 2, 29)] * 2 and out[0] is out[1]


def test_create_first_ext_can_contain_itself():
    # tracked DEQUE (f6 09), maxlen None, items: a list holding a REF to the deque
    out = amber.loads(HEADER + bytes.fromhex("f6 09 90 59 93 00"))
    assert type(out) is deque and out[0] is out


@pytest.mark.parametrize("code", ["RANGE", "SLICE", "FRACTION"])
def test_build_after_ext_ref_to_itself_is_incomplete_reference(code):
    data = HEADER + bytes([0xF6, EXT_CODES[code], 0x93, 0x00, 0x01, 0x01])
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert (info.value.kind, info.value.offset) == ("incomplete_reference", 5)


def test_create_first_object_can_contain_itself():
    shape = wire_name(MOD) + wire_name("Employee") + bytes([ATTRS, 3])
    shape += wire_name("id") + wire_name("name") + wire_name("age")
    data = HEADER + bytes([0xF7, 0x00]) + shape + b"\x93\x00\x41A\x02"
    out = amber.loads(data, types=[rc.Employee])
    assert type(out) is rc.Employee and out.id is out and out.name == "A"


@pytest.mark.parametrize(
    ("qualname", "kind", "fields", "options"),
    [
        ("Pair", TUPLE_FIELDS, ["left", "right"], {"types": [rc.Pair]}),
        ("Color", ENUM, None, {"types": [rc.Color]}),
        ("Money", CUSTOM, None, {"custom": "money"}),
    ],
    ids=["tuple_fields", "enum", "custom"],
)
def test_build_after_object_ref_to_itself_is_incomplete_reference(qualname, kind, fields, options):
    if options.get("custom") == "money":
        options = {"custom": [rc.money_custom_type()]}
    head = HEADER + bytes([0xF7, 0x00])
    head += shape_def(MOD, qualname, kind, fields)
    data = head + b"\x93\x00" + b"\x01" * (len(fields) - 1 if fields else 0)
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **options)
    assert (info.value.kind, info.value.offset) == ("incomplete_reference", len(head))


def test_shapes_defined_inside_a_supersede_are_numbered():
    # [SUPERSEDE(Employee(1, "A", 30) with shape 0; REF outer list), Employee via shape 0]
    emp = object_body(MOD, "Employee", ATTRS, ["id", "name", "age"], [1, "A", 30])
    body = b"\xda" + b"\x94" + emp + b"\x93\x00" + b"\x77\x01\x02\x41B\x1f"
    out = amber.loads(HEADER + body, types=[rc.Employee])
    assert out[0] is out
    assert type(out[1]) is rc.Employee and out[1].info() == "ID: 2, Name: B, Age: 31"


# --------------------------------------------------------------------------- random blobs

_BLOB_CODES = [
    "DATE",
    "TIME",
    "DATETIME",
    "TIMEDELTA",
    "TZINFO",
    "DECIMAL",
    "UUID",
    "ARRAY",
    "PATH",
    "IP_ADDRESS",
    "IP_NETWORK",
    "IP_INTERFACE",
    "NDARRAY",
    "NUMPY_SCALAR",
]


def _check_decode_error(e: BaseException, data: bytes) -> None:
    assert isinstance(e, amber.DecodeError), repr(e)
    assert e.kind in ALL_KINDS, e
    assert 0 <= e.offset <= len(data), e
    assert isinstance(e, amber.DecodeLimitError) == (e.kind in LIMIT_KINDS), e


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(_BLOB_CODES), st.binary(max_size=40))
def test_prop_random_blobs_decode_or_raise_decode_error(code, blob):
    data = ext_payload(code, blob)
    try:
        out = amber.loads(data)
    except Exception as e:
        _check_decode_error(e, data)
        assert e.kind == "invalid_ext", e
        return
    diff = rich_diff(out, amber.loads(amber.dumps(out)))
    assert diff is None, diff


# --------------------------------------------------------------------------- truncation, mutation


def _fuzz_pool() -> list[str]:
    values: list[Any] = [
        rc.Employee(1, "Al", 30),
        [rc.Employee(1, "A", 2), rc.Employee(3, "B", 4)],
        rc.Point(1, (2,), "p"),
        rc.Pair([1], {"k": 2}),
        rc.Plain("n", [1, 2], 1.5),
        rc.Frozen("k", (1, 2)),
        {rc.Frozen("k"): rc.Color.RED},
        rc.Slotted(1, [2]),
        rc.KwOnly(first=[1]),
        rc.SlotsOnly(1, "b"),
        rc.SlotsAndDict(1, extra=2),
        [rc.Color.GREEN, rc.Priority.HIGH, rc.Perm.R | rc.Perm.W, rc.Color.BLUE],
        dt.date(2024, 2, 29),
        dt.time(1, 2, 3, 4, tzinfo=dt.timezone(dt.timedelta(hours=1), "CET")),
        dt.datetime(2021, 10, 31, 2, 30, fold=1, tzinfo=ZoneInfo("UTC")),
        dt.timedelta(days=-3, microseconds=9),
        dt.timezone.utc,
        [Decimal("-1.50"), Decimal("sNaN7"), Decimal("-Infinity")],
        uuid.UUID(int=2**127 + 5, is_safe=uuid.SafeUUID.safe),
        Fraction(-22, 7),
        deque([1, [2]], maxlen=4),
        OrderedDict(a=1, b=[2]),
        Counter(a=2, b=-1),
        defaultdict(list, a=[1]),
        [range(1, 10, 3), slice(1, "x", None)],
        array.array("d", [1.5, -0.0]),
        array.array("u", "h\u00e9"),
        [pathlib.PurePosixPath("/a/b"), pathlib.PureWindowsPath("C:\\x")],
        [ipaddress.IPv6Interface("fe80::1%eth0/64"), ipaddress.IPv4Network("10.0.0.0/8")],
    ]
    node = rc.Node("n")
    node.me = node
    values.append(node)
    shared = rc.Employee(5, "S", 6)
    values.append([shared, shared, (shared,)])
    t = rc.Pair([], None)
    t.left.append(t)
    values.append(t)
    if HAVE_NUMPY:
        import numpy as np

        values += [np.arange(6, dtype=">i2").reshape(2, 3), np.float32(1.5), np.array("x")]
    pool = [amber.dumps(v).hex() for v in values]
    pool.append(amber.dumps(rc.Money(Decimal("1.5"), "EUR"), custom=[rc.money_custom_type()]).hex())
    pool.append(object_payload("os", "system", ATTRS, ["cmd"], ["x"]).hex())
    return pool


_FUZZ_CHILD = r"""
import json, os, random, sys
import amber
import _rich_classes as rc
from _common import ERROR_KINDS, LIMIT_KINDS
from _fuzz import mutate

KINDS = ERROR_KINDS | set(json.loads(sys.argv[4]))
# a prefix that holds a whole shape definition of a class not allowed: class_not_allowed
PREFIX_KINDS = ("truncated", "length_too_large", "bad_shape", "class_not_allowed")
TRACE = os.environ.get("AMBER_FUZZ_TRACE") == "1"
pool = [bytes.fromhex(h) for h in json.load(open(sys.argv[1], encoding="utf-8"))]
seed, count = int(sys.argv[2]), int(sys.argv[3])
# classes whose rebuilding runs no user code that could raise arbitrary exceptions
SAFE = [rc.Employee, rc.Node, rc.Point, rc.Pair, rc.Plain, rc.Frozen, rc.Slotted, rc.KwOnly,
        rc.SlotsOnly, rc.SlotsAndDict, rc.Color, rc.Priority, rc.Perm, rc.Linked]
OPTS = [{"types": SAFE}, {}, {"placeholders": True}, {"types": SAFE, "unknown_fields": "error"},
        {"types": SAFE, "max_depth": 5}, {"types": SAFE, "max_alloc": 2000}]

def check(e, data):
    if not isinstance(e, amber.DecodeError):
        return f"{type(e).__module__}.{type(e).__qualname__}: {e}"
    if e.kind not in KINDS:
        return f"unknown kind {e.kind!r}: {e}"
    if not isinstance(e.offset, int) or not 0 <= e.offset <= len(data):
        return f"offset {e.offset!r} outside 0..{len(data)}: {e}"
    if isinstance(e, amber.DecodeLimitError) != (e.kind in LIMIT_KINDS):
        return f"{e.kind}: DecodeLimitError-ness wrong ({type(e).__name__})"
    return None

problems = []
outcomes = {}
def decode(data, opts):
    if TRACE:
        sys.stderr.write(data.hex() + " " + repr(sorted(opts)) + "\n")
        sys.stderr.flush()
    try:
        out = amber.loads(data, **opts)
    except Exception as e:
        outcomes[getattr(e, "kind", "other")] = outcomes.get(getattr(e, "kind", "other"), 0) + 1
        return None, check(e, data)
    outcomes["ok"] = outcomes.get("ok", 0) + 1
    if opts.get("placeholders"):
        return out, None
    try:
        again = amber.dumps(out)
        amber.loads(again, **{k: v for k, v in opts.items() if k not in ("max_depth", "max_alloc")})
    except Exception as e:
        return out, f"decoded value does not round-trip: {type(e).__name__}: {e}"
    return out, None

truncations = 0
for p in pool:
    for n in range(len(p)):
        data = p[:n]
        truncations += 1
        try:
            if TRACE:
                sys.stderr.write(data.hex() + " truncation\n")
                sys.stderr.flush()
            amber.loads(data, types=SAFE, custom=[rc.money_custom_type()])
            problems.append(f"prefix {n}/{len(p)} decoded without error: {data.hex()}")
        except Exception as e:
            prob = check(e, data)
            if prob is None and n >= 3 and e.kind not in PREFIX_KINDS:
                prob = f"expected truncated, got {e.kind}: {e}"
            if prob is None and n < 3 and e.kind != "truncated":
                prob = f"prefix of the magic: got {e.kind}"
            if prob:
                problems.append(f"prefix {n}/{len(p)} {data.hex()}: {prob}")

rng = random.Random(seed)
for i in range(count):
    data = mutate(rng, rng.choice(pool), pool)
    opts = OPTS[i % len(OPTS)]
    _, prob = decode(data, opts)
    if prob and len(problems) < 40:
        problems.append(f"{prob}\n  input={data.hex()} options={sorted(opts)}")
print(json.dumps({"problems": problems, "outcomes": outcomes, "truncations": truncations,
                  "count": count, "seeds": len(pool)}))
"""


def test_truncations_and_mutations_of_class_and_ext_payloads(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(_fuzz_pool()), encoding="utf-8")
    args = (str(path), str(FUZZ_SEED), str(MUTATIONS), json.dumps(sorted(NEW_ERROR_KINDS)))
    proc = run_python(_FUZZ_CHILD, *args, timeout=600)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        culprit = ""
        if proc.returncode < 0 or "Fatal Python error" in proc.stderr:
            traced = run_python(_FUZZ_CHILD, *args, env={"AMBER_FUZZ_TRACE": "1"}, timeout=600)
            hexes = [ln for ln in traced.stderr.splitlines() if ln[:1] in "0123456789abcdef"]
            culprit = hexes[-1] if hexes else "(unknown)"
        pytest.fail(
            f"fuzz child failed with exit code {proc.returncode} (negative: killed by a signal)\n"
            f"last input: {culprit}\nstderr:\n{proc.stderr[-3000:]}"
        )
    result = json.loads(lines[-1])
    assert result["count"] == MUTATIONS and result["truncations"] > 1000
    assert result["problems"] == [], "\n".join(result["problems"][:15])
    outcomes = result["outcomes"]
    assert outcomes.get("ok", 0) >= MUTATIONS // 100, outcomes
    for kind in ("class_not_allowed", "invalid_ext", "bad_name"):
        assert outcomes.get(kind, 0) > 0, outcomes


# --------------------------------------------------- subclass kinds for classes of another kind


class Level(enum.IntEnum):
    LOW = 1


NamedPair = collections.namedtuple("NamedPair", "left right")


def value_subclass(qualname: bytes, value: bytes) -> bytes:
    """A VALUE_SUBCLASS instance of class t:`qualname` made from the builtin `value`."""
    return HEADER + b"\x77\x00\x01t" + bytes([len(qualname)]) + qualname + b"\x06" + value + b"\x90"


@pytest.mark.parametrize(
    ("qualname", "cls", "value", "written"),
    [
        (b"NamedPair", NamedPair, b"\x5c", "TUPLE_FIELDS"),  # tuple.__new__: no items
        (b"Level", Level, b"\x6c\xc6\x01", "ENUM"),  # int.__new__(Level, 99): no member
    ],
    ids=["named tuple", "int enum"],
)
def test_a_subclass_kind_cannot_make_what_the_class_would_refuse(qualname, cls, value, written):
    # VALUE_SUBCLASS makes an instance with the builtin base's constructor, skipping the
    # class's own: a named tuple with no items (which `repr` and `dumps` then fail on), or an
    # int enum member that is none of its members. A class amber writes with another kind
    # is refused this one, at the shape's OBJECT tag.
    with pytest.raises(amber.DecodeError) as caught:
        amber.loads(value_subclass(qualname, value), types={f"t:{qualname.decode()}": cls})
    assert (caught.value.kind, caught.value.offset) == ("bad_shape", 3)
    assert f"written as {written}" in str(caught.value)


def test_the_fuzzers_named_tuple_without_items_is_refused():
    # Found by fuzz/atheris_loads.py: loads built it, and dumps could not write it back.
    data = base64.b64decode("q0EBX3cAD192ZWN0b3JfY2xhc3NlcwRQYWlyBlxcXB8=")
    with pytest.raises(amber.DecodeError) as caught:
        amber.loads(data, types=[_vector_classes.Pair])
    assert (caught.value.kind, caught.value.offset) == ("bad_shape", 4)


def test_a_plain_builtin_subclass_still_takes_its_subclass_kind():
    class Plain(int):
        pass

    out = amber.loads(value_subclass(b"Plain", b"\x6c\xc6\x01"), types={"t:Plain": Plain})
    assert type(out) is Plain and out == 99


class Outcome(Exception, enum.Enum):
    DONE = 1


def test_an_exception_enum_cannot_be_made_by_the_exception_kind():
    # EXCEPTION makes an instance with the builtin exception base's constructor, so for an
    # exception enum it would make a "member" that is none of the members (`dumps` then fails
    # on it). amber writes such a class as ENUM, and refuses EXCEPTION for it.
    class Failure(Exception):
        pass

    # Allowed under a name of the test's choosing: Python 3.10 gives an enum mixed with a
    # type it cannot pickle the module "<unknown>".
    Failure.__module__, Failure.__qualname__ = "outcomes", "Outcome"
    data = amber.dumps(Failure(7))
    with pytest.raises(amber.DecodeError) as caught:
        amber.loads(data, types={"outcomes:Outcome": Outcome})
    assert (caught.value.kind, caught.value.offset) == ("bad_shape", 3)
    assert "written as ENUM" in str(caught.value)
    # A plain exception class allowed under that name still takes the kind.
    made = amber.loads(data, types={"outcomes:Outcome": Failure})
    assert type(made) is Failure and made.args == (7,)
