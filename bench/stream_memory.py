"""Streams: write and read back a stream of many small messages; time and peak memory.

Run alone (after ``maturin develop --release`` for meaningful times)::

    .venv/bin/python bench/stream_memory.py [--messages 1000000] [--small 100000]

For each stream size (``--small`` and ``--messages`` employee-like dicts) the parent writes the
stream to a temporary file with ``amber.StreamWriter`` and times it. Each read then runs in a
fresh child process (this file with ``--child``), so that neither the parent's heap nor an
earlier run hides or inflates it:

- ``baseline``: imports amber and does nothing else;
- ``file``: iterates ``amber.StreamReader(path)``, dropping each message;
- ``mmap``: the same with ``mmap=True``;
- ``decoder``: reads the file in 64 KiB chunks and feeds them to ``amber.StreamDecoder``.

Each child reports its wall time for the read and its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``). Peak growth is a child's peak minus the
baseline child's: reading streams that differ tenfold in length should show the same growth,
bounded by the largest message and the read buffers, not by the file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNK = 64 * 1024
MODES = ("baseline", "file", "mmap", "decoder")
CHILD_TIMEOUT_S = 600


def employee(i: int) -> dict[str, Any]:
    """One message: the employees payload's row, as the benchmark's other tables use it."""
    return {"id": i, "name": f"Employee_{i}", "age": 20 + i % 45}


def peak_rss_bytes() -> int:
    """This process's peak resident set size (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def child(mode: str, path: str) -> None:
    """Read the stream at ``path`` one way and print one JSON line with the results."""
    import amber

    count = 0
    start = time.perf_counter()
    if mode == "file":
        with amber.StreamReader(path) as reader:
            for _ in reader:
                count += 1
    elif mode == "mmap":
        with amber.StreamReader(path, mmap=True) as reader:
            for _ in reader:
                count += 1
    elif mode == "decoder":
        decoder = amber.StreamDecoder()
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(CHUNK):
                count += len(decoder.feed(chunk))
        decoder.close()
    elif mode != "baseline":
        raise SystemExit(f"unknown mode {mode!r}")
    seconds = time.perf_counter() - start
    print(
        json.dumps({"mode": mode, "messages": count, "seconds": seconds, "peak": peak_rss_bytes()})
    )


def run_child(mode: str, path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {mode} failed:\n{proc.stdout}\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def write_stream(path: Path, count: int) -> float:
    import amber

    start = time.perf_counter()
    with amber.StreamWriter(path) as writer:
        for i in range(count):
            writer.write(employee(i))
    return time.perf_counter() - start


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def measure(count: int, directory: Path) -> list[dict[str, Any]]:
    path = directory / f"employees_{count}.ambs"
    write_s = write_stream(path, count)
    size = path.stat().st_size
    rows = [
        {
            "messages": count,
            "op": "write (StreamWriter, path)",
            "seconds": write_s,
            "size": size,
            "growth": None,
        }
    ]
    results = {mode: run_child(mode, path) for mode in MODES}
    baseline = results["baseline"]["peak"]
    for mode in MODES[1:]:
        got = results[mode]
        if got["messages"] != count:
            raise SystemExit(f"{mode}: read {got['messages']} messages, wrote {count}")
        label = {
            "file": "read (StreamReader, file)",
            "mmap": "read (StreamReader, mmap=True)",
            "decoder": "read (StreamDecoder, 64 KiB chunks)",
        }[mode]
        rows.append(
            {
                "messages": count,
                "op": label,
                "seconds": got["seconds"],
                "size": size,
                "growth": got["peak"] - baseline,
            }
        )
    path.unlink()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    import amber

    python = sys.version.split()[0]
    lines = [f"amber {amber.__version__}, Python {python}, {os.cpu_count()} CPUs", ""]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="amber-stream-bench-") as tmp:
        for count in (args.small, args.messages):
            rows += measure(count, Path(tmp))
    header = f"| {'messages':>9} | {'operation':<36} | {'file size':>10} | {'time':>8} | "
    header += f"{'messages/s':>11} | {'peak RSS growth':>15} |"
    lines.append(header)
    lines.append("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for r in rows:
        growth = "-" if r["growth"] is None else mib(r["growth"])
        lines.append(
            f"| {r['messages']:>9,} | {r['op']:<36} | {mib(r['size']):>10} | "
            f"{r['seconds']:>6.2f} s | {r['messages'] / r['seconds']:>11,.0f} | {growth:>15} |"
        )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        # Imported here, in the parent only: the children's peak memory is measured against a
        # child that imports amber alone.
        from readme import write_atomically

        write_atomically(args.out, "# Streams: write and read back, peak memory\n\n" + text)


if __name__ == "__main__":
    main()
