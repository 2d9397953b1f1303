"""Dicts of a repeated shape, which the decoder builds by copying a template.

Once two dicts with the same first key object and length have been decoded, later ones start
as a copy of the second and get their values stored in place, each after a check that its key
is the template's. These tests build payloads where that check passes, fails at every index,
meets keys that are equal but not the same object, and meets the cases CPython's own insert
handles that a copy must too: GC tracking, duplicate keys, errors half way.
"""

from __future__ import annotations

import gc
import os
import sys
import sysconfig
import tracemalloc

import amber
import pytest
from amber import _amber
from hypothesis import given, settings
from hypothesis import strategies as st

H = bytes.fromhex("ab 41 01")


def test_the_dict_layout_is_confirmed_where_amber_knows_it():
    # Elsewhere templates are off and every test here passes through PyDict_SetItem alone:
    # this keeps a layout check that starts failing from going unnoticed. 3.14 and later are
    # built without the fast paths (crates/amber-py/build.rs), as is the generic build that
    # `make test-generic` tests with AMBER_GENERIC_LAYOUTS=1.
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    generic = os.environ.get("AMBER_GENERIC_LAYOUTS", "0") != "0"
    expected = (3, 11) <= sys.version_info[:2] <= (3, 13) and not free_threaded and not generic
    assert _amber._dict_layout_known() is expected


def _check(obj, graph_diff):
    out = amber.loads(amber.dumps(obj))
    assert graph_diff(obj, out) is None
    # graph_diff compares dicts as mappings; the order of keys is checked here.
    for want, got in zip(_dicts(obj), _dicts(out), strict=True):
        assert list(got) == list(want)
    return out


def _dicts(obj):
    """Every dict in a graph of lists and dicts, in a fixed order."""
    found, stack, seen = [], [obj], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            found.append(item)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def test_records_keep_their_values_and_key_order(graph_diff):
    rows = [
        {
            "id": i,
            "name": f"row {i}",
            "score": i / 7,
            "tags": ["a", "b"][: i % 3],
            "parent": None if i % 4 else i - 1,
            "flag": i % 2 == 0,
        }
        for i in range(500)
    ]
    out = _check(rows, graph_diff)
    # Each row's list is its own, not one shared through the template.
    assert len({id(row["tags"]) for row in out}) == len(out)


@pytest.mark.parametrize("n", [2, 3, 8, 20, 63, 64])
def test_a_key_that_differs_at_each_index(n, graph_diff):
    keys = [f"k{i}" for i in range(n)]
    rows = [dict.fromkeys(keys, 0) for _ in range(3)]
    for at in range(1, n):
        other = list(keys)
        other[at] = "other"
        rows.append({key: at for key in other})
        # Plain rows after the miss, so the shape gets a template again.
        rows.extend({key: -at for key in keys} for _ in range(3))
    _check(rows, graph_diff)


def test_same_keys_in_another_order(graph_diff):
    rows = [{"a": i, "b": i, "c": i} for i in range(4)]
    rows += [{"a": 9, "c": 9, "b": 9}, {"a": 8, "b": 8, "c": 8}, {"b": 7, "a": 7, "c": 7}]
    _check(rows * 3, graph_diff)


def test_same_first_key_and_other_lengths(graph_diff):
    rows = []
    for i in range(30):
        rows.append({"id": i, "x": i})
        rows.append({"id": i, "x": i, "y": i})
        rows.append({"id": i})
    _check(rows, graph_diff)


def test_keys_that_are_not_strs(graph_diff):
    rows = [{"a": i, 2: i} for i in range(10)]
    rows += [{1: i, 2: i} for i in range(10)]
    rows += [{"a": i, "b": i} for i in range(10)]
    rows += [{(1, 2): i, "b": i} for i in range(10)]
    _check(rows, graph_diff)


