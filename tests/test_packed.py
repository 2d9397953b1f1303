"""Packed lists of numbers (spec 5.10.1): PACKED_INT_LIST and PACKED_FLOAT_LIST.

Values are built at run time (`fresh` below) where the bytes matter: the extension packs a
list only when CPython's reference counts prove that the list alone holds its items, and a
literal's constants are held by the code object too.
"""

from __future__ import annotations

import _testcapi as testcapi  # built with every CPython amber supports
import collections
import enum
import math
import struct

import amber
import pytest
from _common import HEADER, check_truncations, smallest_budget, varint
from _ref import encode_float, encode_int, float32_exact, ref_dumps, zigzag
from _strategies import checked_fresh_copy, i64_ints, number_lists
from amber._compare import graph_diff as diff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PACKED_INT_LIST, PACKED_FLOAT_LIST, LIST, REF = 0x78, 0x79, 0x71, 0x93
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def fresh(values: list) -> list:
    """A new list of new number objects equal to `values` (bit for bit for floats)."""
    out: list = []
    for v in values:
        if type(v) is float:
            out.append(struct.unpack("<d", struct.pack("<d", v))[0])
        elif type(v) is int:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            out.append(int.from_bytes(raw, "little", signed=True))
        else:
            out.append(v)
    return out


def ints_body(values: list[int]) -> bytes:
    return (
        bytes([PACKED_INT_LIST]) + varint(len(values)) + b"".join(varint(zigzag(v)) for v in values)
    )


def floats_body(values: list[float]) -> bytes:
    items = struct.pack(f"<{len(values)}d", *values)
    return bytes([PACKED_FLOAT_LIST]) + varint(len(values)) + items


def unpacked_body(values: list) -> bytes:
    """The LIST the items would take without packing (none of them shared)."""
    items = b"".join(encode_float(v) if type(v) is float else encode_int(v) for v in values)
    return bytes([LIST]) + varint(len(values)) + items


def check(value, graph_diff) -> bytes:
    """dumps(value): the same bytes as the reference encoder, and an exact round trip."""
    data = amber.dumps(value)
    assert data.hex(" ") == ref_dumps(value).hex(" ")
    out = amber.loads(data)
    assert graph_diff(value, out) is None
    return data


# -- what is packed ------------------------------------------------------------------------


BOUNDARIES = [0, -1, 63, 64, -64, -65, -16, -17, 256, 257, I64_MAX, I64_MIN]
for k in range(6, 63, 7):  # the last value of each varint width and the first of the next
    BOUNDARIES += [2**k - 1, 2**k, -(2**k), -(2**k) - 1]


def test_ints_at_every_varint_width(graph_diff):
    values = fresh(BOUNDARIES)
    data = check(values, graph_diff)
    assert data == HEADER + ints_body(BOUNDARIES)
    assert len(data) < len(HEADER + unpacked_body(BOUNDARIES))
    out = amber.loads(data)
    assert type(out) is list and all(type(v) is int for v in out) and out == BOUNDARIES


def test_floats_keep_their_bits(graph_diff):
    nan_payload = struct.unpack("<d", bytes.fromhex("010000000000f07f"))[0]
    specials = [-0.0, math.inf, -math.inf, math.nan, -math.nan, nan_payload, 5e-324, -5e-324]
    values = fresh([*specials, 0.1, 0.2, 0.3, 1e300])  # 3 of 12 FLOAT32-exact
    data = check(values, graph_diff)
    assert data == HEADER + floats_body(values)
    out = amber.loads(data)
    assert [struct.pack("<d", v) for v in out] == [struct.pack("<d", v) for v in values]


@pytest.mark.parametrize("n", range(4, 13))
def test_at_most_a_quarter_float32_exact(n, graph_diff):
    for k in range(n + 1):
        values = fresh([float(i) + 0.5 for i in range(k)] + [i / 3 + 0.1 for i in range(n - k)])
        assert sum(float32_exact(v) is not None for v in values) == k
        data = check(values, graph_diff)
        assert (data[3] == PACKED_FLOAT_LIST) == (4 * k <= n), (n, k)
        # the packed form is never the longer one
        assert len(data) <= len(HEADER + unpacked_body(values))


def test_short_lists_are_never_packed(graph_diff):
    for n in range(4):
        data = check(fresh([10**6 + i for i in range(n)]), graph_diff)
        assert data[3] == 0x58 + n
    assert check(fresh([10**6 + i for i in range(4)]), graph_diff)[3] == PACKED_INT_LIST


