"""Shared references and cycles: identity survives a round trip (refs=True), and refs=False."""

from __future__ import annotations

import contextlib
import functools
import gc
import random
import sys
import threading
from collections.abc import Callable, Iterator

import amber
import pytest
from _ref import ref_dumps

H = b"\xab\x41\x01"


def fresh_str(s: str) -> str:
    """A new str object equal to s (literals are shared constants, so build one at runtime)."""
    return "".join(list(s)) if len(s) > 1 else s


def roundtrip(value, graph_diff):
    data = amber.dumps(value)
    out = amber.loads(data)
    diff = graph_diff(value, out)
    assert diff is None, diff
    return data, out


def test_shared_list_twice(graph_diff):
    a = [1, 2]
    data, u = roundtrip([a, a], graph_diff)
    assert data == H + b"\x5a\xda\x01\x02\x93\x01"
    assert u[0] is u[1]
    u[0].append(3)
    assert u[1] == [1, 2, 3]


def test_equal_but_distinct_stay_distinct(graph_diff):
    data, u = roundtrip([[1], [1], fresh_str("x" * 30), fresh_str("x" * 30)], graph_diff)
    assert u[0] is not u[1]
    assert u[2] == u[3] and u[2] is not u[3]
    assert 0x93 not in data[3:]


def test_shared_str_keys(graph_diff):
    keys = [fresh_str("name"), fresh_str("a-rather-long-key-name-over-23-bytes")]
    rows = [{keys[0]: i, keys[1]: -i} for i in range(5)]
    data, u = roundtrip(rows, graph_diff)
    assert data == ref_dumps(rows)
    for row in u[1:]:
        for k_first, k_row in zip(u[0], row, strict=True):
            assert k_first is k_row


def test_shared_str_keys_moving_between_positions(graph_diff):
    # The encoder remembers, per position in a dict, the last shared key it wrote there:
    # keys that change places, come and go, or are held by one dict alone must still be
    # written as the reference encoder writes them.
    a, b, c = fresh_str("alpha"), fresh_str("beta"), fresh_str("gamma")
    rows = [
        {a: 1, b: 2},
        {a: 3, b: 4},
        {b: 5, a: 6},
        {fresh_str("once"): 7, a: 8},
        {a: 9, b: 10, c: 11},
        {c: 12},
        {a: 13, b: 14, c: 15},
        {f"k{i}": i for i in range(10)} | {a: 16},
    ]
    data, u = roundtrip(rows, graph_diff)
    assert data == ref_dumps(rows)
    assert next(iter(u[0])) is list(u[2])[1] is next(iter(u[6]))


def test_shared_str_keys_of_nested_dicts_of_several_shapes(graph_diff):
    # Nested dicts of different shapes put different keys at the same positions: a key that
    # takes another's place is also remembered by address, and must still be written as the
    # reference encoder writes it, in every record, wherever it sits.
    k = {name: fresh_str(name) for name in ("id", "path", "amount", "currency", "stock", "n")}
    rows = [
        {
            k["id"]: i,
            k["path"]: {k["id"]: i * 2, k["path"]: [i]},
            k["amount"]: {k["amount"]: i + 0.5, k["currency"]: "EUR"},
            k["stock"]: {k["n"]: i, k["id"]: -i, k["amount"]: i},
            k["currency"]: {k["currency"]: "USD"} if i % 3 else {k["stock"]: True},
        }
        for i in range(40)
    ]
    data, u = roundtrip(rows, graph_diff)
    assert data == ref_dumps(rows)
    first = {key: key for key in u[0]}
    for row in u:
        for inner in [row, *(v for v in row.values() if isinstance(v, dict))]:
            for key in inner:
                assert key is first.setdefault(key, key)


def test_shared_str_keys_across_a_restart(graph_diff):
    # A tuple met again while being written makes the encoder start over (spec 6.5); what it
    # remembered about keys in the first pass must not leak into the second.
    k = fresh_str("key")
    t = ([{k: 1}, {k: 2}],)
    t[0].append(t)
    t[0].append({k: 3})
    data, u = roundtrip(t, graph_diff)
    assert data == ref_dumps(t)
    assert next(iter(u[0][0])) is next(iter(u[0][3]))


