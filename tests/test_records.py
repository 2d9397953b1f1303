"""Lists of dicts with the same keys written as records (spec 5.12.1): RECORDS.

A dict literal makes a new dict every time it runs, and its keys are constants of the code, the
same str objects in every dict: a list of such dicts is the shape the encoder writes as
records, when CPython's reference counts prove that the list alone holds each dict.
"""

from __future__ import annotations

import collections
import gc
import tracemalloc
import weakref
from typing import Any

import amber
import pytest
from _common import HEADER, check_truncations, smallest_budget, varint
from _ref import ref_dumps
from _strategies import atoms, checked_fresh_copy, fresh_copy, records_lists
from _vector_classes import Temperature
from amber._compare import graph_diff as diff
from amber._inspect import inspect_lines, trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RECORDS, LIST, SHORT_LIST = 0x7B, 0x71, 0x58
TRACKED = 0x80
HUGE = b"\xff" * 9 + b"\x01"  # varint 2**64 - 1
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def employees(n: int, start: int = 0) -> list[dict[str, Any]]:
    """n new dicts with the same three key objects; values nothing else holds."""
    return [
        {"id": int(str(1000 + i)), "name": f"Employee_{i}", "age": 20 + i % 45}
        for i in range(start, start + n)
    ]


def check(value: Any, **options: Any) -> bytes:
    """dumps(value): the reference encoder's bytes, and an exact round trip."""
    data = amber.dumps(value, **options)
    assert data.hex(" ") == ref_dumps(value, **options).hex(" ")
    out = amber.loads(data)
    if options.get("refs", True):
        assert diff(value, out) is None
    else:
        assert out == value
    return data


def as_list_of_dicts(value: list[Any], **options: Any) -> bytes:
    """The LIST form of `value`: each dict held once more while it is encoded counts as
    shared, and a RECORDS holds only dicts its list alone holds."""
    held = list(value)
    data = amber.dumps(value, **options)
    del held
    return data


def decode_error(data: bytes, **options: Any) -> tuple[str, int]:
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data, **options)
    return info.value.kind, info.value.offset


# -- the form ------------------------------------------------------------------------------


def test_spec_examples():
    assert check([{"id": 1, "name": "ab"}, {"id": 2, "name": "cd"}]) == HEADER + bytes.fromhex(
        "7b 02 02 42 69 64 44 6e 61 6d 65 01 42 61 62 02 42 63 64"
    )
    k = "".join(["hello", " world"])
    assert check([k, [{k: 1, "b": 2}, {k: 3, "b": 4}]]) == HEADER + bytes.fromhex(
        "5a cb 68 65 6c 6c 6f 20 77 6f 72 6c 64 7b 02 02 93 01 41 62 01 02 03 04"
    )
    cycle: list[Any] = []
    cycle += [{"a": cycle, "b": 1}, {"a": 5, "b": 2}]
    written = HEADER + bytes.fromhex("fb 02 02 41 61 41 62 93 00 01 05 02")
    assert check(cycle) == written
    out = amber.loads(written)
    assert out[0]["a"] is out
    d = {"a": 1, "b": 2}
    assert check([d, {"a": 3, "b": 4}, d]) == HEADER + bytes.fromhex(
        "5b e2 c1 61 01 c1 62 02 62 93 02 03 93 05 04 93 01"
    )
    assert check([{"a": 1}, {"a": 2}]) == HEADER + bytes.fromhex("5a 61 c1 61 01 61 93 02 02")


def test_records_drop_every_key_and_dict_tag_after_the_first_row():
    rows = employees(100)
    records = check(rows)
    plain = as_list_of_dicts(rows)
    assert records[3] == RECORDS and plain[3] == LIST
    # Each dict of the LIST form has a SHORT_DICT tag and three 2-byte key REFs after the
    # first; the RECORDS form pays one byte for its width.
    assert len(plain) - len(records) == 100 + 99 * 3 * 2 - 1
    assert amber.loads(plain) == amber.loads(records) == rows