class Level(enum.IntEnum):
    LOW = 1000


COMMON_ODD = [None, True, False, 2**63, -(2**63) - 1, 10**30, "x", [], Level.LOW, 1 + 0j]


@pytest.mark.parametrize(
    ("values", "odd"),
    [([1000, 2000, 3000], odd) for odd in [*COMMON_ODD, 1.5, 0.1]]
    + [([0.1, 0.2, 0.3, 0.7], odd) for odd in [*COMMON_ODD, 0, 1000]],
    ids=repr,
)
def test_mixed_lists_stay_lists(values, odd, graph_diff):
    for where in (0, 1, len(values)):
        value = fresh(values)
        value.insert(where, odd)
        data = amber.dumps(value)
        assert data[3] == LIST, (value, data.hex(" "))
        assert graph_diff(value, amber.loads(data, types=[Level])) is None


def test_subclasses_of_list_keep_their_class():
    # The subclass is an OBJECT (MUTABLE_SUBCLASS); only its builtin value may be packed.
    class Numbers(list):
        pass

    data = amber.dumps(Numbers(fresh([1000, 2000, 3000, 4000])))
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data)
    back = amber.loads(data, types=[Numbers])
    assert type(back) is Numbers and back == [1000, 2000, 3000, 4000]


# -- sharing -------------------------------------------------------------------------------


def test_repeated_big_int_stays_one_object_and_small():
    x = 2**60 + int("12345")
    value = [x] * 1000
    data = amber.dumps(value)
    assert data[3] == LIST
    # one INT (tracked) and 999 two-byte REFs to it
    assert len(data) == 3 + 1 + 2 + 1 + 9 + 999 * 2
    assert data == ref_dumps(value)
    out = amber.loads(data)
    assert out == value and all(item is out[0] for item in out)


@pytest.mark.parametrize("x", [1000, 2**62, 0.1, -0.0, math.nan], ids=repr)
def test_a_shared_item_keeps_the_list_unpacked(x, graph_diff):
    (x,) = fresh([x])
    others = [12345, 23456, 34567] if type(x) is int else [1 / 3, 2 / 3, 4 / 3]
    value = {"list": [*fresh(others), x], "again": x}
    data = check(value, graph_diff)
    assert data[9] == LIST  # after the dict's tag and the key "list"
    out = amber.loads(data)
    assert out["list"][3] is out["again"]
    del x, value["again"]  # now the list alone holds every item
    packed_tag = PACKED_INT_LIST if type(others[0]) is int else PACKED_FLOAT_LIST
    assert amber.dumps(value)[9] == packed_tag


def test_small_ints_never_count_as_shared(graph_diff):
    # -10 is not one of CPython's cached ints: one object, held four times, still packed
    x = int("-10")
    data = check([x, x, x, x, *fresh([1000])], graph_diff)
    assert data == HEADER + ints_body([-10, -10, -10, -10, 1000])


def test_refs_off_and_canonical_pack_shared_items(graph_diff):
    x = float("0.1")
    value = [x, x, x, x]
    packed = HEADER + floats_body([0.1] * 4)
    assert amber.dumps(value, refs=False) == ref_dumps(value, refs=False) == packed
    assert amber.dumps(value, canonical=True) == ref_dumps(value, canonical=True) == packed
    assert amber.dumps(value)[3] == LIST


def test_an_item_held_outside_the_graph_keeps_the_list_unpacked(graph_diff):
    """The extension proves an item unshared by its reference count; a caller's variable
    counts too. The reference encoder, which counts holders in the graph, packs the list."""
    value = fresh([0.1, 0.2, 0.3, 0.4])
    held = value[2]
    data = amber.dumps(value)
    assert data[3] == LIST
    assert ref_dumps(value)[3] == PACKED_FLOAT_LIST
    assert graph_diff(value, amber.loads(data)) is None
    del held
    assert amber.dumps(value)[3] == PACKED_FLOAT_LIST


def test_a_packed_list_is_tracked_and_shared(graph_diff):
    inner = fresh([100, 200, 300, 400])
    data = check([inner, inner, {"k": inner}], graph_diff)
    assert data[4] == PACKED_INT_LIST | 0x80
    out = amber.loads(data)
    assert out[0] is out[1] is out[2]["k"]
    out[0].append(5)
    assert out[1][-1] == 5