@pytest.mark.parametrize("refs", [True, False])
def test_equal_keys_that_are_distinct_objects(refs, graph_diff):
    # Non-ASCII keys are not cached: with refs=False each dict gets its own key objects,
    # which the identity check does not take for the template's.
    rows = [{"id": i, "é": i, "ß": str(i)} for i in range(20)]
    out = amber.loads(amber.dumps(rows, refs=refs))
    assert out == rows
    assert all(list(row) == ["id", "é", "ß"] for row in out)
    if refs:
        assert graph_diff(rows, out) is None
    else:
        # Written by value each time: every dict has key objects of its own.
        assert len({id(key) for row in out for key in row if key == "é"}) == len(out)


def test_a_copy_given_a_container_is_tracked_by_the_gc():
    # The template is learned from dicts of ints (untracked); a later copy is given a list
    # that closes a cycle through it, which only GC tracking of that copy can collect.
    cycle: list[object] = []
    cycle.append({"x": 1, "y": cycle})
    payload = [{"x": 1, "y": 2}, {"x": 1, "y": 2}, {"x": 3, "y": 4}, cycle]
    out = amber.loads(amber.dumps(payload))
    assert out[3][0]["y"] is out[3]
    assert not gc.is_tracked(out[2])
    assert gc.is_tracked(out[3][0])


def test_tuples_given_to_a_copy_track_it_when_they_hold_containers():
    payload = [{"x": 1, "y": ()}, {"x": 1, "y": ()}, {"x": 1, "y": (1, 2)}, {"x": 1, "y": ([],)}]
    out = amber.loads(amber.dumps(payload))
    assert out == payload
    assert gc.is_tracked(out[3])


def test_a_duplicate_key_in_a_dict_built_from_a_template():
    # [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "a": 6}]: the keys after the first dict
    # are REFs to its key objects, so the third dict finds the template, then repeats "a"
    # where the template has "b".
    body = bytes.fromhex("71 03  62 c1 61 01 c1 62 02  62 93 03 03 93 06 04  62 93 03 05 93 03 06")
    with pytest.raises(amber.DecodeError) as caught:
        amber.loads(H + body)
    assert caught.value.kind == "duplicate_key"
    assert caught.value.offset == len(H) + 20
    # The same dicts without the duplicate decode.
    fixed = body[:-3] + bytes.fromhex("93 06 06")
    assert amber.loads(H + fixed) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]


def test_truncated_records_fail_cleanly_at_every_length():
    rows = [{"id": i, "name": f"n{i}", "tags": [i, i]} for i in range(12)]
    data = amber.dumps(rows)
    for end in range(len(data)):
        with pytest.raises(amber.DecodeError):
            amber.loads(data[:end])


def test_errors_inside_copies_release_what_they_built():
    rows = [{"id": i, "name": f"name {i}", "items": [i] * 3} for i in range(200)]
    data = amber.dumps(rows)
    # Cut inside the last row's value, after many copies of the template were made.
    bad = data[:-2]
    for _ in range(20):  # warm up caches
        amber.loads(data)
        with pytest.raises(amber.DecodeError):
            amber.loads(bad)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(300):
        amber.loads(data)
        with pytest.raises(amber.DecodeError):
            amber.loads(bad)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # 300 rounds of 200 rows would leak megabytes if a copy or a template were not freed.
    assert grown < 64 * 1024, grown


_KEYS = st.sampled_from(["a", "b", "c", "id", "é", "long key name", 1, 2.5])
_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(st.lists(_KEYS, min_size=1, max_size=5, unique=True), min_size=1, max_size=4),
    picks=st.lists(st.tuples(st.integers(0, 3), _VALUES), max_size=40),
    refs=st.booleans(),
)
def test_dicts_drawn_from_a_few_shapes_round_trip(shapes, picks, refs, graph_diff):
    rows = [{key: value for key in shapes[i % len(shapes)]} for i, value in picks]
    out = amber.loads(amber.dumps(rows, refs=refs))
    assert out == rows
    for want, got in zip(rows, out, strict=True):
        assert list(got) == list(want)
    if refs:
        assert graph_diff(rows, out) is None
