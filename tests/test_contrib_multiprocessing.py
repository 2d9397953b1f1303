"""amber.contrib.multiprocessing between real processes, honest and compromised.

The children's bodies are in _mp_children.py, which a "spawn" child imports by name. Every wait
is bounded (poll, get and join take timeouts) and every child is joined, or terminated, before
its test ends.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import queue
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import _mp_children as children
import amber
import numpy as np
import pytest
from _mp_children import KEY, MarkerGadget, Point, queue_item, rich_graph
from amber.contrib import Codec, OptionsError
from amber.contrib.multiprocessing import (
    DEFAULT_MAX_MESSAGE,
    AmberConnection,
    Pipe,
    Queue,
)

WAIT = 10.0  # seconds for anything a child should do promptly
CONTEXTS = ["spawn", "fork"]
POINT_OPTIONS = {"types": ["_mp_children.Point"]}


@contextlib.contextmanager
def child(
    ctx: multiprocessing.context.BaseContext, target: Callable[..., Any], *args: Any
) -> Iterator[multiprocessing.process.BaseProcess]:
    """A started child that is gone when the block ends, however it ends."""
    proc = ctx.Process(target=target, args=args, daemon=True)
    proc.start()
    try:
        yield proc
    finally:
        proc.join(WAIT)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


def finished(proc: multiprocessing.process.BaseProcess) -> None:
    proc.join(WAIT)
    assert proc.exitcode == 0, f"child {proc.name} ended with {proc.exitcode}"


def received(end: AmberConnection) -> Any:
    assert end.poll(WAIT), "nothing arrived in time"
    return end.recv()


def check_graph_identity(graph: dict[str, Any]) -> None:
    """What rich_graph shares and nests, checked by hand (graph_diff checks it too)."""
    assert graph["self"] is graph
    assert graph["cycle"][0] is graph["cycle"]
    assert graph["a"] is graph["b"] is graph["nested"][0] is graph["nested"][1]["again"]
    assert type(graph["tuple"]) is tuple and type(graph["set"]) is set
    assert type(graph["point"]) is Point and graph["point"] == Point(3, -4)
    if "big_array" in graph:
        assert graph["big_again"] is graph["big_array"]


# --------------------------------------------------------------------------- honest peers


@pytest.mark.parametrize("out_of_band", [False, True], ids=["in_band", "out_of_band"])
@pytest.mark.parametrize("method", CONTEXTS)
def test_rich_graphs_travel_both_ways(method: str, out_of_band: bool, graph_diff: Any) -> None:
    ctx = multiprocessing.get_context(method)
    ours, theirs = Pipe(codec=POINT_OPTIONS, ctx=ctx, out_of_band=out_of_band)
    sent = [rich_graph(), rich_graph(big=True)]
    with ours, child(ctx, children.echo_then_send_own, theirs, len(sent)) as proc:
        theirs.close()
        for graph in sent:
            ours.send(graph)
            back = received(ours)
            assert graph_diff(graph, back) is None
            check_graph_identity(back)
        own = received(ours)
        assert graph_diff(rich_graph(big=True), own) is None
        check_graph_identity(own)
        # out of band, an array is a view of the bytes that arrived, which are immutable
        assert own["big_array"].flags.writeable is not out_of_band
        assert own["array"].flags.writeable
        finished(proc)


@pytest.mark.parametrize("method", CONTEXTS)
def test_queue_with_two_producers(method: str, graph_diff: Any) -> None:
    ctx = multiprocessing.get_context(method)
    # Under fork the children share this process's objects, so a Codec object will do; under
    # spawn they rebuild the codec from its options.
    codec: Any = POINT_OPTIONS if method == "spawn" else Codec(types=[Point])
    q = Queue(codec=codec, ctx=ctx, out_of_band=True)
    count = 12
    try:
        with (
            child(ctx, children.produce, q, "p1", count) as p1,
            child(ctx, children.produce, q, "p2", count) as p2,
        ):
            got: dict[str, list[Any]] = {"p1": [], "p2": []}
            done = []
            for _ in range(2 * count + 2):
                item = q.get(timeout=WAIT)
                if isinstance(item, tuple):
                    done.append(item)
                else:
                    got[item["tag"]].append(item)
            assert sorted(done) == [("p1", "done"), ("p2", "done")]
            for tag, items in got.items():
                # one producer's items arrive whole and in the order it put them
                assert [item["i"] for item in items] == list(range(count))
                for i, item in enumerate(items):
                    assert graph_diff(queue_item(tag, i), item) is None
            assert q.empty()
            with pytest.raises(queue.Empty):
                q.get(timeout=0.05)
            finished(p1)
            finished(p2)
    finally:
        q.close()


def test_queue_worker_in_spawned_child_with_signed_codec(graph_diff: Any) -> None:
    """The key and the allowed class reach the child as options; the parent, whose codec
    accepts signed payloads only, gets the child's results."""
    ctx = multiprocessing.get_context("spawn")
    tasks = Queue(codec={"key": KEY}, ctx=ctx)
    results = Queue(codec={"key": KEY, **POINT_OPTIONS}, ctx=ctx)
    numbers = list(range(15))
    try:
        with child(ctx, children.square_worker, tasks, results) as proc:
            for n in numbers:
                tasks.put({"n": n})
            tasks.put(None)
            answers = [results.get(timeout=WAIT) for _ in numbers]
            assert results.get(timeout=WAIT) == "bye"
            for n, answer in zip(numbers, answers, strict=True):
                assert graph_diff(({"n": n}, n * n, Point(n, n * n)), answer) is None
            finished(proc)
    finally:
        tasks.close()
        results.close()


