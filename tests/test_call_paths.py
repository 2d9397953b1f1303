"""The short paths small calls take, checked against the general ones.

``dumps(obj)`` and ``loads(data)`` without keywords skip option parsing. Payloads start in a
reusable per-thread buffer and move to a bytes object once they outgrow it; dict keys come
from a cache of keys made by earlier decodes; non-ASCII strs are decoded by amber rather than
CPython, stepping over ASCII eight bytes at a time; REF targets are found through an index
that grows with the payload, and the last few found are remembered while that pays. Each
must give exactly what the general path gives.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import platform
import sys
import threading

import amber
import pytest
from _common import run_python_json
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


@pytest.mark.parametrize("prefix", [0, 4070])
def test_short_strs_of_every_length_are_copied_whole(prefix):
    # Short strs are copied with a few overlapping loads and stores whose width depends on
    # the length; every length up to and past the short form, ASCII and not, must come out
    # exactly, also where the copy moves the payload out of the first buffer.
    # Up to 64 bytes are copied inline (sink.rs, `copy_short`), in widths chosen by length.
    letters = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ" * 4
    # Each str starts elsewhere in the alphabet, so that no byte a copy misses can happen to
    # hold the right value from the payload before (the first buffer is reused).
    strs = [letters[n : 2 * n] for n in range(81)] + ["\u00e9" * n for n in range(41)]
    strs += ["\u03b1" + letters[n : 2 * n - 2] for n in range(2, 81)]
    for s in strs:
        obj = ["p" * prefix, s]
        data = amber.dumps(obj)
        assert data == ref_dumps(obj), s
        assert amber.loads(data) == obj


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


_LARGE_OUTPUTS = """
import json, resource, amber
from _ref import ref_dumps

def payload(count):
    return [f"item {i} \N{GREEK SMALL LETTER ALPHA}" for i in range(count)]

# First, in a fresh process: the same large payload again and again.
obj = payload(100_000)
for _ in range(3):
    amber.dumps(obj)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    amber.dumps(obj)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
size = len(amber.dumps(obj))
same = True
# Each larger size grows the buffer to a new peak (so the output is copied out of it), a
# smaller one stays under the peak (so it is shrunk in place): both give the reference bytes.
for count in (200_000, 10_000, 400_000, 100_000, 300_000):
    obj = payload(count)
    same &= amber.dumps(obj) == ref_dumps(obj) == amber.dumps(obj)
print(json.dumps({"same": same, "size": size, "faults": faults}))
"""


def test_large_outputs_are_exact_and_reuse_memory():
    # An output that outgrows its buffer is shrunk before it is returned. Unless the first
    # output of each new peak size is copied out instead, glibc maps that peak afresh on
    # every call and each written page faults (about 340 for the 1.4 MB output here).
    result = run_python_json(_LARGE_OUTPUTS)
    assert result["same"]
    assert result["size"] > 1_000_000
    if sys.platform == "linux" and platform.libc_ver()[0] == "glibc":
        assert result["faults"] < 40, result


_OUT_OF_MEMORY = """
import json, resource, amber
# 150 MB of distinct bytes objects, then an address-space limit 100 MB above what the
# process maps now: the output runs out of memory mid-way, with most of it written.
items = [bytes([i % 256]) * 100_000 for i in range(1500)]
with open("/proc/self/statm") as f:
    mapped = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + 100 * 2**20, resource.RLIM_INFINITY))
try:
    amber.dumps(items)
    outcome = {"raised": None}
