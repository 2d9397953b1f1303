"""Instructions per call of amber and its peers, counted by valgrind's cachegrind.

Why: on a shared 2-core machine the time of a sub-microsecond call moves by 5 to 10
percent between runs, more than most changes to the small-message paths are worth. The
instructions a call executes are the same run after run for one build, input, hash seed
and address layout, so a change of half a percent shows. They are not time: codecs differ
in how much a nanosecond of theirs holds (wide copies, predictable branches, cache
misses), so read amber against amber (before and after a change) and the peers' counts
as context, never as the race; `make bench` times the race.

How: each count is the difference between two runs of a loop, of N1 and of N2 calls,
divided by N2 - N1, so that the interpreter's start, the imports and each codec's
one-time work cancel out. Each run is a fresh interpreter under cachegrind (cache
simulation off), with the hash seed fixed, the collector off, an environment of its own
rather than the caller's and, where `setarch` is found, address randomization off (amber's
memo hashes addresses, so its probes depend on where objects land). The loop calls the
codec as `bench/run.py` does (`bench/serializers.py`), on the payloads of
`bench/payloads.py` and on `one_int`, the int 1: a call's fixed cost, which the other rows
include (a fifth of amber's encode of job_hash, a third of quickle_small's).
`amber_refs` and `amber_norefs` are `Encoder(refs=True).encode` and
`Encoder(refs=False).encode`, what the memo costs. Count a release build
(`make build-release`, or `make instructions`): a debug build's counts say nothing about
speed.

    make instructions                                            # release build, then the default
    .venv/bin/python bench/instructions.py                       # small payloads, fast peers
    .venv/bin/python bench/instructions.py --payloads job_hash --codecs amber_refs,amber_norefs
    .venv/bin/python bench/instructions.py --out bench/results/instructions.md
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import gc
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# A call's fixed cost: the int 1, which every codec writes in a byte or two, so that its
# count is what a call costs before any data (argument checks, set-up, the result object).
# Not one of `bench/payloads.py`'s, whose every payload `make bench` times and sizes.
CALL_PAYLOAD = "one_int"
DEFAULT_PAYLOADS = f"{CALL_PAYLOAD},quickle_small,job_hash,sereal_mixed,packed_1k"
DEFAULT_CODECS = "amber,orjson,ssrjson,msgspec"
# amber through a reused `Encoder`, with refs on and off: the pair `bench/refs.py` times
# (target 6). Their decode is `loads`, as amber's.
ENCODERS = {"amber_refs": True, "amber_norefs": False}
DIRECTIONS = ("encode", "decode")
# The longer loop of a count runs for about this long outside valgrind (valgrind makes it
# some 50 times slower), and the shorter one for an eighth of it.
LOOP_SECONDS = 0.05
MIN_CALLS = 16
MAX_CALLS = 1 << 14
REFS_LINE = re.compile(rb"I\s+refs:\s+([\d,]+)")


def codec_for(name: str, payload: Any) -> Any:
    """The `serializers.Codec` called `name`, set up for `payload` (a `payloads.Payload`)."""
    from serializers import FACTORIES

    if name in ENCODERS:
        import amber

        encoder = amber.Encoder(refs=ENCODERS[name])
        codec = dataclasses.replace(FACTORIES["amber"](), name=name, encode=encoder.encode)
    elif name in FACTORIES:
        codec = FACTORIES[name]()
    else:
        known = ", ".join([*FACTORIES, *ENCODERS])
        raise SystemExit(f"instructions.py: unknown codec {name!r} (known: {known})")
    return codec.for_payload(payload.types, payload.schema)


def payload_named(name: str) -> Any:
    from payloads import Payload, all_payloads

    found = {p.name: p for p in all_payloads(1.0)}
    found[CALL_PAYLOAD] = Payload(CALL_PAYLOAD, "bench/instructions.py", "the int 1", lambda: 1)
    if name not in found:
        raise SystemExit(f"instructions.py: unknown payload {name!r} (known: {', '.join(found)})")
    return found[name]


def prepared_call(codec_name: str, payload_name: str, direction: str) -> tuple[Any, Any]:
    """The function a count calls and its argument, called once (its one-time work done)."""
    payload = payload_named(payload_name)
    value = payload.build()
    codec = codec_for(codec_name, payload)
    encoded = codec.encode(value)
    func, arg = (codec.encode, value) if direction == "encode" else (codec.decode, encoded)
    func(arg)
    return func, arg


def child(codec_name: str, payload_name: str, direction: str, calls: int) -> None:
    """The loop a count is taken of (run under valgrind by `count`). The first call, made
    by `prepared_call`, is in both loops of a count, and so is its one-time work."""
    func, arg = prepared_call(codec_name, payload_name, direction)
    gc.disable()
    for _ in range(calls):
        func(arg)


def loop_lengths(codec_name: str, payload_name: str, direction: str) -> tuple[int, int]:
    """N1 and N2 for a count: N2 calls take about LOOP_SECONDS here, without valgrind."""
    func, arg = prepared_call(codec_name, payload_name, direction)
    start = time.perf_counter()
    func(arg)
    one = max(time.perf_counter() - start, 1e-7)
    # A power of two, so that the same call on the same machine gets the same loops, run
    # after run, despite the timing's noise.
    longer = 1 << int(LOOP_SECONDS / one).bit_length()
    longer = max(MIN_CALLS, min(MAX_CALLS, longer))
    return max(1, longer // 8), longer


def valgrind_command() -> list[str]:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit(
            "instructions.py: valgrind not found on PATH; it counts the instructions "
            "(Debian: apt-get install valgrind)"
        )
    command = [
        valgrind,
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
    ]
    setarch = shutil.which("setarch")
    if setarch is not None:
        command = [setarch, platform.machine(), "-R", *command]
    return command


def run_loop(command: list[str], codec: str, payload: str, direction: str, calls: int) -> int:
    """Instructions of one interpreter running the loop `calls` times."""
    # A fixed environment, not the caller's: its size moves the stack, and with it the
    # alignment of what the codecs copy (job_hash encode counted 4,691 under make and 4,720
    # from a shell, with the caller's environment passed on).
    env = {"PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
    args = [sys.executable, str(Path(__file__).resolve()), "--child", codec, payload, direction]
    done = subprocess.run(
        [*command, *args, str(calls)], env=env, capture_output=True, timeout=600, check=False
    )
    match = REFS_LINE.search(done.stderr)
    if done.returncode != 0 or match is None:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(
            f"{codec} {direction} {payload}: the loop of {calls} calls failed "
            f"(exit {done.returncode}): " + " | ".join(tail)
        )
    return int(match.group(1).replace(b",", b""))


@dataclasses.dataclass(frozen=True)
class Count:
    payload: str
    codec: str
    direction: str
    per_call: float | None
    error: str | None = None


def count(
    command: list[str], codec: str, payload: str, direction: str, lengths: tuple[int, int] | str
) -> Count:
    """One count: `lengths` are the loops' (from `loop_lengths`), or why they are missing."""
    if isinstance(lengths, str):
        return Count(payload, codec, direction, None, lengths)
    shorter, longer = lengths
    try:
        low = run_loop(command, codec, payload, direction, shorter)
        high = run_loop(command, codec, payload, direction, longer)
    except Exception as error:
        return Count(payload, codec, direction, None, f"{type(error).__name__}: {error}")
    return Count(payload, codec, direction, (high - low) / (longer - shorter))


