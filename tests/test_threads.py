"""Threads: one Encoder, one Decoder, the module functions and the streams shared by 8 threads.

Every thread waits on a barrier, then works through the same mixed payloads in its own order
(dicts, tuples, sets, big ints, strs of every kind, classes, numpy arrays, out-of-band buffers,
signed and compressed payloads) and checks every result against the value it started from
with ``amber._compare.graph_diff`` (identical graphs: types, bits and sharing), and every
encoding against the bytes one thread alone produced. The switch interval is made tiny for
the test so that threads are interrupted often, in the middle of every step; the payloads
that compress are large enough for ``dumps`` and ``loads`` to release the GIL while they
compress, decompress and sign.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import amber
import numpy as np
import pytest
from _common import varint
from amber._compare import graph_diff

THREADS = 8
# Each thread stops at the end of the round in which this many seconds have passed.
TIME_LIMIT = 10.0
ROUNDS = 3
KEY = amber.SigningKey(b"a secret of at least sixteen bytes", id=b"threads")


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float
    label: str = ""


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: object, b: object) -> None:
        self.a = a
        self.b = b


class Color(enum.Enum):
    RED = 1
    GREEN = 2


TYPES = [Point, Slotted, Color]


def big_text(n: int) -> list[str]:
    """Text that compresses well: repeated words of every str kind, none of them shared."""
    words = ["ascii", "café", "Ωμέγα", "漢字", "emoji 🐍", "lone \ud800 surrogate"]
    return [f"{words[i % len(words)]} {i % 97}" for i in range(n)]


def cases() -> list[tuple[str, Any]]:
    """Named values; each is encoded with every option set of ``ENCODINGS``."""
    shared = ["shared", 1]
    cyclic: list[Any] = [1, 2]
    cyclic.append(cyclic)
    return [
        ("scalars", [None, True, 0, -1, 2**63, -(3**150), 2**4000 + 1, 1.5, -0.0, 3 + 4j]),
        ("strs", ["", "ascii", "latin é", "ucs2 Ω漢", "ucs4 🐍", "a\ud800b", "x" * 5000]),
        ("dict", {"a": 1, 2: "b", (3, 4): [5, 6], frozenset({7}): {8: None}}),
        ("tuples", ((1, 2), ((3,), ()), tuple(range(50)))),
        ("sets", [{1, 2, 3}, frozenset({"a", "b"}), set(), {(1, 2), None}]),
        ("shared", [shared, shared, {"again": shared}]),
        ("cycle", cyclic),
        ("rows", [(i, f"name {i}", i * 0.5) for i in range(300)]),
        ("packed", list(range(-500, 500, 3))),
        ("classes", [Point(1, 2.5, "p"), Slotted(Point(3, 4.0), Color.GREEN), Color.RED]),
        ("bytes", [b"", b"\x00" * 300, bytearray(b"mutable")]),
        ("numpy", [np.arange(1000, dtype=np.float64), np.eye(7, dtype=np.int32)]),
        ("numpy_views", [np.arange(600).reshape(20, 30)[::2, ::3], np.ones((5, 4), order="F")]),
        ("numpy_scalars", [np.float32(1.5), np.int64(-7), np.datetime64("2024-01-02")]),
        ("big_text", big_text(40_000)),
        ("big_array", np.arange(300_000, dtype=np.int64) % 1000),
    ]


# Option sets for dumps, and the matching ones for loads.
# A payload that compresses well needs a larger max_alloc than its size alone allows.
BIG = {"max_alloc": 1 << 28}
ENCODINGS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "plain": ({}, {}),
    "zstd": ({"compress": "zstd"}, BIG),
    "lz4": ({"compress": "lz4"}, BIG),
    "signed": ({"key": KEY}, {"key": KEY}),
    "signed_zstd": ({"key": KEY, "compress": "zstd", "level": 5}, {"key": KEY, **BIG}),
    "signed_lz4": ({"key": KEY, "compress": "lz4"}, {"key": KEY, **BIG}),
}


@dataclasses.dataclass
class Case:
    name: str
    value: Any
    dumps_options: dict[str, Any]
    loads_options: dict[str, Any]
    payload: bytes


def all_cases() -> list[Case]:
    out = []
    for name, value in cases():
        for encoding, (dumps_options, loads_options) in ENCODINGS.items():
            payload = amber.dumps(value, **dumps_options)
            out.append(Case(f"{name}/{encoding}", value, dumps_options, loads_options, payload))
    return out


@pytest.fixture(scope="module")
def prepared() -> list[Case]:
    # Built once and checked by one thread first: what the threads must reproduce.
    made = all_cases()
    for case in made:
        back = amber.loads(case.payload, types=TYPES, **case.loads_options)
        assert graph_diff(case.value, back) is None, case.name
    # The big payloads must go through the compressor and the signer.
    big = {c.name: c for c in made}
    assert amber.envelope_info(big["big_text/zstd"].payload)["compression"] == "zstd"
    assert amber.envelope_info(big["big_array/signed_lz4"].payload)["compression"] == "lz4"
    assert len(big["big_text/plain"].payload) > 256 * 1024
    return made


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def hammer(work: Callable[[int, random.Random], list[str]]) -> list[str]:
    """Runs ``work(thread_index, rng)`` in THREADS threads started together; returns every
    failure any of them reported or raised."""
    barrier = threading.Barrier(THREADS)
    failures: list[str] = []

    def run(index: int) -> None:
        rng = random.Random(index)
        try:
            barrier.wait(timeout=60)
            failures.extend(work(index, rng))
        except BaseException as err:
            failures.append(f"thread {index} raised {type(err).__name__}: {err}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIME_LIMIT * 10)
    assert not any(t.is_alive() for t in threads), "a thread never finished"
    return failures


def rounds(rng: random.Random, items: list[Case]) -> Iterator[Case]:
    """The items in a new random order each round, for ROUNDS rounds or until TIME_LIMIT."""
    deadline = time.monotonic() + TIME_LIMIT
    for _ in range(ROUNDS):
        if time.monotonic() > deadline:
            return
        order = list(items)
        rng.shuffle(order)
        yield from order


def check_value(case: Case, back: Any, how: str) -> list[str]:
    diff = graph_diff(case.value, back)
    return [] if diff is None else [f"{case.name} {how}: {diff}"]


def values_of(index: int, prepared: list[Case]) -> dict[str, Any]:
    """The values thread ``index`` encodes, by case name: the shared ones for even threads,
    its own copies (built afresh, sharing nothing but constants) for odd threads."""
    if index % 2 == 0:
        return {case.name: case.value for case in prepared}
    own = dict(cases())
    return {case.name: own[case.name.split("/")[0]] for case in prepared}


def check_encoding(case: Case, data: bytes, private: bool, how: str) -> list[str]:
    """A thread's own copy must encode to the bytes of a single-threaded encode. A value that
    other threads hold too may not: a list of ints or of tuples is packed only while nothing
    else holds its items, and another thread walking the same list holds them for a moment.
    Its payload must then still decode to the same value, which ``check_value`` checks."""
    if private and data != case.payload:
        return [f"{case.name}: {how} gave other bytes"]
    return []


def test_shared_encoder_and_decoder(prepared: list[Case], fast_switching: None) -> None:
    encoders = {e: amber.Encoder(**d) for e, (d, _) in ENCODINGS.items()}
    decoders = {e: amber.Decoder(types=TYPES, **lo) for e, (_, lo) in ENCODINGS.items()}
    done = [0] * THREADS

    def work(index: int, rng: random.Random) -> list[str]:
        failures = []
        values = values_of(index, prepared)
        for case in rounds(rng, prepared):
            encoding = case.name.split("/")[1]
            data = encoders[encoding].encode(values[case.name])
            failures += check_encoding(case, data, index % 2 == 1, "Encoder.encode")
            failures += check_value(case, decoders[encoding].decode(data), "Decoder.decode")
            back = decoders[encoding].decode(case.payload)
            failures += check_value(case, back, "Decoder.decode(reference payload)")
            done[index] += 1
        return failures

    assert hammer(work) == []
    assert min(done) >= len(prepared), "every thread did at least one full round"


def test_module_functions(prepared: list[Case], fast_switching: None) -> None:
    def work(index: int, rng: random.Random) -> list[str]:
        failures = []
        values = values_of(index, prepared)
        for case in rounds(rng, prepared):
            data = amber.dumps(values[case.name], **case.dumps_options)
            failures += check_encoding(case, data, index % 2 == 1, "dumps")
            back = amber.loads(data, types=TYPES, **case.loads_options)
            failures += check_value(case, back, "loads")
            # A bytearray input (a buffer export, not bytes) decodes the same.
            back = amber.loads(bytearray(case.payload), types=TYPES, **case.loads_options)
            failures += check_value(case, back, "loads(bytearray)")
        return failures

    assert hammer(work) == []


def test_timestamps_and_verify(fast_switching: None) -> None:
    value = big_text(20_000)
    encoder = amber.Encoder(key=KEY, timestamp=True, compress="zstd")
    decoder = amber.Decoder(key=KEY, max_age=3600, **BIG)

    def work(index: int, rng: random.Random) -> list[str]:
        failures = []
        for i in range(10):
            data = encoder.encode(value) if i % 2 else amber.dumps(value, key=KEY, timestamp=True)
            info = amber.verify(data, key=KEY, max_age=3600)
            if info["timestamp"] is None or info["key_id"] != b"threads":
                failures.append(f"verify gave {info}")
            if graph_diff(value, decoder.decode(data)) is not None:
                failures.append("a timestamped payload decoded differently")
            bad = bytearray(data)
            bad[len(bad) // 2] ^= 1
            try:
                decoder.decode(bytes(bad))
            except amber.SignatureError:
                pass
            else:
                failures.append("an altered payload decoded")
        return failures

    assert hammer(work) == []


def test_out_of_band_buffers(fast_switching: None) -> None:
    big_bytes = bytes(range(256)) * (amber.OOB_THRESHOLD // 256 + 1)
    array = np.arange(amber.OOB_THRESHOLD // 8 + 10, dtype=np.float64)
    value = {"raw": big_bytes, "array": array, "fortran": np.asfortranarray(np.ones((600, 300)))}
    decoder = amber.Decoder()

    def work(index: int, rng: random.Random) -> list[str]:
        failures = []
        for i in range(8):
            buffers: list[memoryview] = []
            options: dict[str, Any] = {"compress": "lz4", "key": KEY} if i % 2 else {}
            data = amber.dumps(value, buffer_callback=buffers.append, **options)
            if len(buffers) != 3 or len(data) > 1000:
                failures.append(f"{len(buffers)} buffers, a payload of {len(data)} bytes")
                continue
            if i % 2:
                back = amber.loads(data, buffers=buffers, key=KEY, **BIG)
            else:
                # Copies: bytearrays come back as new objects, ndarrays as views of them.
                back = decoder.decode(data, buffers=[bytearray(b) for b in buffers])
            if graph_diff(value, back) is not None:
                failures.append(f"round {i}: {graph_diff(value, back)}")
        return failures

    assert hammer(work) == []


def stream_messages(index: int) -> list[Any]:
    """What thread ``index`` writes: small and large messages, each saying who wrote it."""
    out: list[Any] = []
    for seq in range(300):
        body: Any
        if seq % 10 == 9:
            body = big_text(5_000)  # over the frame size written in one call
        elif seq % 2:
            body = ("x" * 6000, 2**100 + seq)  # over 4096 bytes too
        elif seq % 4 == 0:
            body = {"points": [Point(seq, 0.5)], "set": {index, seq}}
        else:
            body = ("y" * (seq * 50), -(2**70) - seq)
        out.append((index, seq, body))
    return out


def test_shared_stream_writer(fast_switching: None) -> None:
    """Concurrent ``write`` calls on one StreamWriter each add one whole frame: the stream
    reads back with every message once and each thread's messages in its order."""
    sink = io.BytesIO()
    writer = amber.StreamWriter(sink, key=KEY)

    def work(index: int, rng: random.Random) -> list[str]:
        for message in stream_messages(index):
            writer.write(message)
        return []

    assert hammer(work) == []
    assert writer.count == THREADS * 300
    writer.close()
    # Large frames are written in two calls (length, then payload): the case that interleaves.
    assert max(len(amber.dumps(m, key=KEY)) for m in stream_messages(0)) > 4096
    got: dict[int, list[Any]] = {i: [] for i in range(THREADS)}
    for index, seq, body in amber.StreamReader(sink.getvalue(), key=KEY, types=TYPES):
        got[index].append((index, seq, body))
    for index in range(THREADS):
        assert graph_diff(stream_messages(index), got[index]) is None