def test_a_list_holding_itself_is_not_packed(graph_diff):
    value = fresh([1000, 2000, 3000])
    value.append(value)
    data = check(value, graph_diff)
    out = amber.loads(data)
    assert out[3] is out


def test_packed_lists_inside_a_tuple_cycle(graph_diff):
    """A tuple met again while it is written is written twice (SUPERSEDE): the packed list
    inside it is still written once, and its items lose nothing."""
    numbers = fresh([1000.5 + i / 7 for i in range(6)])
    t = (numbers, [])
    t[1].append(t)
    data = check(t, graph_diff)
    assert data[3] == 0x94  # SUPERSEDE
    assert floats_body(numbers)[1:] in data  # the run, once, after its (tracked) tag
    out = amber.loads(data)
    assert out[1][0] is out


def test_deque_items_are_packed(graph_diff):
    q = collections.deque(fresh([0.25 + i / 7 for i in range(8)]), maxlen=10)
    data = amber.dumps(q)
    assert data[3:6] == bytes([0x76, 0x09, 0x0A])  # EXT DEQUE, maxlen 10
    assert data[6:] == floats_body(list(q))
    assert graph_diff(q, amber.loads(data)) is None
    shared = q[3]
    data = amber.dumps([q, shared])
    assert data[7] == LIST
    out = amber.loads(data)
    assert out[0][3] is out[1]


def test_object_attributes_are_packed(graph_diff):
    from _vector_classes import Point

    p = Point(fresh([1.0 / 3] * 4), fresh([10**9 + i for i in range(4)]))
    data = amber.dumps(p)
    assert floats_body(p.x) in data and ints_body(p.y) in data
    assert graph_diff(p, amber.loads(data, types=[Point])) is None


# -- properties ----------------------------------------------------------------------------


shared_pools = st.lists(st.one_of(i64_ints, st.floats()), min_size=1, max_size=3)


@st.composite
def number_graphs(draw):
    """Lists of numbers, some sharing items with each other or with a dict, some holding
    themselves."""
    lists = draw(st.lists(number_lists, min_size=1, max_size=4))
    pool = draw(shared_pools)
    for target in lists:
        if draw(st.booleans()):
            target.insert(draw(st.integers(0, len(target))), draw(st.sampled_from(pool)))
        if draw(st.integers(0, 9)) == 0:
            target.append(target)
    return {"lists": lists, "pool": pool, "again": lists[: draw(st.integers(0, len(lists)))]}


@SETTINGS
@given(number_graphs())
def test_number_graphs_round_trip(x):
    y = checked_fresh_copy(x)
    if not _cyclic(y):
        assert amber.dumps(y, refs=False) == ref_dumps(y, refs=False)
    assert amber.dumps(amber.loads(amber.dumps(y))) == amber.dumps(y)


def _cyclic(x) -> bool:
    return any(item is lst for lst in x["lists"] for item in lst)


@SETTINGS
@given(st.lists(st.one_of(i64_ints, st.integers(), st.booleans()), min_size=4, max_size=40))
def test_int_lists(values):
    value = fresh(values)
    data = check(value, diff)
    qualifies = all(type(v) is int and I64_MIN <= v <= I64_MAX for v in values)
    assert (data[3] == PACKED_INT_LIST) == qualifies
    if qualifies:
        assert data == HEADER + ints_body(values)


@SETTINGS
@given(st.lists(st.floats(), min_size=4, max_size=40))
def test_float_lists(values):
    value = fresh(values)
    data = check(value, diff)
    exact = sum(float32_exact(v) is not None for v in values)
    assert (data[3] == PACKED_FLOAT_LIST) == (4 * exact <= len(values))
    assert len(data) <= len(HEADER + unpacked_body(values))


# -- decoding ------------------------------------------------------------------------------


def test_decoded_lists_are_plain_lists_of_plain_numbers():
    ints = amber.loads(HEADER + ints_body([0, 1000, I64_MIN]))
    floats = amber.loads(HEADER + floats_body([0.5, -0.0]))
    assert type(ints) is list and [type(v) for v in ints] == [int] * 3
    assert type(floats) is list and [type(v) for v in floats] == [float] * 2
    assert ints == [0, 1000, I64_MIN] and math.copysign(1, floats[1]) == -1
    ints.append(1)  # mutable, as any list
    assert amber.loads(HEADER + ints_body([])) == [] == amber.loads(HEADER + floats_body([]))