def test_decoded_rows_are_dicts_of_their_own_sharing_the_key_objects():
    out = amber.loads(amber.dumps(employees(5)))
    assert len({id(row) for row in out}) == 5
    assert all(type(row) is dict and list(row) == ["id", "name", "age"] for row in out)
    for row in out[1:]:
        assert all(a is b for a, b in zip(row, out[0], strict=True))
    out[1]["extra"] = 1
    del out[2]["age"]
    assert list(out[0]) == ["id", "name", "age"] and "extra" not in out[3]


def test_one_dict_or_one_key_stays_a_list_and_two_of_two_keys_are_records():
    assert check([{"a": 1, "b": 2}])[3] == SHORT_LIST + 1
    assert check([{"a": i} for i in range(50)])[3] == LIST
    assert check([{"a": 1, "b": 2}, {"a": 3, "b": 4}])[3] == RECORDS


class Sub(dict):  # type: ignore[type-arg]
    pass


MISFITS = {
    "keys in another order": lambda: {"name": "x", "id": 5, "age": 1},
    "a key fewer": lambda: {"id": 5, "name": "x"},
    "a key more": lambda: {"id": 5, "name": "x", "age": 1, "more": 2},
    "equal keys that are other objects": lambda: {
        "".join(["i", "d"]): 5,
        "".join(["na", "me"]): "x",
        "".join(["ag", "e"]): 1,
    },
    "an OrderedDict": lambda: collections.OrderedDict(id=5, name="x", age=1),
    "a dict subclass": lambda: Sub(id=5, name="x", age=1),
    "not a dict": lambda: ("id", 5),
}


@pytest.mark.parametrize("misfit", list(MISFITS))
@pytest.mark.parametrize("where", [0, 2, 4])
def test_a_misfit_keeps_the_list_a_list(misfit, where):
    value: list[Any] = employees(4)
    value.insert(where, MISFITS[misfit]())
    # The reference encoder knows no library or subclass types.
    library = misfit in ("an OrderedDict", "a dict subclass")
    data = amber.dumps(value, types=[Sub]) if library else check(value)
    assert data[3] == LIST
    out = amber.loads(data, types=[Sub])
    assert diff(value, out) is None


def test_non_str_keys_and_empty_dicts_are_never_records():
    assert check([{1: "a", 2: "b"}, {1: "c", 2: "d"}])[3] == SHORT_LIST + 2
    key = (1, 2)
    assert check([{key: "a", "b": 1}, {key: "b", "b": 2}])[3] == SHORT_LIST + 2
    assert check([{}, {}, {}])[3] == SHORT_LIST + 3


def test_a_dict_held_by_a_caller_variable_keeps_a_list():
    value = employees(4)
    kept = value[2]
    assert amber.dumps(value)[3] == LIST
    del kept
    assert amber.dumps(value)[3] == RECORDS


def test_a_dict_held_twice_in_the_graph_is_written_once():
    value = employees(4)
    value.append(value[1])
    data = check(value)
    assert data[3] == LIST
    out = amber.loads(data)
    assert out[1] is out[4]


def test_refs_off_writes_a_dict_held_twice_as_two_rows():
    value = employees(3)
    value.append(value[0])
    data = check(value, refs=False)
    assert data[3] == RECORDS
    out = amber.loads(data)
    assert out == value and out[0] is not out[3]


def test_canonical_mode_never_writes_records():
    value = employees(6)
    for sort_keys in (False, True):
        data = amber.dumps(value, canonical=True, sort_keys=sort_keys)
        assert data[3] == LIST
        assert data == ref_dumps(value, canonical=True, sort_keys=sort_keys)
        assert amber.loads(data) == value


def test_values_shared_across_rows_and_outside_stay_shared():
    tags = ["a", "b"]
    name = "".join(["shared", " name"])
    value = [{"tags": tags, "name": name, "n": i} for i in range(5)]
    root = {"rows": value, "tags": tags}
    data = check(root)
    out = amber.loads(data)
    assert all(row["tags"] is out["tags"] for row in out["rows"])
    assert all(row["name"] is out["rows"][0]["name"] for row in out["rows"])