def written_stream(count: int) -> tuple[bytes, list[Any]]:
    messages = [
        (i, big_text(3000) if i % 25 == 0 else {"i": i, "p": Point(i, 1.0)}) for i in range(count)
    ]
    sink = io.BytesIO()
    with amber.StreamWriter(sink, compress="lz4") as writer:
        for m in messages:
            writer.write(m)
    return sink.getvalue(), messages


@pytest.mark.parametrize("source", ["bytes", "file"])
def test_shared_stream_reader(source: str, fast_switching: None) -> None:
    """Threads pulling from one StreamReader get every message exactly once, intact."""
    stream, messages = written_stream(800)
    reader = amber.StreamReader(
        stream if source == "bytes" else io.BytesIO(stream), types=TYPES, **BIG
    )
    taken: list[list[Any]] = [[] for _ in range(THREADS)]

    def work(index: int, rng: random.Random) -> list[str]:
        while True:
            step = rng.randrange(10)
            if step == 0:
                payload = reader.read_payload()
                if payload is None:
                    return []
                taken[index].append(amber.loads(payload, types=TYPES, **BIG))
            else:
                try:
                    taken[index].append(next(reader))
                except StopIteration:
                    return []

    assert hammer(work) == []
    assert reader.index == len(messages)
    for got in taken:
        assert [m[0] for m in got] == sorted(m[0] for m in got), "each thread's in order"
    everything = sorted((m for got in taken for m in got), key=lambda m: m[0])
    assert graph_diff(messages, everything) is None
    reader.close()


