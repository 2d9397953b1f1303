"""Encoding non-ASCII strs the first time and again: fresh text as services encode it.

Usage: python bench/fresh_strings.py [--out bench/results/fresh_strings.md] [--quick]

The side-by-side bench (run.py) encodes one object over and over, and every codec first
checks that it round-trips: a str's first encode by a codec that asks CPython for UTF-8
(`PyUnicode_AsUTF8AndSize`: orjson, msgspec, ormsgpack) makes a UTF-8 copy that CPython then
keeps inside the str, and every later encode, by any codec, reads that copy. A service
encodes objects it has just built (rows from a database, a request's data), whose strs hold
no such copy. So this times each codec on strs nothing has encoded yet ("first"), and again
on the same strs ("again"), each codec on its own objects, and reports the memory the copies
add ("kept").

Each text kind is a list of 2,000 strs, built 50 times per round (100,000 strs); the best
round counts. amber converts CPython's units to UTF-8 itself and leaves no copy (see
crates/amber-py/src/encode/wide_str.rs).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from readme import write_atomically
from report import machine_info, table
from serializers import load_codecs

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH_DIR / "results" / "fresh_strings.md"
CODECS = ["amber", "pickle", "msgspec", "orjson", "ssrjson", "ormsgpack"]
LISTS, PER_LIST = 50, 2_000

TEXTS: dict[str, Callable[[int], str]] = {
    "Greek tail (alpha_strings)": lambda i: f"string {i} \N{GREEK SMALL LETTER ALPHA}",
    "Latin-1 words": lambda i: f"café n°{i}, crème brûlée",
    "CJK": lambda i: f"東京都千代田区{i}番地",
    "Cyrillic sentence": lambda i: f"Заказ {i} отправлен покупателю сегодня утром",
    "emoji": lambda i: f"order {i} shipped \N{PACKAGE}\N{ROCKET}",
}


def build(make: Callable[[int], str], round_: int) -> list[list[str]]:
    base = round_ * LISTS * PER_LIST
    return [[make(base + k * PER_LIST + i) for i in range(PER_LIST)] for k in range(LISTS)]


def time_encodes(encode: Callable[[object], object], lists: list[list[str]]) -> float:
    start = time.perf_counter()
    for strs in lists:
        encode(strs)
    return time.perf_counter() - start


def measure(
    encode: Callable[[object], object], make: Callable[[int], str], rounds: int
) -> tuple[float, float, int]:
    """Best ns per str first and again, and bytes the encodes left in the strs."""
    first = again = float("inf")
    kept = 0
    for round_ in range(rounds):
        lists = build(make, round_)
        size = sum(sys.getsizeof(s) for strs in lists for s in strs)
        first = min(first, time_encodes(encode, lists))
        again = min(again, time_encodes(encode, lists))
        kept = sum(sys.getsizeof(s) for strs in lists for s in strs) - size
        del lists
    count = LISTS * PER_LIST
    return first / count * 1e9, again / count * 1e9, kept // count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    codecs, missing = load_codecs(CODECS)
    if not any(c.name == "amber" for c in codecs):
        print(f"amber did not load: {missing.get('amber')}", file=sys.stderr)
        return 1
    gc.disable()
    rows = []
    for label, make in TEXTS.items():
        results = {c.name: measure(c.encode, make, rounds) for c in codecs}
        peers = {name: r for name, r in results.items() if name != "amber"}
        fastest_first = min(peers, key=lambda name: peers[name][0])
        fastest_again = min(peers, key=lambda name: peers[name][1])
        amber_first, amber_again, _ = results["amber"]
        cells = [f"{r[0]:.1f} / {r[1]:.1f} / {r[2]}" for r in results.values()]
        rows.append(
            [
                label,
                *cells,
                f"{peers[fastest_first][0] / amber_first:.2f} ({fastest_first})",
                f"{peers[fastest_again][1] / amber_again:.2f} ({fastest_again})",
            ]
        )
        print(label, *cells, rows[-1][-2], rows[-1][-1], flush=True)
    headers = [
        "text",
        *(f"{name}" for name in results),
        "first: fastest peer / amber",
        "again: fastest peer / amber",
    ]
    info = machine_info()
    lines = [
        "# Non-ASCII strs: the first encode and the next",
        "",
        "Made by `bench/fresh_strings.py` (see its docstring); "
        + ", ".join(f"{k}: {v}" for k, v in info.items())
        + f". {LISTS * PER_LIST:,} strs per text, best of {rounds} rounds.",
        "",
        "Each cell: ns per str the first time / ns per str again / bytes the encodes left in",
        "each str. Ratios above 1: amber is faster.",
        "",
        *table(headers, rows),
        "",
    ]
    if missing:
        lines += [f"Not loaded: {', '.join(f'{k} ({v})' for k, v in missing.items())}", ""]
    write_atomically(args.out, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
