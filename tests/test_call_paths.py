"""The short paths small calls take, checked against the general ones.

Payloads start in a reusable per-thread buffer and move to a bytes object once they outgrow
it; dict keys come from a cache of keys made by earlier decodes. Each must give exactly what
the general path gives.
"""

from __future__ import annotations

import threading

import amber
import pytest
from _ref import ref_dumps

# The reusable first buffer is 4096 bytes: outputs on both sides of it, and far past it.
_SIZES = [0, 1, 4090, 4091, 4092, 4093, 4094, 4095, 4096, 4097, 8192, 8193, 100_000]


@pytest.mark.parametrize("size", _SIZES)
def test_outputs_around_the_first_buffer(size, graph_diff):
    obj = "x" * size
    data = amber.dumps(obj)
    assert data == ref_dumps(obj)
    assert data == amber.dumps(obj, refs=True, max_depth=1000)
    assert graph_diff(obj, amber.loads(data)) is None


def test_outputs_that_grow_past_the_first_buffer_step_by_step(graph_diff):
    # Many small writes, so the move out of the first buffer happens mid-value.
    obj = [[i, str(i), float(i)] for i in range(3000)]
    data = amber.dumps(obj)
    assert data == ref_dumps(obj)
    assert graph_diff(obj, amber.loads(data)) is None


@pytest.mark.parametrize("prefix", [0, 1000, 3000, 4000, 4090])
@pytest.mark.parametrize("make", [lambda i: 10**12 + i, lambda i: i / 7 + 0.1])
def test_packed_runs_that_cross_out_of_the_first_buffer(prefix, make, graph_diff):
    # A packed list writes its items ahead of what the sink counts as written; when the
    # first buffer runs out mid-list, those items must move with the rest.
    items = [make(i) for i in range(1500)]
    obj = ["p" * prefix, items]
    data = amber.dumps(obj)
    assert data == ref_dumps(obj)
    assert graph_diff(obj, amber.loads(data)) is None


def test_nested_encode_inside_a_custom_encoder_gets_its_own_buffer(graph_diff):
    class Boxed:
        def __init__(self, inner: object) -> None:
            self.inner = inner

    def encode(box: Boxed) -> bytes:
        # A dumps call inside a dumps call: the outer one holds the thread's buffer.
        return amber.dumps(box.inner)

    def decode(state: bytes) -> Boxed:
        return Boxed(amber.loads(state))

    custom = [amber.CustomType(Boxed, encode, decode)]
    inner = {"k": "v" * 5000}
    outer = [Boxed(inner), "y" * 3000, Boxed([1, 2, 3])]
    data = amber.dumps(outer, custom=custom)
    back = amber.loads(data, custom=custom)
    assert graph_diff(inner, back[0].inner) is None
    assert back[1] == "y" * 3000
    assert back[2].inner == [1, 2, 3]
    # The thread's buffer is intact afterwards.
    assert amber.dumps("z" * 10) == ref_dumps("z" * 10)


def test_threads_each_encode_correctly(graph_diff):
    errors: list[str] = []

    def work(seed: int) -> None:
        for i in range(300):
            obj = {"seed": seed, "i": i, "text": "t" * ((seed * 37 + i * 101) % 6000)}
            data = amber.dumps(obj)
            if data != ref_dumps(obj) or amber.loads(data) != obj:
                errors.append(f"thread {seed} item {i}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_cached_keys_never_mix_up(graph_diff):
    # 20,000 distinct short keys in turn through a cache of 1,024 slots: every slot is
    # overwritten many times, and keys of equal length share slots.
    keys = [f"k{i}" for i in range(20_000)] + [f"{i:08d}" for i in range(0, 20_000, 7)]
    for round_ in range(2):
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            obj = {k: i + round_ for i, k in enumerate(chunk)}
            back = amber.loads(amber.dumps(obj))
            assert list(back) == chunk
            assert graph_diff(obj, back) is None


def test_cached_keys_are_only_equal_strs():
    # Same length, same first bytes, different last byte; non-ASCII keys are not cached.
    payloads = [{"abcdefghijklmnopqrstuvw": 1}, {"abcdefghijklmnopqrstuvx": 2}, {"é": 3}, {"e": 4}]
    for _ in range(3):
        for obj in payloads:
            back = amber.loads(amber.dumps(obj))
            assert back == obj
            assert [type(k) for k in back] == [str]


def test_tracked_and_long_keys_still_decode(graph_diff):
    long_key = "L" * 40  # STR, not SHORT_STR: not cached
    shared = "shared-key"
    obj = [{shared: 1, long_key: 2}, {shared: 3, long_key: 4}]
    back = amber.loads(amber.dumps(obj))
    assert graph_diff(obj, back) is None
    assert next(iter(back[0])) is next(iter(back[1]))