def test_shared_stream_decoder(fast_switching: None) -> None:
    """Concurrent ``feed`` calls on one StreamDecoder are each atomic: with chunks of whole
    frames, fed in any order, every message comes out once and the count is right."""
    stream, messages = written_stream(400)
    frames = []
    reader = amber.StreamReader(stream)
    while (payload := reader.read_payload()) is not None:
        frames.append(bytes(payload))
    chunks = [
        b"".join(varint(len(p)) + p for p in frames[i : i + 3]) for i in range(0, len(frames), 3)
    ]
    decoder = amber.StreamDecoder(types=TYPES, **BIG)
    assert decoder.feed(stream[:3]) == []
    taken: list[Any] = []
    lock = threading.Lock()
    next_chunk = iter(range(len(chunks)))

    def work(index: int, rng: random.Random) -> list[str]:
        while True:
            with lock:
                i = next(next_chunk, None)
            if i is None:
                return []
            taken.extend(decoder.feed(chunks[i]))

    assert hammer(work) == []
    assert decoder.feed(b"\x00") == []
    decoder.close()
    assert decoder.finished and decoder.index == len(messages)
    assert graph_diff(messages, sorted(taken, key=lambda m: m[0])) is None


def text_bytes(size: int) -> bytes:
    """``size`` bytes of words: compresses, but not to nothing."""
    rng = random.Random(7)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(3000)
    ]
    out = bytearray()
    while len(out) < size:
        out += " ".join(rng.choices(words, k=1000)).encode()
    return bytes(out[:size])


