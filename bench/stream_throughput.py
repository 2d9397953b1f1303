"""Streams: messages per second for small messages, and what the framing adds to each.

Run alone (after ``maturin develop --release`` for meaningful times)::

    .venv/bin/python bench/stream_throughput.py [--out FILE.md] [--count 20000]

Two small messages, each ``--count`` times (the same shape, a different value each time):

- ``job``: a job hash as a task queue keeps one, a dict of 10 keys;
- ``ints``: a list of 15 small ints, a payload of 20 bytes.

For each, one round times every case below once, over all ``--count`` messages; rounds repeat
until ``--rounds`` are done or ``--seconds`` have passed (at least ``MIN_ROUNDS``), so that
every case meets the same slow spells of a shared machine. The table gives medians over the
rounds.

- writing: ``dumps`` of each message (bare); ``StreamWriter`` into an ``io.BytesIO`` and into
  a file opened ``"wb"`` (not a path, whose ``close`` fsyncs: the disk's time for that would
  swamp and blur what the framing costs);
- reading: ``loads`` of each payload (bare); ``StreamReader`` over the stream's bytes and over
  the file, ``StreamDecoder.feed`` in 64 KiB chunks, and ``iter_load`` over the bytes.

The framing overhead of a case is its time less that of the bare loop of the same round (the
same messages, encoded or decoded one by one without a stream), per message: what the stream
costs on top of ``dumps`` or ``loads``.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import amber

CHUNK = 64 * 1024
MIN_ROUNDS = 3


def job(i: int) -> dict[str, Any]:
    """A job hash: what a task queue stores for one job."""
    return {
        "id": 1_000_000 + i,
        "queue": "default",
        "task": "app.tasks.send_report",
        "args": [i, "daily"],
        "kwargs": {"user": i % 977},
        "retries": i % 3,
        "priority": 5,
        "eta": None,
        "created": 1_700_000_000.25 + i,
        "worker": f"worker-{i % 8}",
    }


def ints(i: int) -> list[int]:
    """15 small ints: a payload of 20 bytes."""
    return [(i + k) % 100 for k in range(15)]


MESSAGES: dict[str, Callable[[int], Any]] = {"job": job, "ints": ints}


def cases(messages: list[Any], directory: str) -> dict[str, Callable[[], object]]:
    """The timed loops, by name; the bare ones are ``dumps`` and ``loads``."""
    dumps, loads = amber.dumps, amber.loads
    payloads = [dumps(m) for m in messages]
    buffer = io.BytesIO()
    with amber.StreamWriter(buffer) as writer:
        for m in messages:
            writer.write(m)
    stream = buffer.getvalue()
    read_path = os.path.join(directory, "read.ambs")
    with open(read_path, "wb") as f:
        f.write(stream)
    write_path = os.path.join(directory, "write.ambs")

    def bare_dumps() -> None:
        for m in messages:
            dumps(m)

    def write_bytesio() -> None:
        with amber.StreamWriter(io.BytesIO()) as w:
            for m in messages:
                w.write(m)

    def write_file() -> None:
        with open(write_path, "wb") as f, amber.StreamWriter(f) as w:
            for m in messages:
                w.write(m)

    def bare_loads() -> None:
        for p in payloads:
            loads(p)

    def read_bytes() -> None:
        for _ in amber.StreamReader(stream):
            pass

    def read_file() -> None:
        with amber.StreamReader(read_path) as r:
            for _ in r:
                pass

    def read_decoder() -> None:
        decoder = amber.StreamDecoder()
        for start in range(0, len(stream), CHUNK):
            decoder.feed(stream[start : start + CHUNK])
        decoder.close()

    def read_iter_load() -> None:
        for _ in amber.iter_load(stream):
            pass

    return {
        "dumps (bare)": bare_dumps,
        "write: StreamWriter, BytesIO": write_bytesio,
        "write: StreamWriter, file": write_file,
        "loads (bare)": bare_loads,
        "read: StreamReader, bytes": read_bytes,
        "read: StreamReader, file": read_file,
        "read: StreamDecoder.feed, 64 KiB": read_decoder,
        "read: iter_load, bytes": read_iter_load,
    }


def bare_of(case: str) -> str:
    return "dumps (bare)" if case.startswith(("dumps", "write")) else "loads (bare)"


def measure(
    loops: dict[str, Callable[[], object]], rounds: int, seconds: float
) -> dict[str, list[float]]:
    """Seconds of each loop, one list entry per round; each round runs every loop once."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    for loop in loops.values():  # warm up: caches, the file system, the allocator
        loop()
    start = time.perf_counter()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection is billed to no case in particular
    try:
        done = 0
        while done < rounds and (done < MIN_ROUNDS or time.perf_counter() - start < seconds):
            for name, loop in loops.items():
                t0 = time.perf_counter()
                loop()
                times[name].append(time.perf_counter() - t0)
            done += 1
    finally:
        if was_enabled:
            gc.enable()
    return times


def rows(message: str, count: int, times: dict[str, list[float]]) -> list[dict[str, Any]]:
    out = []
    for name, seconds in times.items():
        bare = times[bare_of(name)]
        # Paired by round: both ran within the same second or so.
        extra = [(s - b) / count * 1e6 for s, b in zip(seconds, bare, strict=True)]
        median = statistics.median(seconds)
        out.append(
            {
                "message": message,
                "case": name,
                "rounds": len(seconds),
                "msgs_per_s": count / median,
                "us_per_msg": median / count * 1e6,
                "overhead_us": None if name == bare_of(name) else statistics.median(extra),
            }
        )
    return out


def table(results: list[dict[str, Any]], count: int, payload_sizes: dict[str, int]) -> str:
    lines = [
        "# Streams: small-message throughput and framing overhead",
        "",
        f"amber {amber.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; {count:,} messages per round, medians over the rounds "
        "(`bench/stream_throughput.py`).",
        "",
        "Overhead: the case's time less that of the bare `dumps` or `loads` loop of the same "
        "round, per message.",
        "",
        "| message | case | rounds | messages/s | µs/message | framing overhead µs |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        overhead = "-" if r["overhead_us"] is None else f"{r['overhead_us']:.3f}"
        message = f"{r['message']} ({payload_sizes[r['message']]} B)"
        lines.append(
            f"| {message} | {r['case']} | {r['rounds']} | {r['msgs_per_s']:,.0f} | "
            f"{r['us_per_msg']:.3f} | {overhead} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the Markdown table here (default: stdout)")
    parser.add_argument("--json", help="also write the results here, as JSON")
    parser.add_argument("--count", type=int, default=20_000, help="messages per round")
    parser.add_argument("--rounds", type=int, default=15, help="rounds at most")
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="time per message kind, after MIN_ROUNDS"
    )
    args = parser.parse_args(argv)
    if args.count < 1 or args.rounds < 1:
        parser.error("--count and --rounds must be at least 1")
    results: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="amber-stream-bench-") as directory:
        for message, make in MESSAGES.items():
            messages = [make(i) for i in range(args.count)]
            sizes[message] = len(amber.dumps(messages[0]))
            times = measure(cases(messages, directory), args.rounds, args.seconds)
            results += rows(message, args.count, times)
            print(f"{message}: {len(times['loads (bare)'])} rounds", file=sys.stderr)
    text = table(results, args.count, sizes)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"count": args.count, "sizes": sizes, "results": results}, f, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