def test_objects_repeated_many_times_match_the_reference(graph_diff):
    # The encoder keeps the objects its memo found again lately in a few slots, picked by
    # address: many shared objects interleaved make them evict one another.
    rng = random.Random(7)
    pool = [fresh_str(f"item-{i}") for i in range(40)]
    pool += [float(i) + 0.5 for i in range(40)] + [2**62 + i for i in range(40)]
    pool += [[i] for i in range(20)] + [{"k": i} for i in range(20)]
    items = [rng.choice(pool) for _ in range(2000)] + [pool[0]] * 50
    data, _ = roundtrip(items, graph_diff)
    assert data == ref_dumps(items)
    assert amber.dumps(items, refs=False) == ref_dumps(items, refs=False)


def test_repeated_objects_across_a_restart(graph_diff):
    # What the encoder learned about repeated objects in a pass it abandons (a tuple met
    # again while being written, spec 6.5) must not reach the pass it makes next.
    s, x = fresh_str("shared"), 1.25
    t = ([s, s, x, x],)
    t[0].append(t)
    t[0].extend([s, x, s, x])
    data, u = roundtrip(t, graph_diff)
    assert data == ref_dumps(t)
    assert u[0][0] is u[0][5] and u[0][2] is u[0][8]


@pytest.mark.parametrize("before", [0, 1, 30, 61, 62, 63, 64, 65, 100])
def test_objects_shared_across_the_memos_move_to_its_table(before, graph_diff):
    # The memo keeps an encode's first 64 possibly shared objects in a small array and moves
    # them to its table at the 65th. Objects first met on either side of that move, tuples
    # open across it (a cyclic one among them) and dict keys met again past it must all be
    # found again, as the reference encoder finds them.
    fillers = [fresh_str(f"filler-{i}") for i in range(before)]
    shared = [fresh_str("s" * 5), [1.5], {"k": 2.5}, 2**62 + 7, 3.25]
    key = fresh_str("key")
    t = ([],)
    t[0].append(t)
    pair = (shared[0], shared[1])
    value = [
        *fillers,
        {key: shared[0]},
        pair,
        t,
        *shared,
        *[fresh_str(f"late-{i}") for i in range(10)],
        {key: shared[1]},
        *shared,
        pair,
        t,
        *fillers,
        [{key: i} for i in range(3)],
    ]
    holders = (fillers, shared, key, t, pair)  # every one of them is held twice
    data, out = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    assert holders
    first = out[before + 3 : before + 3 + len(shared)]
    again = out[before + 3 + len(shared) + 11 : before + 3 + 2 * len(shared) + 11]
    assert all(x is y for x, y in zip(first, again, strict=True))


def test_shared_scalars(graph_diff):
    big = 10**30
    mid = 1000 + len(str(big))  # a non-cached int object
    f = 1.5 + len(str(big))
    z = complex(f, -f)
    s = fresh_str("shared string")
    b = bytes(fresh_str("shared bytes"), "ascii")
    ba = bytearray(b"shared bytearray")
    value = [big, mid, f, z, s, b, ba, big, mid, f, z, s, b, ba]
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    for i in range(7):
        assert u[i] is u[i + 7], i
    u[6].append(0)
    assert u[13][-1] == 0


def test_empty_singletons_never_referenced(graph_diff):
    e = ()
    data, _ = roundtrip([e, e, "", "", b"", b""], graph_diff)
    assert data == H + b"\x71\x06\x5c\x5c\x40\x40\x6a\x00\x6a\x00"


def test_shared_empty_mutables(graph_diff):
    a, d, s, ba = [], {}, set(), bytearray()
    value = [a, d, s, ba, a, d, s, ba]
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    for i in range(4):
        assert u[i] is u[i + 4]
    assert u[0] is not u[1]


def test_list_contains_itself(graph_diff):
    a = [1]
    a.append(a)
    data, u = roundtrip(a, graph_diff)
    assert data == H + b"\xda\x01\x93\x00"
    assert u[1] is u


