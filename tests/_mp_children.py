"""What the child processes of test_contrib_multiprocessing run, honest and compromised.

A module of its own so that a child started with "spawn" imports only this (tests/ is on the
sys.path that multiprocessing hands to it), not the test module and pytest with it. Every
wait here is bounded: a child that is not answered gives up and exits.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import os
import pickle
import struct
import uuid
from typing import Any

import amber
import numpy as np
from amber.contrib.multiprocessing import AmberConnection, Queue

KEY = b"multiprocessing test key, 32 by"
OTHER_KEY = b"a key the receiver never heard of"
WAIT = 10.0  # seconds a child waits for anything before giving up


@dataclasses.dataclass
class Point:
    x: int
    y: int


class MarkerGadget:
    """Unpickling this opens ``path`` for writing, so the file appears: the shape of what a
    compromised process sends to a receiver that unpickles (any callable would do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def rich_graph(big: bool = False) -> dict[str, Any]:
    """A graph with what pickle keeps and JSON loses; ``big`` adds data of 1 MiB or more,
    which goes out of band when the sender asks for it. Built afresh on every call."""
    shared = [1, 2, 3]
    tz = datetime.timezone(datetime.timedelta(hours=2), "CEST")
    graph: dict[str, Any] = {
        "tuple": (1, "two", 3.0, None, (4,)),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "when": datetime.datetime(2024, 5, 17, 12, 30, 1, 250, tzinfo=tz),
        "day": datetime.date(2024, 2, 29),
        "price": decimal.Decimal("-12.3400"),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "array": np.arange(12, dtype=np.int32).reshape(3, 4),
        "a": shared,
        "b": shared,
        "nested": (shared, {"again": shared}),
        "negative_zero": -0.0,
        "big_int": 2**100 + 1,
        "point": Point(3, -4),
    }
    graph["self"] = graph
    cycle: list[Any] = []
    cycle.append(cycle)
    graph["cycle"] = cycle
    if big:
        graph["big_array"] = np.linspace(0.0, 1.0, (2 << 20) // 8)
        graph["big_bytes"] = bytes(range(256)) * 4097
        graph["big_again"] = graph["big_array"]
    return graph


def queue_item(tag: str, i: int) -> Any:
    """Item ``i`` of producer ``tag``; every fifth carries an array sent out of band."""
    item: dict[str, Any] = {"tag": tag, "i": i, "point": Point(i, -i), "when": (tag, i)}
    if i % 5 == 0:
        item["array"] = np.full((1 << 20) // 8 + 1, i, dtype=np.int64)
    return item


def hostile_messages() -> list[bytes]:
    """Messages a compromised peer writes with ``send_bytes``: none is a valid amber message."""
    good = amber.dumps({"k": [1, 2, 3]})
    rng = np.random.default_rng(1234)
    return [
        b"",
        b"\x00\x01garbage",
        bytes(rng.integers(0, 256, 4096, dtype=np.uint8)),
        good[:-1],
        good + b"\x00",
        b"\xab\x41",
        b"\xab\x41\x01" + b"\x71" + b"\xff" * 9 + b"\x01",  # a list claiming 2**64 - 1 items
        b"\xab\x41\x01" + b"\x59" * 20_000 + b"\x90",  # nested deeper than max_depth
        b"\x01",  # out-of-band head cut inside its count
        b"\x01\x00\x00\x00\x00" + good,  # out-of-band head counting no buffers
    ]


# --------------------------------------------------------------------------- honest children


def echo_then_send_own(conn: AmberConnection, rounds: int) -> None:
    """Send back each of ``rounds`` messages as decoded, then a graph of its own."""
    with conn:
        for _ in range(rounds):
            if not conn.poll(WAIT):
                raise TimeoutError("no message from the parent")
            conn.send(conn.recv())
        conn.send(rich_graph(big=True))


def produce(q: Queue, tag: str, count: int) -> None:
    for i in range(count):
        q.put(queue_item(tag, i))
    q.put((tag, "done"))


def square_worker(tasks: Queue, results: Queue) -> None:
    """Square numbers until ``None``, tagging each result with the task it answers."""
    for _ in range(1000):
        task = tasks.get(timeout=WAIT)
        if task is None:
            break
        results.put((task, task["n"] ** 2, Point(task["n"], task["n"] ** 2)))
    results.put("bye")


def send_all(conn: AmberConnection, objects: list[Any]) -> None:
    """Send and exit: what was sent stays readable after this end is closed."""
    with conn:
        for obj in objects:
            conn.send(obj)


def report_queue_state(q: Queue, reply: AmberConnection) -> None:
    """On the parent's word, tell it what ``get`` does here: a process started before another
    one found the queue's pipe out of step, so it learns of it only through the queue."""
    with reply:
        if not reply.poll(WAIT):
            return
        reply.recv()
        try:
            outcome: tuple[str, Any] = ("returned", q.get(timeout=1.0))
        except Exception as exc:
            outcome = (type(exc).__name__, str(exc))
        reply.send(outcome)


# --------------------------------------------------------------------------- compromised


def _raw_pipe(conn: Any) -> Any:
    """The connection under a wrapper: a compromised process writes to it whatever it likes."""
    return conn.connection if isinstance(conn, AmberConnection) else conn


def send_pickle_gadgets(
    amber_end: AmberConnection, stdlib_end: Any, marker: str, control_marker: str
) -> None:
    """Write pickles whose loading creates a file: to the amber end as a bare message and
    hidden in an out-of-band buffer, and to a stdlib end (the control, which does unpickle)."""
    raw = _raw_pipe(amber_end)
    raw.send_bytes(pickle.dumps(MarkerGadget(marker)))
    padded = pickle.dumps(MarkerGadget(marker)) + b"\x00" * amber.OOB_THRESHOLD
    buffers: list[memoryview] = []
    payload = amber.dumps(padded, buffer_callback=buffers.append)
    raw.send_bytes(b"\x01" + len(buffers).to_bytes(4, "big") + payload)
    for buffer in buffers:
        raw.send_bytes(buffer)
    stdlib_end.send_bytes(pickle.dumps(MarkerGadget(control_marker)))
    stdlib_end.close()
    raw.close()


def put_pickle_gadget(q: Queue, marker: str) -> None:
    q._writer.send_bytes(pickle.dumps(MarkerGadget(marker)))  # the pipe under the queue
    q.put("after the gadget")


def send_oversized(conn: Any, size: int) -> None:
    """One message of ``size`` bytes, which the receiver refuses after its length."""
    raw = _raw_pipe(conn)
    try:
        raw.send_bytes(bytes(size))
    except BrokenPipeError:
        pass  # the receiver closed its end instead of reading the rest: what it should do
    raw.close()


def declare_huge_message(conn: Any, size: int) -> None:
    """Only the length prefix of a ``size``-byte message (CPython's 64-bit form), then wait:
    a reader that believed it would allocate ``size`` bytes or wait for them for ever."""
    raw = _raw_pipe(conn)
    os.write(raw.fileno(), struct.pack("!i", -1) + struct.pack("!Q", size))
    raw.close()


def put_oversized(q: Queue, size: int) -> None:
    """A message over the queue's limit, straight into its pipe (``size`` fits the pipe's
    buffer, so this returns without a reader)."""
    q._writer.send_bytes(bytes(size))


def send_hostile(conn: AmberConnection) -> None:
    raw = _raw_pipe(conn)
    for message in hostile_messages():
        raw.send_bytes(message)
    conn.send({"still": "in step"})
    raw.close()


def send_forgeries(raw: Any, captured: bytes) -> None:
    """What a process without the key can make of the pipe: unsigned and foreign-signed
    payloads, a captured signed payload altered or with an unsigned buffer, and a replay."""
    altered = bytearray(captured)
    altered[-1] ^= 0x01
    big = bytes(amber.OOB_THRESHOLD)
    buffers: list[memoryview] = []
    with_buffer = amber.dumps({"amount": big}, buffer_callback=buffers.append)
    raw.send_bytes(amber.dumps({"amount": 10**6}))
    raw.send_bytes(amber.dumps({"amount": 10**6}, key=OTHER_KEY))
    # the key id the receiver looks its key up by is in every signed payload, unprotected
    key_id = amber.envelope_info(captured)["key_id"]
    assert key_id is not None
    raw.send_bytes(amber.dumps({"amount": 10**6}, key=amber.SigningKey(OTHER_KEY, id=key_id)))
    raw.send_bytes(bytes(altered))
    raw.send_bytes(b"\x01" + len(buffers).to_bytes(4, "big") + with_buffer)
    for buffer in buffers:
        raw.send_bytes(buffer)
    raw.send_bytes(captured)
    raw.close()