def ran_meanwhile(operation: Callable[[], object]) -> tuple[int, float]:
    """How many times another thread ran Python code in the middle half of ``operation``, and
    how long the operation took. While a call holds the GIL throughout, that count is 0: the
    other thread runs only at the edges, when the caller is switched out in Python code on
    its way in or out (for long, on a busy machine: hence the margins)."""
    stamps: list[float] = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())
            for _ in range(100):
                pass

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    start = time.perf_counter()
    operation()
    end = time.perf_counter()
    stop.set()
    counter.join()
    margin = max((end - start) / 4, 0.01)
    return sum(start + margin < t < end - margin for t in stamps), end - start


@pytest.mark.parametrize("compress", ["zstd", "lz4", None])
def test_large_envelopes_release_the_gil(compress: str | None) -> None:
    """Compressing, signing, verifying and decompressing a large payload (from bytes or a
    memoryview of bytes) let other threads run; walking the objects (here one bytes object, a
    copy) is short beside it. (Without the release, the count is 0: a call into the extension
    never gives up the GIL by itself.)
    The payload grows until each call takes long enough to tell, which depends on the build."""
    size = 16 << 20
    while True:
        value = text_bytes(size)
        data = amber.dumps(value, compress=compress, key=KEY)
        results = [
            ran_meanwhile(lambda v=value: amber.dumps(v, compress=compress, key=KEY)),
            ran_meanwhile(lambda d=data: amber.loads(d, key=KEY, max_alloc=1 << 30)),
            # A memoryview of bytes cannot change either.
            ran_meanwhile(lambda d=data: amber.loads(memoryview(d), key=KEY, max_alloc=1 << 30)),
            # Verifying hashes the whole payload, compressed or not.
            ran_meanwhile(lambda d=data: [amber.verify(d, key=KEY) for _ in range(4)]),
        ]
        if min(took for _, took in results) > 0.1 or size >= 128 << 20:
            break
        size *= 2
    for meanwhile, took in results:
        assert took > 0.04, "long enough to tell"
        assert meanwhile > 0


