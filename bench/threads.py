"""Two threads compressing at once against one after the other: what releasing the GIL buys.

Runs alone (``python bench/threads.py``, best with a release build) and prints a markdown
table. For each payload and each operation it times two jobs (each one the operation
``--repeat`` times) run one after the other in the main thread, then the same two jobs in two
threads started together, and reports the wall times and their ratio: ``parallel / serial``
is 1.0 when the threads cannot overlap (the GIL is held throughout) and 0.5 when they overlap
perfectly on two free cores. ``GIL free`` is the share of an operation's time during which
another thread runs Python code (a loop's speed beside it, for at least half a second of
calls, against its speed alone): it shows the release even on a machine whose cores are busy
with other work. Between calls the GIL changes hands at the switch interval (5 ms), so a short
call that holds the GIL throughout still shows some share.

``dumps`` compresses and signs, and ``loads`` checks the signature and decompresses, without
the GIL for payloads of 64 KiB and more (``bytes`` input to ``loads``); walking the Python
objects and building them needs the GIL. So a payload of large raw data (bytes, an
array) overlaps best, and one of many small objects overlaps only in its compression.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import amber

KEY = amber.SigningKey(b"bench threads: a secret of 32 bytes", id=b"bench")


def text_blob(size: int, seed: int) -> bytes:
    """``size`` bytes of words (compresses about 3 to 1, as logs or JSON text do)."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    out = bytearray()
    while len(out) < size:
        out += " ".join(rng.choices(words, k=1000)).encode()
    return bytes(out[:size])


def payloads(mib: int) -> dict[str, Any]:
    size = mib << 20
    made: dict[str, Any] = {
        f"{mib} MiB of text bytes": text_blob(size, 1),
        f"{mib // 4} MiB of records": [
            {"id": i, "name": f"user {i % 977}", "score": i * 0.25, "tags": ("a", "b")}
            for i in range(size // 4 // 48)
        ],
    }
    try:
        import numpy as np
    except ImportError:
        return made
    made[f"{mib} MiB int64 array"] = np.arange(size // 8, dtype=np.int64) % 1000
    return made


OPTIONS: dict[str, dict[str, Any]] = {
    "zstd": {"compress": "zstd"},
    "zstd+key": {"compress": "zstd", "key": KEY},
    "lz4+key": {"compress": "lz4", "key": KEY},
    "key": {"key": KEY},
}


def job(operation: Callable[[], object], repeat: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(repeat):
            operation()

    return run


def serial(jobs: list[Callable[[], None]]) -> float:
    start = time.perf_counter()
    for run in jobs:
        run()
    return time.perf_counter() - start


def parallel(jobs: list[Callable[[], None]]) -> float:
    barrier = threading.Barrier(len(jobs) + 1)

    def thread_main(run: Callable[[], None]) -> None:
        barrier.wait()
        run()

    threads = [threading.Thread(target=thread_main, args=(run,)) for run in jobs]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def loop_rate(until: Callable[[], bool]) -> float:
    """Iterations per second of a small Python loop that runs until ``until()``."""
    n = 0
    start = time.perf_counter()
    while not until():
        n += 1
    return n / (time.perf_counter() - start)


def gil_free(operation: Callable[[], object], seconds: float) -> float:
    """The share of the time ``operation`` leaves the GIL to other threads: how fast a Python
    loop in this thread runs while ``operation`` runs in another one, against how fast it runs
    alone. Unlike the wall times, this does not depend on a core being free."""
    alone_end = time.perf_counter() + 0.2
    alone = loop_rate(lambda: time.perf_counter() > alone_end)
    done = threading.Event()

    def run() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            operation()
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    shared = loop_rate(done.is_set)
    thread.join()
    return min(shared / alone, 1.0)


def best(measure: Callable[[list[Callable[[], None]]], float], jobs: Any, turns: int) -> float:
    return min(measure(jobs) for _ in range(turns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mib", type=int, default=16, help="payload size in MiB (default 16)")
    parser.add_argument("--repeat", type=int, default=3, help="operations per job (default 3)")
    parser.add_argument("--turns", type=int, default=3, help="best of this many (default 3)")
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Python {sys.version.split()[0]}, {cpus} CPUs available, load average {load:.1f} "
        f"at the start; two jobs of {args.repeat} operations each, best of {args.turns}\n"
    )
    print("| payload | options | operation | size | serial | 2 threads | ratio | GIL free |")
    print("|:--|:--|:--|--:|--:|--:|--:|--:|")
    for name, value in payloads(args.mib).items():
        for label, options in OPTIONS.items():
            data = amber.dumps(value, **options)
            loads_options = {"key": KEY} if "key" in options else {}
            budget = {"max_alloc": 64 * len(amber.dumps(value)) + (1 << 20)}
            operations: dict[str, Callable[[], object]] = {
                "dumps": lambda v=value, o=options: amber.dumps(v, **o),
                "loads": lambda d=data, o=loads_options, b=budget: amber.loads(d, **o, **b),
            }
            for op_name, operation in operations.items():
                jobs = [job(operation, args.repeat) for _ in range(2)]
                jobs[0]()  # warm up: caches, contexts, page faults
                one_by_one = best(serial, jobs, args.turns)
                together = best(parallel, jobs, args.turns)
                free = gil_free(operation, max(one_by_one / 2, 0.5))
                print(
                    f"| {name} | {label} | {op_name} | {len(data) / 2**20:.1f} MiB "
                    f"| {one_by_one * 1e3:.0f} ms | {together * 1e3:.0f} ms "
                    f"| {together / one_by_one:.2f} | {free:.0%} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
