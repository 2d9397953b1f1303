"""Canonical mode (spec section 6.7): equal values give identical bytes."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import amber
import pytest
from _notation import build, load_vectors, vector_bytes
from _ref import Unsupported, ref_dumps
from _strategies import graphs, trees
from hypothesis import HealthCheck, assume, given, settings

VECTORS = load_vectors("canonical.json")


def fresh_str(s: str) -> str:
    """A new str object equal to s (literals are shared constants)."""
    return "".join(list(s))


def canonical(value: object, sort_keys: bool = True) -> bytes:
    return amber.dumps(value, canonical=True, sort_keys=sort_keys)


def test_vector_file_is_not_empty():
    assert len(VECTORS) >= 10


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_encodes_exactly(vector):
    value = build(vector["value"])
    expected = vector_bytes(vector)
    sort_keys = vector["sort_keys"]
    assert amber.dumps(value, canonical=True, sort_keys=sort_keys).hex() == expected.hex()
    assert ref_dumps(value, canonical=True, sort_keys=sort_keys).hex() == expected.hex()


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_decodes_and_reencodes_to_itself(vector):
    data = vector_bytes(vector)
    decoded = amber.loads(data)
    assert amber.dumps(decoded, canonical=True, sort_keys=vector["sort_keys"]) == data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_extension_matches_reference_encoder(value):
    for sort_keys in (False, True):
        try:
            expected = ref_dumps(value, canonical=True, sort_keys=sort_keys)
        except Unsupported:
            assume(False)
        assert amber.dumps(value, canonical=True, sort_keys=sort_keys) == expected


@settings(max_examples=200, deadline=None)
@given(trees)
def test_output_is_a_fixed_point(value):
    data = canonical(value)
    again = canonical(amber.loads(data))
    assert again == data


# The same value built in separate interpreters with different str hash seeds: set iteration
# orders differ between them, canonical bytes must not.
_SEED_SCRIPT = """
import sys, amber
words = [f"word{i}" for i in range(40)]
value = {
    "set": set(words),
    "frozen": frozenset((w, i) for i, w in enumerate(words)),
    "nested": {frozenset(words[:5]), frozenset(words[5:9])},
    "dict": {w: i for i, w in enumerate(reversed(words))},
}
canonical = sys.argv[1] == "canonical"
sys.stdout.write(amber.dumps(value, canonical=canonical, sort_keys=canonical).hex())
"""


def _encode_with_seed(seed: int, mode: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    result = subprocess.run(
        [sys.executable, "-c", _SEED_SCRIPT, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_bytes_do_not_depend_on_the_hash_seed():
    plain = {_encode_with_seed(seed, "plain") for seed in range(4)}
    # The test can fail: without canonical mode the seeds do give different bytes.
    assert len(plain) > 1
    outputs = {_encode_with_seed(seed, "canonical") for seed in range(4)}
    assert len(outputs) == 1


def test_dict_insertion_order_is_ignored_only_with_sort_keys():
    a = {"x": 1, "y": 2, 3: "z"}
    b = {3: "z", "y": 2, "x": 1}
    assert canonical(a, sort_keys=True) == canonical(b, sort_keys=True)
    assert canonical(a, sort_keys=False) != canonical(b, sort_keys=False)
    assert amber.loads(canonical(b)) == b


def test_sharing_of_immutables_does_not_change_the_bytes():
    s = "a string long enough not to be cached " * 2
    n = 10**30
    t = (s, 1.5)
    when = datetime.datetime(2024, 5, 17, 12, 30)
    dec = decimal.Decimal("1.10")
    uid = uuid.UUID(int=7)
    shared = [s, s, n, n, t, t, when, when, dec, dec, uid, uid]
    copies = [
        s,
        fresh_str(s),
        n,
        int(str(n)),
        t,
        (fresh_str(s), 1.5),
        when,
        datetime.datetime(2024, 5, 17, 12, 30),
        dec,
        decimal.Decimal("1.10"),
        uid,
        uuid.UUID(int=7),
    ]
    assert canonical(shared) == canonical(copies)
    # Without canonical mode the shared objects are REFs: the bytes differ.
    assert amber.dumps(shared) != amber.dumps(copies)


def test_sharing_of_mutables_is_kept():
    inner = [1, 2]
    shared = [inner, inner]
    data = canonical(shared)
    assert data != canonical([[1, 2], [1, 2]])
    out = amber.loads(data)
    assert out[0] is out[1]


def _mutable_held_only_by_a_shared_tuple(make):
    # Built at run time so that nothing but the tuple holds the mutable object, and nothing
    # but the outer list (twice) holds the tuple.
    row = (None, make())
    return [row, row]


@pytest.mark.parametrize(
    "make", [lambda: bytearray(b"x"), lambda: [1], lambda: {"k": 1}, lambda: {2}]
)
def test_mutables_inside_a_tuple_written_twice_stay_shared(make):
    # A canonical encoder writes the shared tuple in full at both places, so the mutable
    # object inside it is met twice although only the tuple holds it: the second meeting
    # must be a REF to the first, as in the reference encoder.
    value = _mutable_held_only_by_a_shared_tuple(make)
    data = canonical(value)
    assert data == ref_dumps(value, canonical=True)
    out = amber.loads(data)
    assert out[0] is not out[1]
    assert out[0][1] is out[1][1]
    assert out == value


def test_mutables_inside_shared_rows_stay_shared():
    row = (None, bytearray(b"x"))
    rows = [row, (1, bytearray(b"y")), row, (2, bytearray(b"z"))]
    del row
    data = canonical(rows)
    assert data == ref_dumps(rows, canonical=True)
    out = amber.loads(data)
    assert out[0][1] is out[2][1]
    assert out[1][1] is not out[3][1]


def test_cycles_survive(graph_diff):
    a: list[object] = []
    a.append(a)
    d: dict[str, object] = {"self": None}
    d["self"] = d
    value = [a, d]
    out = amber.loads(canonical(value))
    assert graph_diff(value, out) is None


def test_tuple_in_a_cycle_is_written_by_value():
    items: list[object] = []
    t = (items,)
    items.append(t)
    data = canonical(t)
    # tuple, tracked list, the tuple again by value, REF to the list at body offset 1
    assert data == bytes.fromhex("ab4101 5d d9 5d 9301")
    assert ref_dumps(t, canonical=True) == data
    out = amber.loads(data)
    # The tuple has no identity in canonical output: the inner one is an equal copy.
    assert type(out) is tuple and out[0][0] is not out
    assert out[0][0][0] is out[0]


def test_sets_of_rich_values_are_ordered():
    days = [datetime.date(2024, 1, d) for d in (3, 1, 2)]
    forward = set(days)
    backward = set(reversed(days))
    assert canonical(forward) == canonical(backward)
    assert amber.loads(canonical(forward)) == forward


def test_unsupported_type_in_a_set_element_names_its_place():
    with pytest.raises(amber.EncodeError) as info:
        canonical({"key": frozenset([(1, threading.Lock())])})
    assert "_thread.lock" in str(info.value)
    assert info.value.path == 'root["key"]{0}[1]'


def test_unsupported_key_in_a_sorted_dict_names_its_place():
    with pytest.raises(amber.EncodeError) as info:
        canonical({"outer": {"fine": 1, threading.Lock(): 1}})
    assert "_thread.lock" in str(info.value)
    assert info.value.path.startswith('root["outer"]<key ')


def test_depth_limit_inside_a_set_reports_the_callers_limit():
    deep: object = 0
    for _ in range(20):
        deep = (deep,)
    with pytest.raises(amber.EncodeError) as info:
        amber.dumps([{deep}], canonical=True, max_depth=10)
    assert "max_depth=10" in str(info.value)
    assert amber.loads(amber.dumps([{deep}], canonical=True, max_depth=30)) == [{deep}]


def test_sort_keys_alone_sorts_dicts_but_keeps_refs_to_strs():
    s = fresh_str("shared text long enough")
    data = amber.dumps({"b": s, "a": s}, sort_keys=True)
    assert data.index(b"\x41a") < data.index(b"\x41b")
    assert 0x93 in data  # the second occurrence of s is a REF
    out = amber.loads(data)
    assert out["a"] is out["b"]


def test_encoder_options():
    encoder = amber.Encoder(canonical=True, sort_keys=True)
    assert encoder.canonical and encoder.sort_keys
    assert "canonical=True" in repr(encoder)
    value = {"b": {3, 2, 1}, "a": 0}
    assert encoder.encode(value) == canonical(value)
    assert amber.Encoder().canonical is False


def test_canonical_without_refs():
    value = {"k": {1, 3, 2}}
    data = amber.dumps(value, canonical=True, refs=False)
    assert data == canonical(value, sort_keys=False)


def test_vector_file_lists_only_known_fields(vectors_dir: Path):
    doc = json.loads((vectors_dir / "canonical.json").read_text())
    for v in doc["vectors"]:
        assert set(v) <= {"name", "sort_keys", "value", "hex"}, v["name"]


def test_numpy_scalars_are_values_and_arrays_keep_identity():
    import numpy as np

    x = np.float32(1.5)
    assert canonical([x, x]) == canonical([x, np.float32(1.5)])
    arr = np.arange(3)
    out = amber.loads(canonical([arr, arr]))
    assert out[0] is out[1]