def test_dict_contains_itself(graph_diff):
    d = {"x": 1}
    d["self"] = d
    data, u = roundtrip(d, graph_diff)
    assert data == ref_dumps(d)
    assert u["self"] is u


def test_mutual_cycle(graph_diff):
    a, b = [], {}
    a.append(b)
    b["a"] = a
    b["b"] = b
    data, u = roundtrip([a, b], graph_diff)
    assert data == ref_dumps([a, b])
    assert u[0][0] is u[1]
    assert u[1]["a"] is u[0]
    assert u[1]["b"] is u[1]


def test_set_contains_tuple_shared_elsewhere(graph_diff):
    t = (1, fresh_str("tuple member"))
    value = [{t, 2}, t, frozenset({t})]
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    (elem,) = [e for e in u[0] if isinstance(e, tuple)]
    assert elem is u[1]
    assert next(iter(u[2])) is u[1]


def test_tuple_key_shared_with_value(graph_diff):
    k = (1, 2, 3, 4)
    value = {k: k, "again": k}
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    key = next(iter(u))
    assert u[key] is key
    assert u["again"] is key


def test_frozenset_tuple_nesting_shared(graph_diff):
    inner = (1, fresh_str("x" * 5))
    fs = frozenset({inner, 7})
    tt = (fs, fs, inner)
    value = [tt, fs, {fs: tt}, {tt}, inner]
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    assert u[0][0] is u[0][1] is u[1]
    assert next(iter(u[2])) is u[1]
    assert u[2][u[1]] is u[0]
    assert next(iter(u[3])) is u[0]
    assert u[0][2] is u[4]
    assert any(e is u[4] for e in u[1])


def test_tuple_cycle_through_list(graph_diff):
    t = ([],)
    t[0].append(t)
    data, u = roundtrip(t, graph_diff)
    assert data == H + bytes.fromhex("94 5D D9 DD 93 02 93 03")
    assert type(u) is tuple
    assert u[0][0] is u


def test_tuple_cycle_decoded_from_worked_example():
    u = amber.loads(H + bytes.fromhex("94 5D D9 DD 93 02 93 03"))
    assert type(u) is tuple and len(u) == 1
    assert type(u[0]) is list and len(u[0]) == 1
    assert u[0][0] is u


def test_tuple_cycle_referenced_again(graph_diff):
    t = ([], 5)
    t[0].append(t)
    value = [t, t, t[0], {"k": t}]
    data, u = roundtrip(value, graph_diff)
    assert data == ref_dumps(value)
    assert u[0] is u[1] is u[3]["k"]
    assert u[0][0] is u[2]
    assert u[2][0] is u[0]


def test_tuple_cycle_through_dict(graph_diff):
    t = ({},)
    t[0]["me"] = t
    data, u = roundtrip(t, graph_diff)
    assert data == ref_dumps(t)
    assert u[0]["me"] is u


@pytest.mark.parametrize(
    "inner",
    [
        lambda: tuple(["inner", 12345678]),
        lambda: frozenset({("a", 1)}),
        lambda: [1, 2, 3],
        lambda: {"k": [1]},
        lambda: "".join(["fresh ", "str"]),
        lambda: int("1" * 25),
    ],
    ids=["tuple", "frozenset", "list", "dict", "str", "bigint"],
)
def test_an_object_held_once_inside_a_cyclic_tuple_is_written_once(inner, graph_diff):
    # Inside a cyclic tuple's outer (superseded) write every object is tracked, even one
    # only the tuple holds, since the tuple's real write meets it again: the real write then
    # refers to it, as the reference encoder does, rather than writing it a second time.
    items = []
    t = (items, inner())
    items.append(t)
    held_once = ([],)
    assert sys.getrefcount(t[1]) == sys.getrefcount(held_once[0])  # the tuple holds it alone
    data, u = roundtrip(t, graph_diff)
    assert data == ref_dumps(t)
    assert u[0][0] is u


def test_tuple_cycle_list_holds_tuple_twice(graph_diff):
    t = ([],)
    t[0].append(t)
    t[0].append(t)
    _, u = roundtrip(t, graph_diff)
    assert u[0][0] is u and u[0][1] is u