def test_a_tracked_records_is_one_list():
    value = employees(3)
    out = amber.loads(check([value, value]))
    assert out[0] is out[1]
    assert amber.dumps([value, value])[4] == RECORDS | TRACKED


def test_cycles_through_the_list_and_through_its_values():
    value: list[Any] = [{"self": None, "n": i} for i in range(4)]
    for row in value:
        row["self"] = value
    del row  # the loop variable holds the last dict
    out = amber.loads(check(value))
    assert all(row["self"] is out for row in out)


def test_deque_items_are_records():
    value = collections.deque(employees(4), maxlen=9)
    data = amber.dumps({"q": value})
    assert bytes([RECORDS]) + varint(4) + varint(3) in data
    assert amber.loads(data)["q"] == value


def test_an_error_in_a_row_names_its_place():
    value: list[Any] = employees(4)
    value[2]["name"] = object()
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value)
    assert info.value.path == 'root[2]["name"]'
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps({"q": collections.deque(value)})
    assert info.value.path == 'root["q"][2]["name"]'


class Meddler(Temperature):
    """Changes the list it sits in when it is first written (its __getstate__ runs mid-list)."""

    def __init__(self, target: list[Any], change: str) -> None:
        super().__init__(1, "C")
        self.target, self.change, self.done = target, change, False

    def __getstate__(self) -> tuple[Any, Any]:
        if not self.done:
            self.done = True
            last = self.target[-1]
            if self.change == "shrink":
                self.target.clear()
            elif self.change == "drop a key":
                del last["age"]
            elif self.change == "add a key":
                last["more"] = 1
            elif self.change == "reorder":
                last["id"] = last.pop("id")
            elif self.change == "other keys":
                self.target[-1] = {"x": 1, "y": 2, "z": 3}
            elif self.change == "replace":
                self.target[-1] = {"id": 7, "name": "seven", "age": 8}
        gc.collect()  # the dicts the list dropped are gone, unless the encoder holds them
        return (1, "C")


def test_a_list_shrunk_by_class_code_is_an_error():
    value: list[Any] = employees(4)
    value[1]["name"] = Meddler(value, "shrink")
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(value, types=[Meddler])
    assert "changed" in str(info.value)


@pytest.mark.parametrize("change", ["drop a key", "add a key", "reorder", "other keys"])
def test_a_dict_whose_keys_class_code_changed_makes_the_list_a_list(change):
    # The row no longer has the keys already written: the encode starts again and writes
    # the list, as it now is, as a LIST.
    value: list[Any] = employees(4)
    value[1]["name"] = Meddler(value, change)
    data = amber.dumps(value, types=[Meddler])
    assert data[3] == LIST
    out = amber.loads(data, types=[Meddler])
    assert [list(row) for row in out] == [list(row) for row in value]
    assert out[3] == value[3]


def test_a_dict_replaced_by_one_with_the_same_keys_is_written():
    value: list[Any] = employees(4)
    value[1]["name"] = Meddler(value, "replace")
    data = amber.dumps(value, types=[Meddler])
    assert data[3] == RECORDS
    out = amber.loads(data, types=[Meddler])
    assert out[3] == {"id": 7, "name": "seven", "age": 8}


def test_a_misfit_found_while_writing_starts_the_encode_again_once_per_list():
    # Same sizes, other keys: found only as the rows are written, each such list costs one
    # restart, and the bytes are the reference encoder's.
    lists = [employees(3, start=10 * k) for k in range(5)]
    for k, rows in enumerate(lists):
        rows[-1] = {"id": k, "age": 1, "name": "x"}  # another order
    value = {"lists": lists, "tail": employees(3, start=100)}
    data = check(value)
    out = amber.loads(data)
    assert [[list(row) for row in rows] for rows in out["lists"]] == [
        [list(row) for row in rows] for rows in lists
    ]