@pytest.mark.parametrize(
    "values",
    [
        [0] * 1000,
        [-16, 63] * 500,
        [64, 2**40, -(2**63)] * 300,
        [0.5, 0.1] * 500,
    ],
    ids=["small ints", "SMALL_INT range", "INT range", "floats"],
)
def test_max_alloc_charges_like_the_list(values):
    """A packed list needs the same allocation budget as the LIST of its items."""
    packed = HEADER + (floats_body(values) if type(values[0]) is float else ints_body(values))
    plain = HEADER + unpacked_body(values)
    assert smallest_budget(packed) == smallest_budget(plain)


def test_alloc_limit_inside_the_items_names_the_item():
    # the list is charged at its tag, each int outside -16..63 as it is read
    values = [10**6] * 10 + [0] * 10
    data = HEADER + ints_body(values)
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data, max_alloc=72 + 8 * 20 + 32 * 5 + 10)
    assert info.value.kind == "alloc_limit"
    assert info.value.offset == 5 + 3 * 5  # the sixth item: tag, count, five 3-byte items


def test_every_truncation_fails_cleanly():
    for data in (
        HEADER + ints_body(BOUNDARIES),
        HEADER + floats_body([0.1, -0.0, math.inf, 0.3, 0.7]),
        HEADER + b"\x5a" + ints_body([1000, 2**62]) + floats_body([0.1]),
    ):
        check_truncations(data)


def test_lying_counts_fail_before_allocating():
    for tag, count in [(0x78, 2**64 - 1), (0x79, 2**61), (0x78, 10**9), (0x79, 10**6)]:
        data = HEADER + bytes([tag]) + varint(count) + b"\x01" * 64
        with pytest.raises(amber.DecodeError) as info:
            amber.loads(data)
        assert (info.value.kind, info.value.offset) == ("length_too_large", 3)
    # counts the input can hold, beyond what max_alloc allows
    for body in (ints_body([1] * 10_000), floats_body([0.5] * 10_000)):
        with pytest.raises(amber.DecodeLimitError) as info:
            amber.loads(HEADER + body, max_alloc=10_000)
        assert (info.value.kind, info.value.offset) == ("alloc_limit", 3)


def test_a_packed_float_list_is_tracked_and_shared(graph_diff):
    inner = fresh([0.1, -1e-310, 1e300, math.pi])  # not float32-exact, so packed
    data = check([inner, {"k": inner}, inner], graph_diff)
    assert data[4] == PACKED_FLOAT_LIST | 0x80
    out = amber.loads(data)
    assert out[0] is out[1]["k"] is out[2]
    assert [struct.pack("<d", v) for v in out[0]] == [struct.pack("<d", v) for v in inner]


def test_a_float_that_cannot_be_made_fails_the_decode_cleanly():
    """Out of memory at any allocation of a long float run: MemoryError, or (when the
    allocation failed was not needed, a float came from CPython's free list) the exact value;
    never a crash or a list showing an unset slot."""
    values = fresh([i / 3 + 0.1 for i in range(600)])
    data = amber.dumps([values, values])
    assert data[4] == PACKED_FLOAT_LIST | 0x80
    assert_out_of_memory_fails_cleanly(data, [values, values])


def assert_out_of_memory_fails_cleanly(data: bytes, expected: list) -> None:
    """Fails one allocation at a time, the k-th of `loads(data)` for k in 1..700 by 7:
    each gives MemoryError or the exact value (`expected`, a list of one shared list)."""
    outcomes = set()
    for k in range(1, 700, 7):
        testcapi.set_nomemory(k, k + 1)  # only the k-th allocation from here fails
        try:
            out = amber.loads(data)
        except MemoryError:
            outcomes.add("MemoryError")
            continue
        finally:
            # Before the comparison, whose own allocations the hook would fail otherwise.
            testcapi.remove_mem_hooks()
        outcomes.add("value")
        assert out == expected and out[0] is out[1]
    assert "MemoryError" in outcomes
    assert amber.loads(data) == expected


# -- int runs, made a stretch at a time ------------------------------------------------------