# --------------------------------------------------------------------------- compromised peers


@pytest.mark.parametrize("method", CONTEXTS)
def test_pickle_from_compromised_child_runs_nothing(method: str, tmp_path: Any) -> None:
    ctx = multiprocessing.get_context(method)
    marker = tmp_path / "created-by-amber-receiver"
    control = tmp_path / "created-by-stdlib-receiver"
    ours, theirs = Pipe(ctx=ctx)
    stdlib_ours, stdlib_theirs = ctx.Pipe()
    args = (theirs, stdlib_theirs, str(marker), str(control))
    with ours, stdlib_ours, child(ctx, children.send_pickle_gadgets, *args) as proc:
        theirs.close()
        stdlib_theirs.close()
        assert ours.poll(WAIT)
        with pytest.raises(amber.DecodeError) as info:
            ours.recv()
        assert info.value.kind == "bad_magic"
        assert info.value.offset == 0
        assert "message 0" in str(info.value)
        # the same pickle in an out-of-band buffer is only bytes
        hidden = received(ours)
        expected = pickle.dumps(MarkerGadget(str(marker))) + bytes(amber.OOB_THRESHOLD)
        assert type(hidden) is bytes and hidden == expected
        assert not marker.exists()
        # The control: the stdlib's recv unpickles what the same child wrote, and runs it.
        assert stdlib_ours.poll(WAIT)
        stdlib_ours.recv().close()
        assert control.exists()
        finished(proc)
    assert not marker.exists()


def test_pickle_put_into_queue_pipe_runs_nothing(tmp_path: Any) -> None:
    ctx = multiprocessing.get_context("fork")
    marker = tmp_path / "created-by-queue-reader"
    q = Queue(ctx=ctx)
    try:
        with child(ctx, children.put_pickle_gadget, q, str(marker)) as proc:
            with pytest.raises(amber.DecodeError) as info:
                q.get(timeout=WAIT)
            assert info.value.kind == "bad_magic"
            assert q.get(timeout=WAIT) == "after the gadget"
            finished(proc)
        assert not marker.exists()
    finally:
        q.close()