def test_max_depth_counts_the_rows_level():
    value = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert amber.dumps(value)[3] == RECORDS
    with pytest.raises(amber.EncodeError):
        amber.dumps(value, max_depth=1)
    data = amber.dumps(value, max_depth=2)
    assert amber.loads(data, max_depth=2) == value
    assert decode_error(data, max_depth=1) == ("depth_limit", 3)
    nested = [{"a": [], "b": 1}, {"a": [], "b": 2}]
    with pytest.raises(amber.EncodeError):
        amber.dumps(nested, max_depth=2)
    assert amber.loads(amber.dumps(nested, max_depth=3), max_depth=3) == nested


# -- decoding ------------------------------------------------------------------------------


def test_rows_of_any_hashable_keys_decode():
    # Not what the encoder writes (its keys are strs), but valid: int, float and tuple keys.
    body = bytes.fromhex("7b 02 03  05 6e 000000000000f83f 5e 01 02  01 02 03  04 05 06")
    rows = amber.loads(HEADER + body)
    assert rows == [{5: 1, 1.5: 2, (1, 2): 3}, {5: 4, 1.5: 5, (1, 2): 6}]
    assert all(a is b for a, b in zip(rows[0], rows[1], strict=True))


def test_rows_with_keys_built_the_plain_way_are_tracked_by_the_gc_as_needed():
    for data in (amber.dumps(employees(3)), HEADER + bytes.fromhex("7b 02 01 05 01 02")):
        out = amber.loads(data)
        assert not any(gc.is_tracked(row) for row in out)
    out = amber.loads(amber.dumps([{"a": [i], "b": i} for i in range(3)]))
    assert all(gc.is_tracked(row) for row in out)
    out = amber.loads(HEADER + bytes.fromhex("7b 02 01 05 58 58"))
    assert all(gc.is_tracked(row) for row in out)


def test_a_cycle_through_a_row_is_collected():
    for _ in range(3):
        value: list[Any] = [{"list": None, "t": Temperature(i, "C")} for i in range(3)]
        for row in value:
            row["list"] = value
        del row
        out = amber.loads(amber.dumps(value, types=[Temperature]), types=[Temperature])
        assert out[0]["list"] is out
        gone = weakref.ref(out[0]["t"])
        del out
        gc.collect()
        assert gone() is None


def test_a_duplicate_or_unhashable_key_fails_at_the_key():
    assert decode_error(HEADER + bytes.fromhex("7b 01 02 41 61 41 61 01 02")) == (
        "duplicate_key",
        8,
    )
    assert decode_error(HEADER + bytes.fromhex("7b 01 01 58 01")) == ("unhashable", 6)
    assert decode_error(HEADER + bytes.fromhex("7b 01 02 01 6e 000000000000f03f 01 02")) == (
        "duplicate_key",
        7,
    )


def test_tuple_keys_are_charged_to_the_hash_budget_in_every_row():
    # A tuple key's hash is not cached: a row built the plain way hashes it again, and pays
    # for it again, as each dict of a LIST does. The budget grows by 64 per input byte, and
    # this key costs about 200 per row of 1 byte: enough rows run the budget out.
    key = HEADER + b"\x72" + varint(200) + bytes(range(1, 64)) * 3 + bytes(range(1, 12))

    def payload(rows: int) -> bytes:
        return HEADER + b"\x7b" + varint(rows) + b"\x01" + key[3:] + b"\x00" * rows

    assert len(amber.loads(payload(1000))) == 1000
    assert decode_error(payload(20_000))[0] == "hash_limit"


def test_huge_counts_fail_before_allocating():
    for data in (
        HEADER + b"\x7b" + HUGE + b"\x01\x41a" + b"\x00" * 100,
        HEADER + b"\x7b\x01" + HUGE + b"\x00" * 100,
        HEADER + b"\x7b" + HUGE + b"\x00" + b"\x00" * 100,
    ):
        tracemalloc.start()
        try:
            assert decode_error(data) == ("length_too_large", 3)
            assert tracemalloc.get_traced_memory()[1] < 64 * 1024
        finally:
            tracemalloc.stop()


def test_the_charge_for_every_dict_comes_before_the_keys():
    n = 100_000
    data = HEADER + b"\x7b" + varint(n) + b"\x02\x41a\x41b" + b"\x00" * 2 * n
    # the list's own slots fit in the budget, its dicts do not
    tracemalloc.start()
    try:
        assert decode_error(data, max_alloc=8 * n) == ("alloc_limit", 3)
        assert tracemalloc.get_traced_memory()[1] < 1024 * 1024  # no list, no dict was made
    finally:
        tracemalloc.stop()
    assert len(amber.loads(data)) == n  # the default budget holds them


