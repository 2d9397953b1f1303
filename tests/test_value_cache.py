"""Short str values reused across decodes (crates/amber-py/src/decode/value_cache.rs).

An untracked SHORT_STR read as a container's item or a dict's value may come back as a str an
earlier decode made for the same text, while such lookups pay: a table that keeps missing
rests, and a decode that starts then makes every str anew, until one in a while tries the
table again. A value is handed out only for the very same bytes; a tracked str (the target
of REFs) is never taken from the table, so the identities the payload records stay apart.
"""

from __future__ import annotations

import random
import string

import amber
import pytest

# The table's rest lasts 64 decodes (REST_DECODES); these bounds leave room around it.
_REST_AT_LEAST = 32
_BACK_WITHIN = 300


def _spend_the_credit(seed: int) -> None:
    """Decodes one message of 2,000 new 15-letter values: every lookup misses, and the table's
    credit (at most 256) runs out inside this decode."""
    rng = random.Random(seed)
    fresh = ["".join(rng.choices(string.ascii_letters, k=15)) for _ in range(2_000)]
    assert amber.loads(amber.dumps(fresh)) == fresh


def _decodes_until_shared(data: bytes, limit: int) -> int | None:
    """How many decodes of `data` it takes until two in a row share their first value."""
    last = amber.loads(data)
    for n in range(1, limit + 1):
        back = amber.loads(data)
        if back[0] is last[0]:
            return n
        last = back
    return None


def test_a_repeated_value_comes_back_as_the_same_str():
    # Each value held once (a str held twice would be written tracked, with REFs to it).
    obj = ["active", "USD", "2", "a" * 23, {"status": "done"}, ("open",)]
    data = amber.dumps(obj)
    assert b"\x46active" in data  # an untracked SHORT_STR
    # Earlier tests may have left the table resting; a repeating value earns it back.
    assert _decodes_until_shared(data, _BACK_WITHIN) is not None
    first, second = amber.loads(data), amber.loads(data)
    assert first == second == obj
    assert [type(v) for v in second[:4]] == [str] * 4
    assert all(a is b for a, b in zip(first[:4], second[:4], strict=True))
    assert first[4]["status"] is second[4]["status"]
    assert first[5][0] is second[5][0]


def test_values_the_table_does_not_take_are_made_anew():
    # A str of 24 bytes or more (STR, not SHORT_STR), a non-ASCII one, and the root itself
    # (not read in a container's loop) are made by every decode.
    values = ["b" * 24, "caf\xe9", "\u20ac", "x" * 100]
    data = amber.dumps(values)
    assert _decodes_until_shared(amber.dumps(["warm", "warm!"]), _BACK_WITHIN) is not None
    first, second = amber.loads(data), amber.loads(data)
    assert first == second == values
    assert not any(a is b for a, b in zip(first, second, strict=True))
    root = amber.dumps("root-value")
    assert amber.loads(root) is not amber.loads(root)


def test_tracked_strs_keep_their_identities():
    # Two distinct strs of one text, each shared: four REF-linked places, two objects. Were a
    # tracked str handed out from the table, both would become one object.
    s1 = "".join(["sha", "red"])
    s2 = "".join(["sh", "ared"])
    assert s1 == s2 and s1 is not s2
    obj = [s1, s1, s2, s2, "shared"]
    data = amber.dumps(obj)
    for _ in range(3):
        back = amber.loads(data)
        assert back == obj
        assert back[0] is back[1] and back[2] is back[3]
        assert back[0] is not back[2]


def test_values_never_mix_up(graph_diff):
    # 24,000 distinct values through a table of 1,024 slots, values of equal length sharing
    # slots, each message decoded twice so that the second finds the first's strs.
    values = [f"v{i}" for i in range(20_000)] + [f"{i:08d}" for i in range(0, 28_000, 7)]
    for start in range(0, len(values), 400):
        chunk = values[start : start + 400]
        data = amber.dumps([chunk, {"k": chunk[-1]}])
        for _ in range(2):
            back = amber.loads(data)
            assert back == [chunk, {"k": chunk[-1]}]
            assert graph_diff([chunk, {"k": chunk[-1]}], back) is None


@pytest.mark.parametrize("length", range(1, 24))
def test_values_one_byte_apart_stay_apart(length):
    # The table compares a value's bytes with a cached str's a word at a time, in loads that
    # may overlap: a value one byte away from a cached one, at any place, must come back as
    # itself, in its own message and next to the cached one.
    base = "".join(chr(ord("a") + i % 26) for i in range(length))
    variants = [base[:at] + base[at].upper() + base[at + 1 :] for at in range(length)]
    variants += [base[:-1] + "z", base[1:] + "a"] if length > 1 else ["z"]
    for value in (v for v in variants if v != base):
        assert amber.loads(amber.dumps([base])) == [base]
        assert amber.loads(amber.dumps([value])) == [value]
        assert amber.loads(amber.dumps([base, value, base])) == [base, value, base]


@pytest.mark.parametrize("place", [0, 8, 16], ids=["first word", "second word", "third word"])
def test_values_that_share_a_slot_differ_in_each_word(place):
    # 3,000 values of 20 bytes in 1,024 slots: many land in a slot held by another of their
    # length, from which each differs only in the 4 bytes at `place`, in one of the three
    # words the table compares. A comparison that skipped that word would hand out the other.
    base = "abcdefghijklmnopqrst"
    values = [base[:place] + f"{n:04d}" + base[place + 4 :] for n in range(3000)]
    data = amber.dumps(values)
    for _ in range(2):
        assert amber.loads(data) == values
    assert [amber.loads(amber.dumps([v])) for v in values[::7]] == [[v] for v in values[::7]]


@pytest.mark.parametrize("size", range(2, 24))
def test_values_with_a_non_ascii_character_anywhere_are_not_taken_for_ascii(size):
    # The table tells ASCII from other text by the words it hashes; an ASCII value of the
    # same bytes but one must not be handed out for a value with a multi-byte character.
    for at in range(size - 1):
        ascii_value = "a" * size
        wide = "a" * at + "\xe9" + "a" * (size - at - 2)
        assert len(wide.encode()) == size
        assert amber.loads(amber.dumps([ascii_value, wide, ascii_value])) == [
            ascii_value,
            wide,
            ascii_value,
        ]
        back = amber.loads(amber.dumps([wide]))
        assert back == [wide]
        assert type(back[0]) is str


def test_new_values_rest_the_table_and_a_repeated_one_brings_it_back():
    repeated = amber.dumps(["pending", "pending-too"])
    assert _decodes_until_shared(repeated, _BACK_WITHIN) is not None
    _spend_the_credit(seed=1)
    # Resting: decodes that start now make every value anew.
    results = [amber.loads(repeated) for _ in range(_REST_AT_LEAST)]
    assert all(r == ["pending", "pending-too"] for r in results)
    assert len({id(r[0]) for r in results}) == _REST_AT_LEAST
    # One in a while a decode tries the table again, and a value that repeats earns it back.
    assert _decodes_until_shared(repeated, _BACK_WITHIN) is not None


def test_a_table_that_rests_still_decodes_everything(graph_diff):
    _spend_the_credit(seed=2)
    rng = random.Random(3)
    obj = {
        "names": ["".join(rng.choices(string.ascii_lowercase, k=n)) for n in range(24)],
        "wide": ["\xe9" * n for n in range(1, 12)],
        "mixed": [("ok", "ok"), {"ok": "ok"}, {"ok"}, frozenset({"ok"})],
    }
    for _ in range(_BACK_WITHIN // 4):
        back = amber.loads(amber.dumps(obj))
        assert graph_diff(obj, back) is None
