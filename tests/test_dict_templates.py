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
import weakref

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


def _dumps_as_dicts(obj, **options):
    """amber.dumps, with every list of dicts written as a LIST of dicts, the form whose dicts
    the decoder builds from templates. Held a second time while encoding, the dicts count as
    shared, and a RECORDS holds only dicts its list alone holds."""
    held = _dicts(obj)
    data = amber.dumps(obj, **options)
    del held
    assert data[3] & 0x7F != 0x7B, "written as RECORDS"
    return data


def _check(obj, graph_diff):
    out = amber.loads(_dumps_as_dicts(obj))
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
    # Non-ASCII keys are not cached: each dict gets its own key objects, which the identity
    # check does not take for the template's. (Keys made per row keep the list a LIST: a
    # RECORDS needs the same key objects in every dict.)
    rows = [{"id": i, "".join(["é", "t"]): i, "".join(["ß", "t"]): str(i)} for i in range(20)]
    out = amber.loads(amber.dumps(rows, refs=refs))
    assert out == rows
    assert all(list(row) == ["id", "ét", "ßt"] for row in out)
    if refs:
        assert graph_diff(rows, out) is None
    # Written by value each time: every dict has key objects of its own.
    assert len({id(key) for row in out for key in row if key == "ét"}) == len(out)


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
    out = amber.loads(_dumps_as_dicts(payload))
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


@pytest.mark.parametrize("dumps", [_dumps_as_dicts, amber.dumps], ids=["dicts", "records"])
def test_truncated_records_fail_cleanly_at_every_length(dumps):
    rows = [{"id": i, "name": f"n{i}", "tags": [i, i]} for i in range(12)]
    data = dumps(rows)
    for end in range(len(data)):
        with pytest.raises(amber.DecodeError):
            amber.loads(data[:end])


@pytest.mark.parametrize("dumps", [_dumps_as_dicts, amber.dumps], ids=["dicts", "records"])
def test_errors_inside_copies_release_what_they_built(dumps):
    rows = [{"id": i, "name": f"name {i}", "items": [i] * 3} for i in range(200)]
    data = dumps(rows)
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


# Templates carried from one decode to the next (crates/amber-py/src/decode/dict_template.rs):
# a service decodes message after message holding each shape once; their keys come from the
# key cache, the same objects every time, so the templates learned by one decode serve the
# next ones.


def _message(i: int, nested: object = None) -> dict[str, object]:
    return {
        "priority": i,
        "jobid": str(i),
        "args": {"user_id": str(i), "account_id": i % 7, "extra": nested},
        "type": "job",
    }


def test_a_message_decoded_again_and_again_comes_back_whole_and_its_own():
    # The first decodes learn the shapes, later ones build from templates: every result is
    # equal to what was sent, keeps its key order, and shares nothing with another result.
    results = []
    for i in range(8):
        sent = _message(i, nested=[i])
        got = amber.loads(amber.dumps(sent))
        assert got == sent
        assert list(got) == list(sent) and list(got["args"]) == list(sent["args"])
        results.append(got)
    results[3]["args"]["user_id"] = "changed"
    results[3]["args"]["extra"].append("x")
    assert [r["args"]["user_id"] for r in results] == [
        str(i) if i != 3 else "changed" for i in range(8)
    ]
    assert [r["args"]["extra"] for r in results] == [[i] if i != 3 else [3, "x"] for i in range(8)]


def test_messages_built_from_templates_are_tracked_by_the_gc_as_plain_ones_are():
    # A template holds None for every value: a copy is untracked until it is given a
    # container, as a dict CPython builds key by key.
    for _ in range(4):
        atomic = amber.loads(amber.dumps({"a": 1, "b": "two", "c": 3.0}))
        holding = amber.loads(amber.dumps({"a": 1, "b": [2], "c": 3.0}))
        assert not gc.is_tracked(atomic)
        assert gc.is_tracked(holding)
    # A cycle through a dict built from a template is collected.
    for _ in range(3):
        cycle: list[object] = []
        cycle.append({"a": 1, "b": cycle, "c": 3.0})
        out = amber.loads(amber.dumps(cycle))
        assert out[0]["b"] is out
    before = len(gc.get_objects())
    for _ in range(50):
        amber.loads(amber.dumps(cycle))
    gc.collect()
    assert len(gc.get_objects()) <= before + 5


class Held:
    """A decoded value that can be watched through a weak reference."""

    def __init__(self, n: int = 0) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Held) and other.n == self.n


def test_no_decoded_value_outlives_its_result():
    # Templates outlive a decode; had one kept the values of the dict it was learned from,
    # the instance would stay alive after its result is dropped.
    refs = []
    for i in range(5):
        out = amber.loads(amber.dumps({"key": Held(i), "other": i}, types=[Held]), types=[Held])
        assert out == {"key": Held(i), "other": i}
        refs.append(weakref.ref(out["key"]))
        del out
    gc.collect()
    assert [ref() for ref in refs] == [None] * 5


def test_shapes_that_share_a_first_key_and_length_across_decodes():
    # A template found by its first key and length meets other later keys in the next
    # decode: the dict is rebuilt the plain way, and the shape learned again.
    shapes = [("a", "b", "c"), ("a", "x", "c"), ("a", "b", "y"), ("a", "b", "c")]
    for round_ in range(4):
        for keys in shapes:
            sent = {key: f"{round_}{key}" for key in keys}
            got = amber.loads(amber.dumps(sent))
            assert got == sent and list(got) == list(keys)


def test_more_shapes_than_are_carried_each_decode_right():
    # 40 shapes, each met once per round: more than the templates carried, so some are let
    # go and learned again; every decode is right whatever it found.
    shapes = [[f"s{s}k{k}" for k in range(2 + s % 5)] for s in range(40)]
    for round_ in range(3):
        for s, keys in enumerate(shapes):
            sent = {key: s * 100 + round_ for key in keys}
            got = amber.loads(amber.dumps(sent))
            assert got == sent and list(got) == keys


def test_a_decode_inside_a_decode_keeps_both_right():
    # A custom decoder that decodes a message of its own while the outer decode holds the
    # templates: the inner one starts without them, and both results are right.
    inner_payload = amber.dumps(_message(1))

    class Wrapper:
        def __init__(self, inner: object) -> None:
            self.inner = inner

    custom = amber.CustomType(
        Wrapper, lambda w: None, lambda state: Wrapper(amber.loads(inner_payload))
    )
    for i in range(4):
        sent = {"priority": i, "jobid": str(i), "args": Wrapper(None), "type": "job"}
        got = amber.loads(amber.dumps(sent, custom=[custom]), custom=[custom])
        assert got["args"].inner == _message(1)
        assert {k: v for k, v in got.items() if k != "args"} == {
            k: v for k, v in sent.items() if k != "args"
        }


def test_carried_templates_hold_a_bounded_amount_of_memory():
    # Keys that are not the key cache's (long ones) make no carried template; what the
    # carried ones hold stays bounded however many messages of new shapes go through.
    tracemalloc.start()
    try:
        for i in range(200):
            keys = [f"k{i}_{k}" for k in range(6)]
            amber.loads(amber.dumps({key: k for k, key in enumerate(keys)}))
            amber.loads(amber.dumps({key: k for k, key in enumerate(keys)}))
        gc.collect()
        settled, _ = tracemalloc.get_traced_memory()
        for i in range(200, 2200):
            keys = [f"k{i}_{k}" for k in range(6)]
            amber.loads(amber.dumps({key: k for k, key in enumerate(keys)}))
            amber.loads(amber.dumps({key: k for k, key in enumerate(keys)}))
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - settled < 64 * 1024