@pytest.mark.parametrize(
    "value",
    [employees(300), [{"x": i / 7, "y": [i], "z": None} for i in range(100)]],
    ids=["employees", "rows holding lists"],
)
def test_max_alloc_charges_like_the_list_of_dicts(value):
    """Records need the same allocation budget as the LIST of the same dicts."""
    records = amber.dumps(value)
    assert records[3] == RECORDS
    plain = as_list_of_dicts(value)
    assert plain[3] == LIST
    # The LIST form tracks its keys, and a tracked value's place in the reference table is
    # charged 32 bytes (amber_format::limits::cost::SCALAR).
    width = len(value[0])
    assert smallest_budget(records) == smallest_budget(plain) - 32 * width


def test_every_truncation_fails_cleanly():
    check_truncations(amber.dumps(employees(6)))
    check_truncations(amber.dumps([{"k": [1, 2], "j": {"x": "y"}}, {"k": [], "j": {}}]))


def test_trace_and_inspect_lines():
    data = amber.dumps([{"id": 1, "name": "ab"}, {"id": 2, "name": "cd"}])
    result = trace(data, max_depth=1000, max_alloc=None, max_events=None)
    assert result.error is None
    assert result.events[0].info == ("records", 2, 2)
    assert [e.depth for e in result.events] == [0, 2, 2, 2, 2, 2, 2]
    lines = list(inspect_lines(data, result, show_hex=False))
    assert lines[1].split() == "3 RECORDS list of 2 dicts of 2 keys, as records".split()
    assert lines[2].split() == ["6", "keys", "of", "each", "row", "2", "keys"]
    assert lines[5].split() == ["14", "row", "0", "dict", "of", "2", "pairs"]
    assert lines[8].split() == ["18", "row", "1", "dict", "of", "2", "pairs"]


# -- properties ----------------------------------------------------------------------------


@st.composite
def records_graphs(draw) -> dict[str, Any]:
    """Lists of dicts (some qualifying for records, some not) whose values may be shared
    across lists, or be one of the lists."""
    pool = draw(st.lists(st.one_of(atoms, st.builds(list)), min_size=1, max_size=3))
    lists = draw(st.lists(records_lists(st.one_of(atoms, st.sampled_from(pool))), max_size=4))
    lists.append(employees(draw(st.integers(2, 5))))
    for target in lists:
        if draw(st.integers(0, 4)) == 0 and lists[0]:
            target.insert(draw(st.integers(0, len(target))), draw(st.sampled_from(lists[0])))
        if draw(st.integers(0, 9)) == 0 and target and type(target[0]) is dict:
            target[0]["cycle"] = target
    return {"lists": lists, "pool": pool, "again": lists[: draw(st.integers(0, len(lists)))]}


@SETTINGS
@given(records_graphs())
def test_records_graphs_round_trip_and_match_the_reference(x):
    y = checked_fresh_copy(x)
    assert amber.dumps(y, canonical=True) == ref_dumps(y, canonical=True)
    cyclic = any(
        value is lst
        for lst in y["lists"]
        for row in lst
        if type(row) is dict
        for value in row.values()
    )
    if not cyclic:
        assert amber.dumps(y, refs=False) == ref_dumps(y, refs=False)
    assert amber.dumps(amber.loads(amber.dumps(y))) == amber.dumps(y)


@SETTINGS
@given(
    st.integers(2, 20),
    st.lists(st.text(max_size=5), min_size=2, max_size=6, unique=True),
    st.data(),
)
def test_qualifying_lists_are_records(n, keys, data):
    value = [{key: data.draw(atoms) for key in keys} for _ in range(n)]
    value = fresh_copy(value)
    encoded = check(value)
    assert encoded[3] == RECORDS
    assert encoded[4:].startswith(varint(n) + varint(len(keys)))