def lengths_or_error(codec: str, payload: str, direction: str) -> tuple[int, int] | str:
    try:
        return loop_lengths(codec, payload, direction)
    except Exception as error:  # a codec that refuses a payload is a result, not a crash
        return f"{type(error).__name__}: {error}"


def table(counts: list[Count], codecs: list[str]) -> list[str]:
    """Markdown: a row per payload and direction, instructions per call per codec, and
    amber's count over the fewest of the peers'."""
    peers = [c for c in codecs if not c.startswith("amber")]
    with_ratio = "amber" in codecs and bool(peers)
    header = ["payload", "direction", *codecs]
    if with_ratio:
        header.append("amber / fewest peer")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows: dict[tuple[str, str], dict[str, Count]] = {}
    for c in counts:
        rows.setdefault((c.payload, c.direction), {})[c.codec] = c
    for (payload, direction), by_codec in rows.items():
        cells = [payload, direction]
        for codec in codecs:
            c = by_codec.get(codec)
            if c is None or c.per_call is None:
                cells.append("n/a")
            else:
                cells.append(f"{c.per_call:,.0f}")
        if with_ratio:
            amber = by_codec.get("amber")
            peer_counts = [
                by_codec[p].per_call for p in peers if p in by_codec and by_codec[p].per_call
            ]
            if amber is not None and amber.per_call and peer_counts:
                cells.append(f"{amber.per_call / min(peer_counts):.2f}")
            else:
                cells.append("n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payloads", default=DEFAULT_PAYLOADS)
    parser.add_argument("--codecs", default=DEFAULT_CODECS)
    parser.add_argument("--directions", default=",".join(DIRECTIONS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    parser.add_argument("--child", nargs=4, metavar=("CODEC", "PAYLOAD", "DIRECTION", "CALLS"))
    args = parser.parse_args(argv)
    if args.child:
        codec, payload, direction, calls = args.child
        child(codec, payload, direction, int(calls))
        return 0
    directions = [d for d in args.directions.split(",") if d]
    for direction in directions:
        if direction not in DIRECTIONS:
            parser.error(f"unknown direction {direction!r} (known: {', '.join(DIRECTIONS)})")
    payloads = [p for p in args.payloads.split(",") if p]
    codecs = [c for c in args.codecs.split(",") if c]
    for name in payloads:
        payload_named(name)
    from serializers import FACTORIES

    for name in codecs:
        if name not in FACTORIES and name not in ENCODERS:
            parser.error(f"unknown codec {name!r} (known: {', '.join([*FACTORIES, *ENCODERS])})")
    command = valgrind_command()
    jobs = [(c, p, d) for p in payloads for d in directions for c in codecs]
    # Timed here, before any count runs: with valgrind busy on both cores the timing would
    # pick other loop lengths, and the counts would move by a few instructions.
    lengths = [lengths_or_error(*job) for job in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        counts = list(pool.map(lambda job, n: count(command, *job, n), jobs, lengths))
    lines = [
        f"Instructions per call (cachegrind; Python {platform.python_version()}, "
        f"{platform.machine()}), the difference of two loop lengths. Not time: see "
        "`bench/instructions.py`.",
        "",
        *table(counts, codecs),
    ]
    errors = [f"- {c.codec} {c.direction} {c.payload}: {c.error}" for c in counts if c.error]
    if errors:
        lines += ["", "Not counted:", *errors]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        partial = args.out.with_name(args.out.name + ".partial")
        partial.write_text(text)
        partial.replace(args.out)
    # A peer that refuses a payload is a result; amber failing is not.
    return 1 if any(c.error and c.codec.startswith("amber") for c in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