except Exception as e:
    outcome = {"raised": type(e).__name__, "cause": type(e.__cause__).__name__, "text": str(e)}
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
# The sink let go of its partial output; the next encode starts afresh.
outcome["after"] = amber.loads(amber.dumps(items[:3])) == items[:3]
print(json.dumps(outcome))
"""


def test_an_output_that_runs_out_of_memory_raises_and_the_next_encode_works():
    # A failed allocation leaves the sink with no room: every later write is dropped, and the
    # encode ends with an error naming the failure. (It used to go on writing through a NULL
    # pointer, and the child died of SIGSEGV.)
    if sys.platform != "linux":
        # Only Linux enforces RLIMIT_AS. CI runs on Linux, where this never skips; a CI run
        # elsewhere fails here rather than count a skip as a pass.
        if os.environ.get("CI"):
            pytest.fail("needs Linux: the child's address-space limit and /proc/self/statm")
        pytest.skip("needs Linux: the child's address-space limit and /proc/self/statm")
    result = run_python_json(_OUT_OF_MEMORY)
    assert result["raised"] == "EncodeError", result
    assert result["cause"] == "MemoryError", result
    assert "cannot allocate the output" in result["text"], result
    assert result["after"] is True


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


def test_remembered_keys_of_long_records_are_written_as_the_reference_encoder_does(graph_diff):
    # The encoder remembers the keys of a dict's first 8 positions by position and later ones
    # by address (memo.rs), in 64 slots: records of 40 keys nesting records of 20 other keys
    # and of some of the same keys, so that slots are shared and overwritten, and positions
    # take turns between shapes. Every REF must point where the reference encoder's does.
    outer_keys = [f"field_{i}" for i in range(40)]
    inner_keys = [f"inner_{i}" for i in range(20)] + outer_keys[5:25]
    records = []
    for r in range(30):
        inner = {k: r * 100 + j for j, k in enumerate(inner_keys[r % 7 :])}
        record = {k: (inner if j == 20 else f"v{r}-{j}") for j, k in enumerate(outer_keys)}
        records.append(record)
    # In tuples: a list of these dicts would be a RECORDS, whose keys are written once.
    for obj in (tuple(records), tuple(records[::-1]), (records[0], records[0])):
        data = amber.dumps(obj)
        assert data == ref_dumps(obj)
        assert graph_diff(obj, amber.loads(data)) is None
    # Without refs no key is remembered; in canonical mode strs are written by value.
    assert amber.loads(amber.dumps(records, refs=False)) == records
    assert amber.loads(amber.dumps(records, canonical=True)) == records


def test_cached_keys_are_only_equal_strs():
    # Same length, same first bytes, different last byte; non-ASCII keys are not cached.
    payloads = [{"abcdefghijklmnopqrstuvw": 1}, {"abcdefghijklmnopqrstuvx": 2}, {"é": 3}, {"e": 4}]
    for _ in range(3):
        for obj in payloads:
            back = amber.loads(amber.dumps(obj))
            assert back == obj
            assert [type(k) for k in back] == [str]


def test_cached_keys_differing_in_any_one_byte_stay_apart():
    # Keys of every length the cache hands out (up to 24 bytes), each differing from another
    # of its length in one byte, at every place: 2,400 keys in 1,024 slots, so that keys of
    # one length share slots, and the cached str is compared with all of the new key's bytes.
    keys = [
        "".join(letter if at == place else "k" for at in range(length))
        for length in range(1, 25)
        for place in range(length)
        for letter in "abcdefgh"
    ]
    keys = list(dict.fromkeys(keys))
    for _ in range(3):
        for start in range(0, len(keys), 300):
            chunk = keys[start : start + 300]
            back = amber.loads(amber.dumps({k: n for n, k in enumerate(chunk)}))
            assert list(back) == chunk
            assert list(back.values()) == list(range(len(chunk)))


def test_tracked_and_long_keys_still_decode(graph_diff):
    long_key = "L" * 40  # STR, not SHORT_STR: not cached
    shared = "shared-key"
    obj = [{shared: 1, long_key: 2}, {shared: 3, long_key: 4}]
    back = amber.loads(amber.dumps(obj))
    assert graph_diff(obj, back) is None
    assert next(iter(back[0])) is next(iter(back[1]))


# One character of each width CPython stores, at the edges of each.
_WIDE_CHARACTERS = ["\x80", "\xe9", "\xff", "\u0100", "\u03b1", "\u20ac", "\uffff"]
_WIDE_CHARACTERS += ["\U00010000", "\U0001f600", "\U0010ffff"]


def _size_in_memory(text: str) -> int:
    """The size of a fresh copy of text: encoding caches UTF-8 in the str, which counts."""
    return sys.getsizeof((text + "x")[:-1])


@pytest.mark.parametrize("wide", _WIDE_CHARACTERS)
@pytest.mark.parametrize("before", [0, 1, 7, 8, 9, 16, 17, 300])
@pytest.mark.parametrize("after", [0, 1, 8, 20])
def test_non_ascii_strs_decode_in_the_narrowest_kind(wide, before, after):
    # CPython compares strs of different kinds as unequal without looking at their
    # characters, so a str in a wider kind than needed would break == and dict lookups.
    text = "a" * before + wide + "b" * after + wide
    for got in (amber.loads(amber.dumps(text)), next(iter(amber.loads(amber.dumps({text: 0}))))):
        assert got == text
        assert sys.getsizeof(got) == _size_in_memory(text)
        assert {text: 1}[got] == 1


def test_non_ascii_strs_mixing_every_width():
    text = "".join(_WIDE_CHARACTERS) + "plain" * 5 + "".join(reversed(_WIDE_CHARACTERS))
    got = amber.loads(amber.dumps([text, text[3:], text[:-2]]))
    assert got == [text, text[3:], text[:-2]]
    assert [sys.getsizeof(s) for s in got] == [_size_in_memory(s) for s in got]
    assert {sys.getsizeof(s) - len(s) * 4 for s in got} == {_size_in_memory("\U00010000") - 4}


# Invalid UTF-8 after ASCII runs of each length around the eight-byte step.
_BAD_SEQUENCES = [
    b"\xc3\x28",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe0\x80\x80",
    b"\x80",
]


@pytest.mark.parametrize("bad", _BAD_SEQUENCES)
@pytest.mark.parametrize("before", [0, 1, 7, 8, 9, 16, 17])
def test_invalid_utf8_after_ascii_is_refused(bad, before):
    placeholder = "a" * before + "\u20ac" * 2
    good = amber.dumps(placeholder)
    at = good.index("\u20ac".encode())
    # Same byte length as the placeholder's two euro signs, so the str's length prefix holds.
    data = good[:at] + (bad + b"a" * 6)[:6] + good[at + 6 :]
    with pytest.raises(amber.DecodeError) as info:
        amber.loads(data)
    assert info.value.kind == "invalid_utf8"


@pytest.mark.parametrize("distinct", [1, 127, 128, 129, 300, 5000, 40_000])
def test_refs_to_many_distinct_targets(distinct, graph_diff):
    # The index of REF targets is made at the first REF and doubles as more values are
    # tracked: targets tracked before it was made, after it, and across each doubling.
    pool = [f"s{n}" for n in range(distinct)]
    obj = [pool[(n * 7919) % distinct] for n in range(2 * distinct + 50)]
    obj += [[pool[0]], pool[-1]]
    data = amber.dumps(obj)
    got = amber.loads(data)
    assert graph_diff(obj, got) is None
    assert len({id(s) for s in got[:-2]}) == distinct


def _phases(*phases):
    # Each phase: (how many items, the pool its items are drawn from in a fixed mixed order).
    # A None in the pool stands for the next of 1,000 cold strs, in turn.
    items = []
    cold = iter(_COLD[n % 1000] for n in range(10**6))
    for count, pool in phases:
        drawn = (pool[(n * 7919 + n // 3) % len(pool)] for n in range(count))
        items += [next(cold) if item is None else item for item in drawn]
    return items


_HOT = [2.5, "hot", 2**70, b"bytes", (1, "t")]
# More cold strs than the encoder's memo holds before it prefetches its lookups (4,096).
_COLD = [f"cold-{n}" for n in range(6000)]


@pytest.mark.parametrize(
    "phases",
    [
        # A few targets met over and over: the memory of recent targets stays on.
        [(20_000, _HOT)],
        [(5_000, _HOT[:1])],
        # Many targets: it turns off early, and the hot ones that follow go to the index.
        [(9_000, _COLD), (5_000, _HOT)],
        # Hot, then many (it turns off mid-decode), then hot again.
        [(5_000, _HOT), (9_000, _COLD), (5_000, _HOT)],
        # Two REFs to hot targets for each to a cold one, about the line where it turns off.
        [(9_000, [_HOT[0], _HOT[1], None])],
    ],
    ids=["hot", "one", "cold-then-hot", "hot-cold-hot", "mixed"],
)
def test_refs_through_the_memory_of_recent_targets(phases, graph_diff):
    obj = _phases(*phases)
    data = amber.dumps(obj)
    assert data == ref_dumps(obj)
    got = amber.loads(data)
    assert graph_diff(obj, got) is None
    # Every item is the one object decoded for its original, not a copy.
    first = {}
    for original, item in zip(obj, got, strict=True):
        assert first.setdefault(id(original), item) is item


_PLAIN_AND_KEYWORD_VALUES = [None, {"a": [1, 2.5, "s"], "b": (1,)}, "x" * 5000, [[1]] * 3]


@pytest.mark.parametrize("obj", _PLAIN_AND_KEYWORD_VALUES)
def test_calls_without_keywords_agree_with_the_full_path(obj, graph_diff):
    plain = amber.dumps(obj)
    assert plain == ref_dumps(obj)
    # Any keyword, even one repeating a default, takes the full function.
    assert amber.dumps(obj=obj) == plain
    assert amber.dumps(obj, refs=True) == plain
    assert amber.dumps(obj, max_depth=None, key=None) == plain
    assert graph_diff(obj, amber.loads(plain)) is None
    assert graph_diff(obj, amber.loads(data=plain)) is None
    assert graph_diff(obj, amber.loads(plain, max_depth=1000, types=None)) is None


def test_options_still_apply_on_the_full_path():
    nested = amber.dumps([[[1]]])
    with pytest.raises(amber.DecodeLimitError):
        amber.loads(nested, max_depth=2)
    assert amber.loads(nested) == [[[1]]]
    x = [1000]
    assert amber.dumps([x, x], refs=False) != amber.dumps([x, x])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: amber.dumps(), "dumps() missing 1 required positional argument: 'obj'"),
        (lambda: amber.dumps(1, 2), "dumps() takes 1 positional arguments but 2 were given"),
        (lambda: amber.loads(), "loads() missing 1 required positional argument: 'data'"),
        (lambda: amber.loads(b"", b""), "loads() takes 1 positional arguments but 2 were given"),
        (lambda: amber.dumps(1, nonsense=True), "unexpected keyword argument 'nonsense'"),
        (lambda: amber.loads(b"", nonsense=True), "unexpected keyword argument 'nonsense'"),
    ],
)
def test_wrong_calls_are_refused_with_the_full_functions_messages(call, message):
    with pytest.raises(TypeError) as caught:
        call()
    assert message in str(caught.value)


def test_errors_on_the_short_path_are_the_usual_exceptions():
    with pytest.raises(amber.DecodeError) as caught:
        amber.loads(b"\xab\x41\x01\x71")
    assert (caught.value.kind, caught.value.offset) == ("truncated", 4)
    with pytest.raises(amber.EncodeError) as encode_failure:
        amber.dumps([1, object()])
    assert "object" in str(encode_failure.value)
    # The failures leave nothing behind for the next call.
    assert amber.loads(amber.dumps({"k": "v"})) == {"k": "v"}


def test_keyword_calls_are_matched_for_every_option_of_the_signature():
    # The keyword path matches names against its own tables: a name missing there would
    # still work, through the full function, but slowly. Hold the tables to the signatures.
    for function, table in (
        (amber.dumps, amber._amber._DUMPS_KEYWORDS),
        (amber.loads, amber._amber._LOADS_KEYWORDS),
    ):
        keyword_only = [
            name
            for name, p in inspect.signature(function).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        assert list(table) == keyword_only


@dataclasses.dataclass
class _Point:
    x: int
    y: int


def test_keyword_calls_agree_with_the_full_path(graph_diff):
    obj = {"b": [1, 2.5, "s"], "a": (1,), "c": {3, 1, 2}}
    # A name made at run time is not interned: the full function takes that call.
    canonical = "".join(["canon", "ical"])
    assert amber.dumps(obj, canonical=True) == amber.dumps(obj, **{canonical: True})
    assert amber.dumps(obj, canonical=True, sort_keys=True) != amber.dumps(obj, canonical=True)
    assert amber.dumps(obj, refs=False, canonical=False) == amber.dumps(obj, refs=False)
    data = amber.dumps(obj)
    for options in ({"max_depth": 5}, {"unknown_fields": "error"}, {"placeholders": True}):
        assert graph_diff(obj, amber.loads(data, **options)) is None

    class Text(str):
        pass

    assert graph_diff(obj, amber.loads(data, unknown_fields=Text("ignore"))) is None
    # The defaults the keyword path fills in for options not given are the signature's: no
    # placeholders (a class not allowed is refused), refs on, keys in dict order.
    signature = inspect.signature(amber.loads).parameters
    assert signature["placeholders"].default is False
    assert signature["unknown_fields"].default == "ignore"
    point = _Point(1, 2)
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(amber.dumps(point), max_depth=50)
    assert amber.loads(amber.dumps(point), types=[_Point]) == point
    shared = [1, 2]
    assert amber.loads(amber.dumps([shared, shared], max_depth=50)) == [shared, shared]
    decoded = amber.loads(amber.dumps([shared, shared], max_depth=50))
    assert decoded[0] is decoded[1]
    assert list(amber.loads(amber.dumps({"b": 1, "a": 2}, max_depth=50))) == ["b", "a"]
    with pytest.raises(ValueError, match="unknown_fields must be"):
        amber.loads(data, unknown_fields="nope")
    with pytest.raises(amber.DecodeLimitError):
        amber.loads(amber.dumps([[[1]]]), max_depth=2)


@pytest.mark.parametrize(
    "call",
    [
        lambda: amber.dumps(1, refs=1),
        lambda: amber.dumps(1, canonical="yes"),
        lambda: amber.loads(amber.dumps(1), placeholders=0),
        lambda: amber.loads(amber.dumps(1), unknown_fields=b"ignore"),
        lambda: amber.loads(amber.dumps(1), b"", max_depth=3),
    ],
)
def test_keyword_calls_the_fast_path_leaves_get_the_full_functions_errors(call):
    with pytest.raises(TypeError):
        call()


def test_short_path_functions_keep_their_signature_and_docs():
    for function, first in ((amber.dumps, "obj"), (amber.loads, "data")):
        parameters = inspect.signature(function).parameters
        assert next(iter(parameters)) == first
        assert parameters[first].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(parameters.values())[1:])
        assert function.__doc__ and function.__name__ in function.__doc__
        assert function.__module__ == "amber._amber"


_MANY_SHORT_CALLS = """
import json, resource, amber