def varied_ints(n: int) -> list[int]:
    """`n` ints of every kind a packed run holds: CPython's cached small ints, the
    SMALL_INT range, larger ones that need an allocation, negatives, the i64 extremes."""
    kinds = [7, 300, -5, -300, 63, 64, 2**40, I64_MAX, I64_MIN, 256, 257, -6]
    return fresh([kinds[i % len(kinds)] for i in range(n)])


@pytest.mark.parametrize("n", [4, 63, 64, 65, 127, 128, 129, 1000])
def test_int_runs_of_every_length_across_stretches(n, graph_diff):
    # The decoder reads a long run 64 items at a time and has them made together; a shorter
    # one item by item. Each item lands at its own index, whatever stretch it is in.
    values = varied_ints(n)
    data = check(values, graph_diff)
    assert data == HEADER + ints_body(values)
    out = amber.loads(data)
    assert out == values and [type(v) for v in out] == [int] * n


def test_a_packed_int_list_is_tracked_and_shared(graph_diff):
    inner = varied_ints(200)
    data = check([inner, {"k": inner}, inner], graph_diff)
    assert data[4] == PACKED_INT_LIST | 0x80
    out = amber.loads(data)
    assert out[0] is out[1]["k"] is out[2] and out[0] == inner


def test_alloc_limit_in_a_later_stretch_names_the_item():
    # 100 ints of three bytes each: the budget runs out at item 70, in the second stretch.
    values = [10**6] * 100
    data = HEADER + ints_body(values)
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data, max_alloc=72 + 8 * 100 + 32 * 70 + 10)
    assert info.value.kind == "alloc_limit"
    assert info.value.offset == 5 + 3 * 70  # tag, count, then 70 items before it


def test_an_int_that_cannot_be_made_fails_the_decode_cleanly():
    """Out of memory at any allocation of a long int run: MemoryError, or (when the
    allocation failed was not needed) the exact value; never a crash or a list showing an
    unset slot."""
    values = fresh([1000 + 7 * i for i in range(600)])  # none of them a cached small int
    data = amber.dumps([values, values])
    assert data[4] == PACKED_INT_LIST | 0x80
    assert_out_of_memory_fails_cleanly(data, [values, values])


# -- items read a word at a time -------------------------------------------------------------
#
# Eight one-byte items, or four two-byte ones, are taken from one 8-byte word
# (crates/amber-format/src/varint_word.rs); anything else is read item by item. Both must give
# the same ints, the same errors at the same offsets, and the same charges.


def one_or_two_byte_ints(n: int, seed: int) -> list[int]:
    """Runs of one-byte ints (-64..63) and two-byte ints (64 to 8191 in magnitude), of random
    lengths, so that words of each width start at every position of a stretch."""
    import random

    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n:
        two_bytes = rng.random() < 0.5
        for _ in range(rng.randint(1, 12)):
            if two_bytes:
                out.append(rng.choice([1, -1]) * rng.randint(64, 8191) - (rng.random() < 0.5))
            else:
                out.append(rng.randint(-64, 63))
    return fresh(out[:n])


@pytest.mark.parametrize("seed", range(8))
def test_one_and_two_byte_items_in_every_arrangement(seed, graph_diff):
    values = one_or_two_byte_ints(300, seed)
    assert all(-8193 <= v <= 8191 for v in values)
    data = check(values, graph_diff)
    assert data == HEADER + ints_body(values)
    assert amber.loads(data) == values


@SETTINGS
@given(
    st.lists(
        st.one_of(st.integers(-64, 63), st.integers(-8192, 8191), st.integers(-(2**20), 2**20)),
        min_size=60,
        max_size=200,
    )
)
def test_short_varint_lists(values):
    data = HEADER + ints_body(values)
    assert amber.loads(data) == values


# A stretch of 64 items tries words only when the stretch before it averaged at most two and
# a half bytes an item; after a stretch of longer items it is read item by item. Stretches of
# every width, in every order, must still give the ints written.
STRETCH_WIDTHS = {
    1: (-64, 63),
    2: (64, 8191),
    3: (8192, 2**20 - 1),
    6: (2**34, 2**40),
    10: (2**62, 2**63 - 1),
}


def stretch_ints(widths: list[int], seed: int) -> list[int]:
    """64 ints a stretch, each stretch of the varint width given (in bytes), signs mixed."""
    import random

    rng = random.Random(seed)
    out = []
    for width in widths:
        low, high = STRETCH_WIDTHS[width]
        for _ in range(64):
            v = rng.randint(low, high)
            out.append(v if width == 1 else rng.choice([v, -v - 1]))
    return fresh(out)