def test_tuple_cycle_two_paths(graph_diff):
    """Re-entry into the tuple through two different lists (pickle nests its POP here)."""
    t = ([], [])
    t[0].append(t)
    t[1].append(t)
    data, u = roundtrip(t, graph_diff)
    # spec/format.md section 6.5, "a general example": the middle occurrence is a copy too
    assert data == H + bytes.fromhex("94 5e d9 94 5e 93 02 d9 de 93 02 93 07 93 08 93 07 93 08")
    assert u[0][0] is u and u[1][0] is u


def test_nested_tuple_cycle(graph_diff):
    t = ([],)
    t2 = (t, "two")
    t[0].append(t2)
    for root in (t, t2, [t, t2], [t2, t]):
        roundtrip(root, graph_diff)


def test_nested_tuple_cycle_identities(graph_diff):
    t = ([],)
    t2 = (t, "two")
    t[0].append(t2)
    _, u = roundtrip([t, t2], graph_diff)
    assert u[0][0][0] is u[1]
    assert u[1][0] is u[0]


def test_deep_shared_dag_is_linear():
    node: list = [0]
    for _ in range(40):
        node = [node, node]  # 2**40 paths, 41 distinct objects
    data = amber.dumps(node)
    assert len(data) < 400
    u = amber.loads(data)
    for _ in range(40):
        assert u[0] is u[1]
        u = u[0]
    assert u == [0]


def test_ref_to_complete_tuple_decodes_same_object():
    u = amber.loads(H + bytes.fromhex("5A DD 01 93 01"))
    assert u == [(1,), (1,)]
    assert u[0] is u[1]


def test_supersede_of_any_value_then_ref():
    u = amber.loads(H + bytes.fromhex("5A C1 61 94 90 93 01"))
    assert u == ["a", "a"]
    assert u[0] is u[1]


# --------------------------------------------------------------------------- refs=False


def test_refs_false_writes_shared_twice(graph_diff):
    a = [1, 2, 3, 4, fresh_str("a shared string of some length")]
    value = [a, a, {"k": a}]
    with_refs = amber.dumps(value)
    without = amber.dumps(value, refs=False)
    assert len(without) > len(with_refs)
    assert without == ref_dumps(value, refs=False)
    u = amber.loads(without)
    assert u[0] == u[1] == u[2]["k"] == a
    assert u[0] is not u[1]
    assert u[0] is not u[2]["k"]
    assert u[0][4] is not u[1][4]


def test_refs_false_no_tracked_bits():
    s = fresh_str("shared string value")
    value = [s, s, 10**20, [s]]
    data = amber.dumps(value, refs=False)
    assert data == ref_dumps(value, refs=False)
    assert amber.Encoder(refs=False).encode(value) == data
    out = amber.loads(data)
    assert out == value and out[0] is not out[1]


def test_refs_false_cycle_list_raises_encode_error():
    a: list = []
    a.append(a)
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(a, refs=False)
    assert not isinstance(info.value, RecursionError)
    assert "cycle" in str(info.value).lower()
    # spec 6.6: the cycle is detected where the object is met again while being written
    assert info.value.path == "root[0]"
    assert "root[0]" in str(info.value)


def test_refs_false_cycle_dict_raises_encode_error():
    d: dict = {}
    d["me"] = [d]
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(d, refs=False)
    assert "cycle" in str(info.value).lower()
    assert info.value.path == 'root["me"][0]'
    assert 'root["me"][0]' in str(info.value)


def test_refs_false_tuple_cycle_path():
    t = ([],)
    t[0].append(t)
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps(t, refs=False)
    assert "cycle" in str(info.value).lower()
    assert "root[0][0]" in str(info.value)
    assert info.value.path == "root[0][0]"


def test_refs_false_deep_cycle_is_encode_error_not_recursion():
    head: list = []
    node = head
    for _ in range(500):
        nxt: list = []
        node.append(nxt)
        node = nxt
    node.append(head)
    with pytest.raises(amber.EncodeError):
        amber.dumps(head, refs=False)
    # with refs the same graph is fine
    u = amber.loads(amber.dumps(head))
    node = u
    for _ in range(501):
        node = node[0]
    assert node is u


