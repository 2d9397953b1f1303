"""Decoding with the garbage collector running, as services run it.

Usage: python bench/gc_on.py [--scale S] [--out bench/results/gc_on.md] [--quick]

The side-by-side bench (run.py) pauses the collector while it times, as timeit does, so
that one codec's garbage is not collected on another's time. A service's collector runs,
though, and a decode that builds many tracked objects (class instances, lists, dicts
holding containers) triggers collections that walk everything built so far. This times
each codec's decode of the same payloads with the collector on: one call per measurement,
after a full collection, best of ``--repeats``; the collections a decode triggers count,
and the objects of the previous result are freed before the next call starts the clock.

Codecs are set up as in run.py (``Codec.for_payload``): amber with ``types=``, msgspec
typed where the payload has a static type, pyfory with its classes registered.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

from payloads import all_payloads
from report import machine_info, table
from serializers import load_codecs

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH_DIR / "results" / "gc_on.md"
CODECS = ["amber", "pickle", "msgspec", "orjson", "ssrjson", "ormsgpack", "pyfory"]
# Payloads that build many objects the collector tracks: instances, and dicts or lists
# that hold containers.
PAYLOADS = [
    "dto_1000",
    "employee_objects",
    "structs_100k",
    "structs_tuples",
    "rowset_1000",
    "github_issues",
    "geojson_features",
]


def time_decode(decode, data: bytes, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Best wall time of one decode with the collector on."""
    best = float("inf")
    was_enabled = gc.isenabled()
    try:
        for _ in range(repeats):
            gc.collect()
            gc.enable()
            start = time.perf_counter()
            result = decode(data)
            elapsed = time.perf_counter() - start
            del result
            best = min(best, elapsed)
    finally:
        if not was_enabled:
            gc.disable()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="scale 0.05, 2 repeats")
    args = parser.parse_args(argv)
    scale, repeats = (0.05, 2) if args.quick else (args.scale, args.repeats)
    codecs, missing = load_codecs(CODECS)
    if not any(c.name == "amber" for c in codecs):
        print(f"amber did not load: {missing.get('amber')}", file=sys.stderr)
        return 1
    payloads = {p.name: p for p in all_payloads(scale)}
    rows = []
    for name in PAYLOADS:
        payload = payloads[name]
        obj = payload.build()
        times: dict[str, float] = {}
        for codec in codecs:
            try:
                ready = codec.for_payload(payload.types, payload.schema)
                data = ready.encode(obj)
                times[codec.name] = time_decode(ready.decode, data, repeats)
            except Exception:  # a codec that cannot hold this payload: n/a
                continue
        peers = {k: v for k, v in times.items() if k != "amber"}
        fastest = min(peers, key=peers.__getitem__)
        cells = [f"{times[c.name] * 1e3:.2f}" if c.name in times else "n/a" for c in codecs]
        ratio = peers[fastest] / times["amber"]
        rows.append([name, *cells, f"{ratio:.2f} ({fastest})"])
        print(name, " ".join(cells), f"{ratio:.2f}", flush=True)
    headers = ["payload", *(f"{c.name} ms" for c in codecs), "fastest peer / amber"]
    info = machine_info()
    lines = [
        "# Decoding with the garbage collector on",
        "",
        "Made by `bench/gc_on.py` (see its docstring); "
        + ", ".join(f"{k}: {v}" for k, v in info.items())
        + f". Scale {scale}, best of {repeats} single decodes, each after a full collection.",
        "",
        *table(headers, rows),
        "",
    ]
    if missing:
        lines += [f"Not loaded: {', '.join(f'{k} ({v})' for k, v in missing.items())}", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