@pytest.mark.parametrize(
    "widths",
    [[3, 1, 2], [6, 6, 1, 10, 2, 3], [1, 3, 3, 2], [2, 10, 1], [3, 3, 3, 3], [10, 1]],
    ids=lambda w: "-".join(map(str, w)),
)
def test_stretches_of_long_and_short_items_in_turn(widths, graph_diff):
    values = stretch_ints(widths, len(widths))
    for i, width in enumerate(widths):
        assert all(len(varint(zigzag(v))) == width for v in values[64 * i : 64 * i + 64])
    data = check(values, graph_diff)
    assert data == HEADER + ints_body(values)
    # And one item short of whole stretches: the last stretch is cut short.
    assert amber.loads(HEADER + ints_body(values[:-1])) == values[:-1]


@SETTINGS
@given(
    st.lists(st.sampled_from(sorted(STRETCH_WIDTHS)), min_size=2, max_size=6), st.integers(0, 99)
)
def test_stretch_widths_in_any_order(widths, seed):
    values = stretch_ints(widths, seed)
    assert amber.loads(HEADER + ints_body(values)) == values


@pytest.mark.parametrize("first", [1000, 10**6], ids=["after_short_items", "after_long_items"])
@pytest.mark.parametrize("place", range(8))
@pytest.mark.parametrize("overlong", [b"\x80\x00", b"\x81\x00", b"\xff\x00"])
def test_an_overlong_item_in_a_later_stretch(first, place, overlong):
    # A first stretch of two-byte or three-byte items, then 80 two-byte items with one of
    # them overlong: the second stretch tries words or reads items alone, and both refuse
    # the same item at the same offset.
    head = b"".join(varint(zigzag(v)) for v in [first] * 64)
    good = b"".join(varint(zigzag(v)) for v in [1000] * 80)
    at = 2 * place
    body = bytes([PACKED_INT_LIST]) + varint(144) + head + good[:at] + overlong + good[at + 2 :]
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(HEADER + body)
    assert info.value.kind == "overlong_varint"
    assert info.value.offset == len(HEADER) + 1 + len(varint(144)) + len(head) + at


@pytest.mark.parametrize("place", range(8))
@pytest.mark.parametrize("overlong", [b"\x80\x00", b"\x81\x00", b"\xff\x00"])
def test_an_overlong_item_among_two_byte_items_is_refused_where_it_is(place, overlong):
    # 80 two-byte items (a run read a stretch at a time): one of them, at each place of a
    # word, written in two bytes though it fits in one.
    good = b"".join(varint(zigzag(v)) for v in [1000] * 80)
    at = 2 * (64 + place)
    body = bytes([PACKED_INT_LIST]) + varint(80) + good[:at] + overlong + good[at + 2 :]
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(HEADER + body)
    assert info.value.kind == "overlong_varint"
    assert info.value.offset == len(HEADER) + 2 + at
    # The same item in a short run, read item by item, is refused the same way.
    short = bytes([PACKED_INT_LIST]) + varint(5) + good[:4] + overlong + good[6:10]
    with pytest.raises(amber.DecodeError) as short_info:
        amber.loads(HEADER + short)
    assert (short_info.value.kind, short_info.value.offset) == ("overlong_varint", 3 + 2 + 4)


@pytest.mark.parametrize(("value", "width"), [(-50, 1), (1000, 2), (-1000, 2), (10**6, 3)])
@pytest.mark.parametrize("stop", [64, 65, 67, 70, 71, 99])
def test_alloc_limit_inside_a_word_names_the_item(value, width, stop):
    # 100 items, each charged (outside -16..63): the budget runs out at item `stop`, at
    # each place of a word of one-byte or two-byte items, or of items read alone (three-byte
    # items, and the second stretch after a first of them).
    data = HEADER + ints_body([value] * 100)
    with pytest.raises(amber.DecodeLimitError) as info:
        amber.loads(data, max_alloc=72 + 8 * 100 + 32 * stop + 10)
    assert info.value.kind == "alloc_limit"
    assert info.value.offset == 5 + width * stop
    assert amber.loads(data, max_alloc=72 + 8 * 100 + 32 * 100) == [value] * 100