@pytest.mark.parametrize(
    ("body", "check"),
    [
        ("94 dd 01 93 01", lambda u: u == (1,)),  # the SUPERSEDE's A itself is the target
        ("5a c0 93 01", lambda u: u == ["", ""] and u[0] is u[1]),  # tracked empty str
        ("5a dc 93 01", lambda u: u == [(), ()]),  # tracked empty tuple
        ("d8", lambda u: u == []),  # TRACKED bit that no REF targets
        ("c1 61", lambda u: u == "a"),
        ("e1 01 93 00", lambda u: u[1] is u),  # dict holding itself as a value
        ("5a f4 00 93 01", lambda u: u[0] is u[1] and u[0] == set()),
        ("5a eb 01 61 93 01", lambda u: u[0] is u[1] and u[0] == bytearray(b"a")),
        ("5a 94 d9 90 93 02 93 02", lambda u: u[0] is u[1] == [None]),  # ref into SUPERSEDE's A
        (
            "62 6e 00 00 00 00 00 00 f8 7f 90 6e 00 00 00 00 00 00 f8 7f 91",
            lambda u: len(u) == 2,  # two distinct NaN objects are two keys
        ),
        ("5a 6c 0a 6c 0a", lambda u: u == [5, 5]),  # non-minimal INT forms are accepted
    ],
    ids=[
        "supersede_self",
        "tracked_empty_str",
        "tracked_empty_tuple",
        "unreferenced_tracked",
        "tracked_short_str",
        "dict_self_value",
        "shared_set",
        "shared_bytearray",
        "ref_into_supersede_copy",
        "two_nans",
        "int_form_for_small",
    ],
)
def test_decoder_accepts_valid_handmade_payloads(body, check):
    u = amber.loads(H + bytes.fromhex(body))
    assert check(u), u


class _Dropper:
    """Encoded by a custom function that drops the last references to an object the memo
    recorded earlier in the same encode, then makes new lists of the same size."""

    def __init__(self, root: list, box: dict) -> None:
        self.root = root
        self.box = box


def _drop_and_make(dropper: _Dropper) -> object:
    dropper.box.clear()
    dropper.root[dropper.root.index(["victim"])] = None
    # CPython hands a new list the memory of the list freed last: without a reference of
    # its own, the memo would take these for the victim and write REFs to it.
    fresh = [["fresh", n] for n in range(3)]
    dropper.box["fresh"] = fresh  # held twice, so the memo looks each one up
    return fresh


def _victim_graph(before: int, after: int) -> tuple[list, dict]:
    # Built here, so that no frame of the test holds the victim: the root list and the box
    # are its only holders.
    fillers = [[f"filler-{i}"] for i in range(before + after)]
    box: dict = {"victim": ["victim"], "fillers": fillers}
    root: list = [*fillers[:before], box["victim"], *fillers[before:]]
    root.append(_Dropper(root, box))
    return root, box


@pytest.mark.parametrize(("before", "after"), [(0, 0), (0, 100), (10, 60), (100, 0)])
def test_an_object_freed_by_code_during_the_encode_is_never_taken_for_a_new_one(before, after):
    # Objects the memo recorded stay alive until the encode ends, wherever the memo keeps
    # them: its first tier (before < 64), or its table (before >= 64, or moved there by the
    # fillers after). A new object at a freed one's address would otherwise be a REF to it.
    custom = [amber.CustomType(_Dropper, _drop_and_make, lambda state: state)]
    root, box = _victim_graph(before, after)
    data = amber.dumps(root, custom=custom)
    assert root[before] is None and list(box) == ["fresh"]
    out = amber.loads(data, custom=custom)
    assert out[before] == ["victim"]
    assert out[-1] == [["fresh", n] for n in range(3)]


_KEY_HOOK: list = []