def test_large_raw_copies_release_the_gil() -> None:
    """Copying the data of a large bytes, bytearray or numpy array into a payload, or out of
    one held in a bytes object, lets other threads run: the source cannot change (a bytes
    object, or the bytes input) and the copy goes into an object no other thread can see
    yet. (From a bytearray input, which another thread could write into, it holds the GIL.)
    The data grows until each copy takes long enough to tell, which depends on the machine."""
    size = 64 << 20
    while True:
        blob = bytes(range(256)) * (size // 256)
        array = np.frombuffer(blob, dtype=np.uint8)
        packed = {
            "bytes": amber.dumps(blob),
            "bytearray": amber.dumps(bytearray(blob)),
            "ndarray": amber.dumps(array),
        }
        results = {
            "dumps(bytes)": ran_meanwhile(lambda b=blob: amber.dumps(b)),
            **{
                f"loads({kind})": ran_meanwhile(lambda d=data: amber.loads(d))
                for kind, data in packed.items()
            },
        }
        if min(took for _, took in results.values()) > 0.06 or size >= 1 << 30:
            break
        size *= 2
    for name, (meanwhile, took) in results.items():
        assert took > 0.04, f"{name}: long enough to tell"
        assert meanwhile > 0, f"{name} held the GIL for {took:.3f} s"
    assert amber.loads(packed["ndarray"]).tobytes() == blob
    assert amber.loads(packed["bytearray"]) == bytearray(blob)