@pytest.mark.parametrize("method", CONTEXTS)
def test_over_limit_message_is_refused_unread(method: str) -> None:
    ctx = multiprocessing.get_context(method)
    limit = 16 * 1024
    size = 100_000
    ours, theirs = Pipe(ctx=ctx, max_message=limit)
    with ours, child(ctx, children.send_oversized, theirs, size) as proc:
        theirs.close()
        assert ours.poll(WAIT)
        tracemalloc.start()
        try:
            with pytest.raises(amber.DecodeLimitError) as info:
                ours.recv()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < size // 4, f"{peak} bytes allocated while refusing {size}"
        err = info.value
        assert err.kind == "message_limit"
        assert err.message_index == 0  # type: ignore[attr-defined]
        assert f"max_message ({limit} bytes)" in str(err)
        assert "connection is now closed" in str(err)
        assert ours.closed
        with pytest.raises(OSError, match="message 0 was refused"):
            ours.recv()
        with pytest.raises(OSError, match="closed"):
            ours.send("anything")
        finished(proc)


@pytest.mark.parametrize("method", CONTEXTS)
def test_declared_huge_length_is_neither_allocated_nor_awaited(method: str) -> None:
    ctx = multiprocessing.get_context(method)
    declared = 1 << 40
    ours, theirs = Pipe(ctx=ctx)
    with ours, child(ctx, children.declare_huge_message, theirs, declared) as proc:
        theirs.close()
        assert ours.poll(WAIT)
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises(amber.DecodeLimitError) as info:
                ours.recv()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.monotonic() - started < WAIT / 2
        assert peak < 1 << 20
        assert f"max_message ({DEFAULT_MAX_MESSAGE} bytes)" in str(info.value)
        assert ours.closed
        finished(proc)


@pytest.mark.parametrize("method", CONTEXTS)
def test_queue_over_limit_makes_it_unusable_in_every_process(method: str) -> None:
    ctx = multiprocessing.get_context(method)
    q = Queue(ctx=ctx, max_message=1024)
    ask, answer = Pipe(ctx=ctx)
    try:
        with ask, child(ctx, children.report_queue_state, q, answer) as reporter:
            answer.close()
            with child(ctx, children.put_oversized, q, 30_000) as writer:
                finished(writer)
            with pytest.raises(amber.DecodeLimitError, match="unusable in every process"):
                q.get(timeout=WAIT)
            with pytest.raises(OSError, match="unusable"):
                q.get(timeout=0)
            with pytest.raises(OSError, match="unusable"):
                q.put("more")
            # a process that was already running learns it from the queue itself
            ask.send("go")
            kind, text = received(ask)
            assert kind == "OSError"
            assert "unusable" in text
            finished(reporter)
    finally:
        q.close()


@pytest.mark.parametrize("method", CONTEXTS)
def test_hostile_messages_are_refused_and_the_pipe_stays_in_step(method: str) -> None:
    ctx = multiprocessing.get_context(method)
    framing_kinds = {b"\x01": "truncated", b"\x01\x00\x00\x00\x00": "bad_frame"}  # by head
    ours, theirs = Pipe(ctx=ctx)
    with ours, child(ctx, children.send_hostile, theirs) as proc:
        theirs.close()
        for index, message in enumerate(children.hostile_messages()):
            assert ours.poll(WAIT)
            with pytest.raises(amber.DecodeError) as info:
                ours.recv()
            err = info.value
            assert err.message_index == index  # type: ignore[attr-defined]
            assert f"message {index}" in str(err)
            if message[:1] == b"\x01":  # refused by the framing, before amber.loads
                assert err.kind == framing_kinds[message[:5]]
                continue
            # The receiver gives amber.loads' verdict on the same bytes, with its class,
            # kind, offset and message.
            with pytest.raises(amber.DecodeError) as direct:
                amber.loads(message)
            assert type(err) is type(direct.value)
            assert (err.kind, err.offset) == (direct.value.kind, direct.value.offset)
            assert str(direct.value) in str(err)
        assert received(ours) == {"still": "in step"}
        finished(proc)