def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

class Job:
    pass

payload = amber.dumps({"id": 1, "name": "x", "tags": ["a", "b"]})
for _ in range(20_000):
    amber.loads(payload)
    amber.dumps({"id": 1})
    amber.loads(payload, types=[Job], max_depth=50)
    amber.dumps({"id": 1}, canonical=True, types=[Job])
before = rss_kib()
for _ in range(200_000):
    amber.loads(payload)
    amber.dumps({"id": 1})
    amber.loads(payload, types=[Job], max_depth=50)
    amber.dumps({"id": 1}, canonical=True, types=[Job])
print(json.dumps({"growth_kib": rss_kib() - before}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_short_path_calls_release_what_they_hold():
    # Each call runs inside pyo3's attach count, so a reference it drops is released at once.
    # Without it, pyo3 queues such drops until its next entry: 16 bytes per loads here, which
    # 400,000 calls would show as about 6 MB of growth. The keyword calls take the same
    # short path, and the remembered `types=` list must not grow either.
    result = run_python_json(_MANY_SHORT_CALLS)
    assert result["growth_kib"] < 2048, result


# Keyword calls whose values are all immutable objects (None, bools, ints, floats, strs,
# bytes) are remembered with their checked options after the second such call in a row
# (crates/amber-py/src/keyword_cache.rs); these tests change one value between calls and
# check that each call gets its own options.


def _nested(depth: int) -> object:
    obj: object = 0
    for _ in range(depth):
        obj = [obj]
    return obj


def test_a_remembered_call_with_other_values_gets_its_own_limits():
    shallow, deep = amber.dumps(_nested(3)), amber.dumps(_nested(30))
    for _ in range(3):
        for limit in (10, 50):
            # One call site, the value changing call by call.
            if limit == 10:
                with pytest.raises(amber.DecodeLimitError):
                    amber.loads(deep, max_depth=limit)
            else:
                assert amber.loads(deep, max_depth=limit) == _nested(30)
            assert amber.loads(shallow, max_depth=limit) == _nested(3)
        for limit in (10, 50):
            if limit == 10:
                with pytest.raises(amber.EncodeError):
                    amber.dumps(_nested(30), max_depth=limit)
            else:
                assert amber.dumps(_nested(30), max_depth=limit) == deep


def test_an_options_dict_changed_between_calls_takes_effect():
    payload = amber.dumps(list(range(1000)))
    options: dict[str, object] = {"max_alloc": 10**9, "unknown_fields": "error"}
    for _ in range(3):
        assert amber.loads(payload, **options) == list(range(1000))
    options["max_alloc"] = 64
    with pytest.raises(amber.DecodeLimitError):
        amber.loads(payload, **options)
    options["max_alloc"] = 10**9
    assert amber.loads(payload, **options) == list(range(1000))
    encode_options: dict[str, object] = {"canonical": False, "sort_keys": False}
    value = {"b": 1, "a": 2}
    for _ in range(3):
        assert amber.dumps(value, **encode_options) == amber.dumps(value)
    encode_options["sort_keys"] = True
    assert amber.dumps(value, **encode_options) == amber.dumps(value, sort_keys=True)
    assert amber.dumps(value, **encode_options) != amber.dumps(value)


def test_values_that_change_every_call_are_each_checked():
    # A new int object per call, equal or not: never taken for the last call's.
    payload = amber.dumps(list(range(1000)))
    for i in range(6):
        if i % 2:
            with pytest.raises(amber.DecodeLimitError):
                amber.loads(payload, max_alloc=int("64") + i)
        else:
            assert amber.loads(payload, max_alloc=10**9 + i) == list(range(1000))


def test_bad_options_fail_on_every_call():
    for _ in range(4):
        with pytest.raises(ValueError, match="max_depth"):
            amber.loads(amber.dumps(1), max_depth=0)
        with pytest.raises(ValueError, match="unknown_fields"):
            amber.loads(amber.dumps(1), unknown_fields="warn")
        with pytest.raises(ValueError, match="level"):
            amber.dumps(1, compress="zstd", level=99)


def test_keys_buffers_and_allow_lists_are_not_kept_by_the_keyword_cache():
    # Signing keys are never remembered beyond the caller's own references, nor one call's
    # buffers, nor the objects of types= (classes must be able to die): a remembered types=
    # list is held by weak references to its items.
    key = b"k" * 32
    signed = amber.dumps({"a": 1}, key=key)
    types: list[type] = [_Point]
    data = amber.dumps(_Point(1, 2), types=types)
    buffers: list[bytes] = []

    def counts() -> tuple[int, ...]:
        return tuple(map(sys.getrefcount, (key, types, buffers, _Point)))

    before = counts()
    for _ in range(5):
        assert amber.loads(signed, key=key) == {"a": 1}
        assert amber.dumps({"a": 1}, key=key, timestamp=False) == signed
        assert amber.loads(data, types=types) == _Point(1, 2)
        assert amber.dumps(_Point(1, 2), types=types) == data
        assert amber.loads(amber.dumps(1), buffers=buffers) == 1
    assert counts() == before


@dataclasses.dataclass
class _Point:
    x: int
    y: int


def test_threads_with_their_own_options_each_get_theirs():
    deep = amber.dumps(_nested(30))
    failures: list[str] = []

    def run(limit: int) -> None:
        for _ in range(200):
            try:
                got = amber.loads(deep, max_depth=limit)
                if limit < 31:
                    failures.append(f"max_depth={limit} decoded 30 levels")
                elif got != _nested(30):
                    failures.append(f"max_depth={limit} decoded {got!r}")
            except amber.DecodeLimitError:
                if limit >= 31:
                    failures.append(f"max_depth={limit} refused 30 levels")

    threads = [threading.Thread(target=run, args=(limit,)) for limit in (5, 40, 20, 100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures[:3]