class _HookedKey:
    """A dict key whose state runs a hook: with sort_keys, the encoder encodes each key to
    sort the entries before it writes them, and that runs the hook in mid-encode."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return hash(self.n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _HookedKey) and other.n == self.n

    def __getstate__(self) -> dict:
        while _KEY_HOOK:
            _KEY_HOOK.pop()()
        return {"n": self.n}


def _sorted_keys_graph() -> tuple[list, dict]:
    box: dict = {"victim": ["victim"]}
    later: list = []
    root: list = [box["victim"], {_HookedKey(2): "b", _HookedKey(1): "a"}, later]

    def drop_and_make() -> None:
        box.clear()
        root[0] = None
        # The list freed last gives its memory to the next one made (see _drop_and_make).
        later.append([["fresh", n] for n in range(3)])

    _KEY_HOOK.append(drop_and_make)
    return root, box


def test_an_object_freed_while_keys_are_sorted_is_never_taken_for_a_new_one():
    # sort_keys encodes every key to order the entries before any is written, and a key's
    # class code may free an object the memo recorded before the dict.
    root, box = _sorted_keys_graph()
    data = amber.dumps(root, sort_keys=True, types=[_HookedKey])
    assert root[0] is None and not box and not _KEY_HOOK
    out = amber.loads(data, types=[_HookedKey])
    assert out[0] == ["victim"]
    assert [key.n for key in out[1]] == [1, 2]
    assert out[2] == [[["fresh", n] for n in range(3)]]


# Four more places pin the memo before something that can run Python code: a big int's
# conversion and an out-of-band buffer's views allocate objects for the garbage collector,
# a set is recorded before its iterator is made (and, in canonical mode, its elements
# sorted), and large bytes are copied with the GIL released. Each test below has an object the memo
# recorded earlier in the same encode freed at that moment, then new lists (or sets) made,
# which CPython places at the freed address, and put later in the graph: without the pin
# they would be written as REFs to the freed object.

# Up to 3.11 a collection starts inside the allocation that crosses the threshold, wherever
# that is, and the tests below require it to start at the place under test. From 3.12 on it
# waits for the bytecode loop, which none of these places enters, so nothing can free a
# recorded object there: a hook that changed the graph would run after the encode and test
# nothing. There no hook changes the graph, and each test checks the round trip of the same
# graph under the same forced collection.
COLLECTS_AT_ALLOCATION = sys.version_info < (3, 12)


def _where_it_can_run(hook: Callable[[], None]) -> Callable[[], None]:
    return hook if COLLECTS_AT_ALLOCATION else lambda: None


class _Tracked:
    """An object the garbage collector tracks: making one adds to its count."""


@contextlib.contextmanager
def _at_next_collection(hook: Callable[[], None]) -> Iterator[list[bool]]:
    """Runs hook once, as the next garbage collection starts. The count is raised above a
    threshold of 1 (and kept there: freeing a tracked object lowers it), so that the first
    object allocated for the collector inside the block starts one: an encode allocates none
    before the place under test. Yields a list that holds True once the hook has run."""
    ran: list[bool] = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start" and not ran:
            ran.append(True)
            hook()

    threshold = gc.get_threshold()
    enabled = gc.isenabled()
    gc.enable()
    gc.collect()
    gc.callbacks.append(on_gc)
    above = [_Tracked() for _ in range(4)]
    gc.set_threshold(1)
    try:
        yield ran
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(on_gc)
        if not enabled:
            gc.disable()
        del above


def _graph_around(value: object, before: int, after: int) -> tuple[list, dict, list]:
    """[fillers, victim, fillers, value, later]. The victim and the fillers are held twice
    (by the root and the box), so the memo records them: the victim in its first tier
    (before < 64), or in its table (before >= 64, or moved there by the fillers after).
    Built here, so that no frame of the test holds the victim."""
    fillers = [[f"filler-{i}"] for i in range(before + after)]
    box: dict = {"victim": ["victim"], "fillers": fillers}
    later: list = []
    root: list = [*fillers[:before], box["victim"], *fillers[before:], value, later]
    return root, box, later


def _drop_victim_and_make_lists(root: list, box: dict, later: list, at: int) -> None:
    box.pop("victim")
    root[at] = None
    # The list freed last gives its memory to the next one made (see _drop_and_make).
    fresh = [["fresh", n] for n in range(3)]
    box["fresh"] = fresh  # held twice, so the memo looks it up
    later.append(fresh)


def _as_written(root: list, at: int) -> list:
    """What a correct encode wrote: the victim as it was when it was met, and everything
    else (the lists made after it among them) as the graph holds it now."""
    return [*root[:at], ["victim"], *root[at + 1 :]]


_PLACES = [(0, 0), (0, 100), (10, 60), (100, 0)]


@pytest.mark.parametrize(("before", "after"), _PLACES)
def test_an_object_freed_by_a_collection_in_a_big_int_is_never_taken_for_a_new_one(before, after):
    # An int beyond 64 bits is converted by int.bit_length and int.to_bytes, which allocate:
    # a collection can start there and run any code (a gc callback here, a __del__ of cyclic
    # garbage elsewhere). The pin in `bigint` keeps what the memo recorded alive.
    big = 2**100 + 12345
    root, box, later = _graph_around(big, before, after)
    encoder = amber.Encoder()  # made first: making one allocates objects for the collector
    drop_and_make = functools.partial(_drop_victim_and_make_lists, root, box, later, before)
    with _at_next_collection(_where_it_can_run(drop_and_make)) as ran:
        data = encoder.encode(root)
    if COLLECTS_AT_ALLOCATION:
        assert ran and root[before] is None and len(later) == 1
    assert amber.loads(data) == _as_written(root, before)


@pytest.mark.parametrize("kind", [bytes, bytearray])
@pytest.mark.parametrize(("before", "after"), _PLACES)
def test_an_object_freed_by_a_collection_as_a_buffer_goes_out_of_band_is_never_taken_for_a_new_one(
    kind, before, after
):
    # The memoryviews handed to buffer_callback are made in mid-encode, and their allocation
    # can start a collection. The pin in `out_of_band` keeps what the memo recorded alive.
    buffer = kind(b"\x5a" * amber.OOB_THRESHOLD)
    root, box, later = _graph_around(buffer, before, after)
    views: list[memoryview] = []
    encoder = amber.Encoder(buffer_callback=views.append)
    drop_and_make = functools.partial(_drop_victim_and_make_lists, root, box, later, before)
    with _at_next_collection(_where_it_can_run(drop_and_make)) as ran:
        data = encoder.encode(root)
    if COLLECTS_AT_ALLOCATION:
        assert ran and root[before] is None and len(later) == 1
    assert len(views) == 1 and views[0].obj is buffer
    out = amber.loads(data, buffers=views)
    assert out == _as_written(root, before)
    assert type(out[-2]) is kind


class _SetMaker:
    """Encoded by a custom function that makes new sets until one sits where the victim
    set sat, and puts it later in the graph."""

    def __init__(self, victim_address: int, box: dict, later: list) -> None:
        self.victim_address = victim_address
        self.box = box
        self.later = later
        self.victim_dropped_before = False


def _make_sets(maker: _SetMaker) -> None:
    # Sets have no free list: a freed one's memory goes back to the allocator's pool, and
    # one of the next sets of its size gets it. Kept alive while searching, so that each
    # new one gets other memory; none matches while the victim lives.
    maker.victim_dropped_before = "victim" not in maker.box
    made = []
    for _ in range(1000):
        made.append({"fresh"})
        if id(made[-1]) == maker.victim_address:
            break
    maker.box["fresh"] = made[-1]  # held twice, so the memo looks it up
    maker.later.append(made[-1])


_SET_MAKER = [amber.CustomType(_SetMaker, _make_sets, lambda state: "maker")]


def _set_graph(before: int, after: int) -> tuple[list, dict, list]:
    """[fillers, victim set, fillers, maker, later], built here so that no frame of the
    test holds the victim."""
    fillers = [[f"filler-{i}"] for i in range(before + after)]
    box: dict = {"victim": {1, 2, 3}, "fillers": fillers}
    later: list = []
    maker = _SetMaker(id(box["victim"]), box, later)
    root: list = [*fillers[:before], box["victim"], *fillers[before:], maker, later]
    return root, box, later


@pytest.mark.parametrize(("before", "after"), _PLACES)
def test_a_set_freed_by_a_collection_before_it_is_sorted_is_never_taken_for_a_new_one(
    before, after
):
    # In canonical mode the memo records a set (a mutable one is always looked up), then the
    # encoder makes the set's iterator, which can start a collection, and sorts its elements.
    # Code run then may drop every holder of the set but the encoder: the set is freed once
    # it is written, and a set made later at its address would be a REF to it. The pin in
    # `set`, after the set is recorded, keeps it alive. (Objects
    # recorded before the set are pinned already: every set is reached through `cold_value`,
    # which pins. An element's class code run while the elements are sorted runs again, after
    # another pin, when the element is written.)
    root, box, later = _set_graph(before, after)

    def drop_set() -> None:
        box.pop("victim")
        root[before] = None

    encoder = amber.Encoder(canonical=True, custom=_SET_MAKER)
    with _at_next_collection(_where_it_can_run(drop_set)) as ran:
        data = encoder.encode(root)
    if COLLECTS_AT_ALLOCATION:
        assert ran and root[before] is None and len(later) == 1
    maker = root[-2]
    # Up to 3.11, by the collection the iterator started, not in the maker's own code.
    assert maker.victim_dropped_before or not COLLECTS_AT_ALLOCATION
    out = amber.loads(data, custom=_SET_MAKER)
    assert out == [*root[:before], {1, 2, 3}, *root[before + 1 : -2], "maker", [{"fresh"}]]


@pytest.mark.parametrize(("before", "after"), _PLACES)
def test_a_set_freed_by_a_collection_as_it_is_iterated_is_never_taken_for_a_new_one(before, after):
    # As above, without canonical mode: the memo records the set, then the encoder makes its
    # iterator, which can start a collection whose code drops every other holder of the set.
    # The encoder's own reference then keeps it only until it is written. The pin in `set`,
    # after the set is recorded, keeps it alive until the encode ends.
    root, box, later = _set_graph(before, after)

    def drop_set() -> None:
        box.pop("victim")
        root[before] = None

    encoder = amber.Encoder(custom=_SET_MAKER)
    with _at_next_collection(_where_it_can_run(drop_set)) as ran:
        data = encoder.encode(root)
    if COLLECTS_AT_ALLOCATION:
        assert ran and root[before] is None and len(later) == 1
    assert root[-2].victim_dropped_before or not COLLECTS_AT_ALLOCATION
    out = amber.loads(data, custom=_SET_MAKER)
    assert out == [*root[:before], {1, 2, 3}, *root[before + 1 : -2], "maker", [{"fresh"}]]


def _encode_while_a_thread_waits(root: list, hook: Callable[[], None]) -> bytes:
    """Encodes root while another thread waits for the GIL to run hook: it gets the GIL when
    the encode lets go of it (or, if it is scheduled too late, after the encode). A switch
    interval of a second keeps it from taking the GIL from the bytecode before the encode,
    and keeps the encode from taking it back before the hook is done."""
    go = threading.Lock()
    go.acquire()

    def wait_then_run() -> None:
        if go.acquire(timeout=10):
            hook()

    thread = threading.Thread(target=wait_then_run)
    thread.start()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        go.release()
        data = amber.dumps(root)
    finally:
        sys.setswitchinterval(switch)
        thread.join(10)
    assert not thread.is_alive()
    return data


@pytest.mark.parametrize(("before", "after"), _PLACES)
def test_an_object_freed_while_bytes_are_copied_without_the_gil_is_never_taken_for_a_new_one(
    before, after
):
    # Bytes of a mebibyte or more are copied with the GIL released, and other threads run
    # Python code meanwhile. The pin in `bytes` keeps what the memo recorded alive. 16 MiB
    # take milliseconds to copy, time enough for the waiting thread to be scheduled; an
    # attempt where it was not (its hook ran after the encode) is made again.
    for _attempt in range(5):
        root, box, later = _graph_around(bytes(16 << 20), before, after)
        drop_and_make = functools.partial(_drop_victim_and_make_lists, root, box, later, before)
        data = _encode_while_a_thread_waits(root, drop_and_make)
        assert root[before] is None and len(later) == 1
        out = amber.loads(data)
        if out[before] == ["victim"] and out[-1]:  # the hook ran while the bytes were copied
            break
    else:
        pytest.fail("the other thread never ran while the bytes were copied")
    assert out == _as_written(root, before)