def test_class_not_allowed_names_the_class_and_the_pipe_stays_in_step() -> None:
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = Pipe(ctx=ctx)  # no classes allowed
    objects = [Point(1, 2), Point(3, 4), {"plain": (1, 2)}]
    with ours, child(ctx, children.send_all, theirs, objects) as proc:
        theirs.close()
        assert ours.poll(WAIT)
        with pytest.raises(amber.ClassNotAllowedError) as info:
            ours.recv()
        assert (info.value.module, info.value.qualname) == ("_mp_children", "Point")
        assert info.value.message_index == 0  # type: ignore[attr-defined]
        allowing = AmberConnection(ours.connection, {"types": [Point]})
        point = received(allowing)
        assert type(point) is Point and point == Point(3, 4)
        plain = received(ours)
        assert plain == {"plain": (1, 2)} and type(plain["plain"]) is tuple
        finished(proc)


def test_signed_codec_refuses_what_a_peer_without_the_key_forges() -> None:
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = Pipe(ctx=ctx, codec={"key": KEY})
    captured = Codec(key=KEY).dumps({"amount": 5})  # a message the peer once saw go by
    # The compromised child gets the bare connection: no codec, no key.
    with ours, child(ctx, children.send_forgeries, theirs.connection, captured) as proc:
        theirs.close()
        for forgery in ["unsigned", "foreign key", "foreign key, our key id", "altered"]:
            assert ours.poll(WAIT), forgery
            with pytest.raises(amber.SignatureError):
                ours.recv()
        assert ours.poll(WAIT)
        with pytest.raises(amber.SignatureError) as info:
            ours.recv()
        assert info.value.kind == "unsigned_buffers"
        # A signature says who wrote a payload, not when or on which connection: the captured
        # message, sent again unchanged, is accepted (see the docs' threat model).
        assert received(ours) == {"amount": 5}
        finished(proc)


# --------------------------------------------------------------------------- one process


