"""The short paths small calls take, checked against the general ones.

Payloads start in a reusable per-thread buffer and move to a bytes object once they outgrow
it; dict keys come from a cache of keys made by earlier decodes. Each must give exactly what
the general path gives, and calls with and without keywords must agree.
"""

from __future__ import annotations

import inspect
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


def test_keyword_calls_take_the_full_path():
    obj = {"a": [1, 2.5, "s"]}
    plain = amber.dumps(obj)
    assert amber.dumps(obj=obj) == plain
    assert amber.dumps(obj, refs=True) == plain
    assert amber.loads(data=plain) == obj
    assert amber.loads(plain, max_depth=10) == obj
    with pytest.raises(amber.DecodeLimitError):
        amber.loads(amber.dumps([[[1]]]), max_depth=2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: amber.dumps(), "missing 1 required positional argument"),
        (lambda: amber.dumps(1, 2), "positional"),
        (lambda: amber.loads(), "missing 1 required positional argument"),
        (lambda: amber.loads(b"", b""), "positional"),
        (lambda: amber.dumps(1, nonsense=True), "nonsense"),
        (lambda: amber.loads(b"", nonsense=True), "nonsense"),
    ],
)
def test_bad_calls_raise_type_error(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_short_path_errors_match_the_full_path():
    bad = b"\xab\x41\x01\x71\x05"
    with pytest.raises(amber.DecodeError) as short:
        amber.loads(bad)
    with pytest.raises(amber.DecodeError) as full:
        amber.loads(bad, max_depth=1000)
    assert str(short.value) == str(full.value)
    assert (short.value.offset, short.value.kind) == (full.value.offset, full.value.kind)
    with pytest.raises(amber.EncodeError) as short_enc:
        amber.dumps([object()])
    with pytest.raises(amber.EncodeError) as full_enc:
        amber.dumps([object()], refs=True)
    assert str(short_enc.value) == str(full_enc.value)
    with pytest.raises(TypeError, match="loads"):
        amber.loads(12)


def test_signatures_survive():
    assert str(inspect.signature(amber.dumps)).startswith("(obj, *, refs=True")
    assert str(inspect.signature(amber.loads)).startswith("(data, *, max_depth=1000")
    assert amber.dumps.__name__ == "dumps"
    assert amber.loads.__name__ == "loads"
    assert "Encodes" in (amber.dumps.__doc__ or "")


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
