"""The seed scenario (Perl's Storable/Sereal example, in Python): a list of Employee objects
written to a file and read back in a fresh process, and the same in memory."""

from __future__ import annotations

import amber
import pytest
from _common import run_python_json
from _rich_classes import Employee

EXPECTED_INFO = ["ID: 1001, Name: Alice, Age: 30", "ID: 1002, Name: Bob, Age: 25"]

_READ_CHILD = r"""
import json, sys
import amber
from _rich_classes import Employee
path = sys.argv[1]
employees = amber.load(path, types=[Employee])
out = {
    "type": type(employees).__name__,
    "count": len(employees),
    "classes": [f"{type(e).__module__}.{type(e).__qualname__}" for e in employees],
    "is_employee": [isinstance(e, Employee) for e in employees],
    "info": [e.info() for e in employees],
}
try:
    amber.load(path)
    out["without_types"] = "no error"
except amber.ClassNotAllowedError as e:
    out["without_types"] = [e.kind, e.module, e.qualname]
print(json.dumps(out))
"""

_WRITE_CHILD = r"""
import json, sys
import amber
from _rich_classes import Employee
amber.dump([Employee(1001, "Alice", 30), Employee(1002, "Bob", 25)], sys.argv[1])
print(json.dumps({"written": True}))
"""


def employees() -> list[Employee]:
    return [Employee(1001, "Alice", 30), Employee(1002, "Bob", 25)]


def test_file_written_here_is_read_by_a_fresh_process(tmp_path):
    path = tmp_path / "employees.amber"
    amber.dump(employees(), path)
    out = run_python_json(_READ_CHILD, str(path))
    assert out == {
        "type": "list",
        "count": 2,
        "classes": ["_rich_classes.Employee"] * 2,
        "is_employee": [True, True],
        "info": EXPECTED_INFO,
        "without_types": ["class_not_allowed", "_rich_classes", "Employee"],
    }


def test_file_written_by_a_fresh_process_is_read_here(tmp_path):
    path = tmp_path / "employees.amber"
    assert run_python_json(_WRITE_CHILD, str(path)) == {"written": True}
    loaded = amber.load(path, types=[Employee])
    assert isinstance(loaded, list) and len(loaded) == 2
    assert all(type(e) is Employee for e in loaded)
    assert [e.info() for e in loaded] == EXPECTED_INFO
    with open(path, "rb") as f:
        assert [e.info() for e in amber.load(f, types=[Employee])] == EXPECTED_INFO
    # the same bytes as written here
    assert path.read_bytes() == amber.dumps(employees())


def test_in_memory():
    data = amber.dumps(employees())
    loaded = amber.loads(data, types=[Employee])
    assert [e.info() for e in loaded] == EXPECTED_INFO
    assert [type(e) for e in loaded] == [Employee, Employee]
    decoder = amber.Decoder(types=[Employee])
    assert [e.info() for e in decoder.decode(data)] == EXPECTED_INFO
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data)


def test_many_employees_share_one_shape():
    staff = [Employee(i, f"E{i:05d}", 20 + i % 50) for i in range(10_000)]
    data = amber.dumps(staff)
    assert data.count(b"Employee") == 1
    loaded = amber.loads(data, types=[Employee])
    assert [e.info() for e in loaded] == [e.info() for e in staff]