def test_out_of_band_buffers_are_messages_of_their_own() -> None:
    """The wire layout, read with the stdlib's recv_bytes from a real pipe."""
    ours, theirs = Pipe(out_of_band=True)
    array = np.arange((3 << 20) // 8, dtype=np.float64)
    blob = bytes(range(256)) * 5000
    obj = {"array": array, "blob": blob, "small": b"xyz"}
    sender = threading.Thread(target=ours.send, args=(obj,))
    sender.start()
    try:
        raw = theirs.connection
        assert raw.poll(WAIT)
        head = raw.recv_bytes()
        assert head[:5] == b"\x01" + (2).to_bytes(4, "big")
        assert len(head) < 200  # the large data is not in the payload
        first, second = raw.recv_bytes(), raw.recv_bytes()
        assert {first, second} == {array.tobytes(), blob}
        back = amber.loads(head[5:], buffers=[first, second])
        assert np.array_equal(back["array"], array) and back["blob"] == blob
    finally:
        sender.join(WAIT)
        ours.close()
        theirs.close()
    assert not sender.is_alive()


def test_sender_refuses_a_message_over_the_limit_and_sends_nothing() -> None:
    ours, theirs = Pipe(max_message=4096, out_of_band=True)
    with ours, theirs:
        with pytest.raises(ValueError, match=r"over max_message \(4096 bytes\); nothing was sent"):
            ours.send(b"x" * 5000)
        with pytest.raises(ValueError, match="in 1 out-of-band buffer"):
            ours.send(bytes(amber.OOB_THRESHOLD))
        assert not theirs.poll(0.05)
        ours.send(b"x" * 100)  # the connection is still fine
        assert received(theirs) == b"x" * 100


def test_buffer_count_beyond_the_limit_is_refused_before_reading() -> None:
    payload = amber.dumps([1, 2, 3])
    ours, theirs = Pipe(max_message=2 * amber.OOB_THRESHOLD)
    with ours, theirs:
        theirs.connection.send_bytes(b"\x01" + (1000).to_bytes(4, "big") + payload)
        with pytest.raises(amber.DecodeLimitError, match="announces 1000 out-of-band buffers"):
            received(ours)
        assert ours.closed


def test_buffer_over_what_is_left_of_the_limit_is_refused() -> None:
    limit = 2 * amber.OOB_THRESHOLD + 100
    ours, theirs = Pipe(max_message=limit)
    buffers: list[memoryview] = []
    payload = amber.dumps(
        [bytes(amber.OOB_THRESHOLD), bytes(amber.OOB_THRESHOLD)], buffer_callback=buffers.append
    )
    head = b"\x01" + (2).to_bytes(4, "big") + payload

    def lie() -> None:
        raw = theirs.connection
        raw.send_bytes(head)
        raw.send_bytes(buffers[0])
        try:
            raw.send_bytes(bytes(amber.OOB_THRESHOLD + 200))  # more than the limit leaves
        except OSError:
            pass  # the reader closed its end instead of reading it

    liar = threading.Thread(target=lie)
    liar.start()
    try:
        with pytest.raises(amber.DecodeLimitError, match=r"out-of-band buffer 1 \(of 2\)"):
            received(ours)
        assert ours.closed
    finally:
        ours.close()
        liar.join(WAIT)
        theirs.close()
    assert not liar.is_alive()


def test_signing_and_out_of_band_do_not_mix() -> None:
    with pytest.raises(OptionsError, match="amber signs the payload but not out-of-band"):
        Pipe(codec={"key": KEY}, out_of_band=True)
    with pytest.raises(OptionsError, match="amber signs the payload but not out-of-band"):
        Queue(codec={"key": KEY}, out_of_band=True)


def test_bad_arguments_are_named() -> None:
    raw_a, raw_b = multiprocessing.Pipe()
    with raw_a, raw_b:
        with pytest.raises(TypeError, match=r"codec must be an amber\.contrib\.Codec"):
            AmberConnection(raw_a, 42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="expected a multiprocessing connection"):
            AmberConnection(object())  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_message must be at least 1"):
            AmberConnection(raw_a, max_message=0)
        with pytest.raises(TypeError, match="max_message must be an int"):
            AmberConnection(raw_a, max_message=True)
        with pytest.raises(TypeError, match="out_of_band must be a bool"):
            AmberConnection(raw_a, out_of_band="yes")  # type: ignore[arg-type]
        with pytest.raises(OptionsError, match="unknown amber option 'tpyes'"):
            AmberConnection(raw_a, {"tpyes": [Point]})
    q = Queue()
    try:
        with pytest.raises(ValueError, match="timeout must be >= 0"):
            q.get(timeout=-1)
    finally:
        q.close()


def test_a_codec_object_cannot_be_sent_to_a_spawned_child() -> None:
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = Pipe(ctx=ctx)
    with ours, theirs:
        wrapped = AmberConnection(theirs.connection, Codec(types=[Point]))
        proc = ctx.Process(target=children.send_all, args=(wrapped, []), daemon=True)
        with pytest.raises(TypeError, match="pass the codec's options as a mapping"):
            proc.start()
        keyed = AmberConnection(theirs.connection, {"key": amber.SigningKey(KEY)})
        proc = ctx.Process(target=children.send_all, args=(keyed, []), daemon=True)
        with pytest.raises(TypeError, match="give keys as bytes or str"):
            proc.start()


def test_queue_is_handed_over_only_when_a_child_starts() -> None:
    q = Queue()
    try:
        with pytest.raises(RuntimeError, match="inheritance"):
            pickle.dumps(q)
    finally:
        q.close()
    with pytest.raises(OSError, match="closed"):
        q.put(1)


def test_connection_basics() -> None:
    reader, writer = Pipe(duplex=False)
    assert reader.readable and not reader.writable
    assert writer.writable and not writer.readable
    assert reader.fileno() == reader.connection.fileno()
    assert "max_message" in repr(reader)
    with reader, writer:
        writer.send(({1, 2}, frozenset({3})))
        got = received(reader)
        assert got == ({1, 2}, frozenset({3})) and type(got[0]) is set
        # a bare amber payload, as any process can write it, is a message too
        writer.connection.send_bytes(amber.dumps([1.5, (2, 3)]))
        got = received(reader)
        assert got == [1.5, (2, 3)] and type(got[1]) is tuple
    assert reader.closed and writer.closed
    with pytest.raises(OSError, match="closed"):
        reader.poll(0)


def test_importing_amber_does_not_import_this_integration() -> None:
    code = (
        "import sys, amber, amber.contrib; "
        "assert 'amber.contrib.multiprocessing' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
