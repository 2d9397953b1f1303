"""Compressed and signed payloads: amber's envelope against pickle and msgpack with zstd.

Runs alone (``.venv/bin/python bench/compression.py``, best with a release build:
``.venv/bin/maturin develop --release``) and prints a markdown report; ``bench/run.py`` can
import ``measure_all`` and ``render``. For every seed payload (``payloads.all_payloads``)
plus the 1M employees that ``bench/memory.py`` measures, it times encode and decode and
records the size of:

- ``amber``: plain ``dumps``/``loads``;
- ``amber+zstd``, ``amber+lz4``: ``dumps(compress=...)`` (zstd level 3, the default);
- ``amber signed``: ``dumps(key=...)``/``loads(key=...)``, what HMAC-SHA256 costs;
- ``pickle+zstd``: pickle protocol 5, then zstd level 3 (the ``zstandard`` package);
- ``msgpack+zstd``: msgpack, then zstd level 3. msgpack is lossy (tuples come back as
  lists, sets and classes are refused), so it is only a bar for size and speed.

One allocation budget covers a whole ``loads``, computed from the length of its input
(spec section 12.4): a payload that compresses very well can need more than the default
budget of its compressed form. Such a payload is decoded with ``max_alloc`` set to the budget
its plain form would get, and the table says so.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from payloads import Payload, all_payloads, employees
from readme import write_atomically
from timing import Budget, best_seconds_per_call

ZSTD_LEVEL = 3
EMPLOYEES_1M = 1_000_000
SECRET = b"bench secret: 32 bytes of key!!!"
# The default allocation budget of loads (spec section 8.3): 256 x input + 1 MiB.
ALLOC_PER_BYTE, ALLOC_BASE = 256, 1 << 20

AMBER = "amber"
AMBER_ZSTD = "amber+zstd"
AMBER_LZ4 = "amber+lz4"
AMBER_SIGNED = "amber signed"
PICKLE_ZSTD = "pickle+zstd"
MSGPACK_ZSTD = "msgpack+zstd"
CODECS = [AMBER, AMBER_ZSTD, AMBER_LZ4, AMBER_SIGNED, PICKLE_ZSTD, MSGPACK_ZSTD]


@dataclass(frozen=True)
class Row:
    """One codec on one payload: bytes and best seconds per call, or why it could not."""

    payload: str
    codec: str
    size: int | None = None
    encode_s: float | None = None
    decode_s: float | None = None
    note: str = ""
    error: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A codec: ``with_budget(max_alloc)``, for amber, decodes with that allocation budget."""

    name: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    with_budget: Callable[[int], Callable[[bytes], Any]] | None = None


def candidates(payload: Payload) -> list[Candidate]:
    """The codecs, set up for ``payload`` (amber is told its classes)."""
    import amber
    import msgpack  # type: ignore[import-untyped]
    import zstandard

    types = list(payload.types)
    key = amber.SigningKey(SECRET)
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    decompressor = zstandard.ZstdDecompressor()
    packer = msgpack.Packer()

    def amber_pair(name: str, **options: Any) -> Candidate:
        encoder = amber.Encoder(**options)
        signed_by = options.get("key")
        decoder = amber.Decoder(types=types, key=signed_by)

        def with_budget(max_alloc: int) -> Callable[[bytes], Any]:
            return amber.Decoder(types=types, key=signed_by, max_alloc=max_alloc).decode

        return Candidate(name, encoder.encode, decoder.decode, with_budget)

    return [
        amber_pair(AMBER),
        amber_pair(AMBER_ZSTD, compress="zstd", level=ZSTD_LEVEL),
        amber_pair(AMBER_LZ4, compress="lz4"),
        amber_pair(AMBER_SIGNED, key=key),
        Candidate(
            PICKLE_ZSTD,
            lambda value: compressor.compress(pickle.dumps(value, protocol=5)),
            lambda data: pickle.loads(decompressor.decompress(data)),
        ),
        Candidate(
            MSGPACK_ZSTD,
            lambda value: compressor.compress(packer.pack(value)),
            lambda data: msgpack.unpackb(decompressor.decompress(data), strict_map_key=False),
        ),
    ]


def _error(error: BaseException, stage: str) -> str:
    message = str(error).splitlines()[0][:80] if str(error) else ""
    return f"{type(error).__name__} ({stage}): {message}"


def measure(payload: Payload, value: object, candidate: Candidate, budget: Budget) -> Row:
    """Encode once for the size, decode once to see it works, then time both."""
    import amber

    try:
        encoded = candidate.encode(value)
    except Exception as error:  # a codec's refusal is a result, not a crash
        return Row(payload.name, candidate.name, error=_error(error, "encode"))
    decode, note = candidate.decode, ""
    try:
        try:
            decode(encoded)
        except amber.DecodeLimitError:
            if candidate.with_budget is None:
                raise
            # The one-budget rule: give the budget the plain payload would have had.
            max_alloc = len(amber.dumps(value)) * ALLOC_PER_BYTE + ALLOC_BASE
            decode, note = candidate.with_budget(max_alloc), f"max_alloc={max_alloc:,}"
            decode(encoded)
    except Exception as error:
        return Row(payload.name, candidate.name, error=_error(error, "decode"))
    return Row(
        payload.name,
        candidate.name,
        size=len(encoded),
        encode_s=best_seconds_per_call(candidate.encode, value, budget),
        decode_s=best_seconds_per_call(decode, encoded, budget),
        note=note,
    )


def bench_payloads(scale: float, with_million: bool) -> list[Payload]:
    """The seed payloads, and the 1M employees as ``bench/memory.py`` builds them."""
    chosen = all_payloads(scale)
    if with_million:
        chosen.append(
            Payload(
                "employees_1m",
                "bench/memory.py",
                f"{EMPLOYEES_1M:,} 3-key dicts",
                employees(EMPLOYEES_1M),
            )
        )
    return chosen


def measure_all(
    payloads: list[Payload], budget: Budget, progress: Callable[[str], None] | None = None
) -> list[Row]:
    rows = []
    for payload in payloads:
        value = payload.build()
        for candidate in candidates(payload):
            if progress is not None:
                progress(f"{payload.name} / {candidate.name}")
            rows.append(measure(payload, value, candidate, budget))
        del value
    return rows


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.1f} µs"
    return f"{seconds * 1e3:,.2f} ms"


def _ratio(mine: float | int | None, bar: float | int | None) -> str:
    if mine is None or not bar:
        return "n/a"
    return f"{mine / bar:.2f}"


def render(rows: list[Row]) -> str:
    """Two markdown tables: amber's compressed and signed forms against pickle+zstd and
    msgpack+zstd (ratios), then every measurement."""
    by_key = {(r.payload, r.codec): r for r in rows}
    payload_names = list(dict.fromkeys(r.payload for r in rows))
    lines = [
        "### amber+zstd against pickle+zstd and msgpack+zstd",
        "",
        "Each cell is amber+zstd's size, encode time and decode time over the peer's "
        "(< 1: amber is smaller or faster). zstd level 3 everywhere.",
        "",
        "| payload | vs pickle+zstd (size / enc / dec) | vs msgpack+zstd (size / enc / dec) "
        "| amber+lz4 vs pickle+zstd (size / enc / dec) |",
        "|:--|--:|--:|--:|",
    ]

    def triple(mine: Row | None, peer: Row | None) -> str:
        if mine is None or peer is None or mine.error or peer.error:
            return "n/a"
        return " / ".join(
            (
                _ratio(mine.size, peer.size),
                _ratio(mine.encode_s, peer.encode_s),
                _ratio(mine.decode_s, peer.decode_s),
            )
        )

    for name in payload_names:
        zstd_row = by_key.get((name, AMBER_ZSTD))
        lz4_row = by_key.get((name, AMBER_LZ4))
        pickle_row = by_key.get((name, PICKLE_ZSTD))
        msgpack_row = by_key.get((name, MSGPACK_ZSTD))
        lines.append(
            f"| {name} | {triple(zstd_row, pickle_row)} | {triple(zstd_row, msgpack_row)} "
            f"| {triple(lz4_row, pickle_row)} |"
        )
    lines += [
        "",
        "### Every measurement",
        "",
        "Best-of-N time per call. `signed`: amber signed's time over plain amber's, minus 1 "
        "(what the HMAC costs). Notes name any `max_alloc` a decode needed.",
        "",
        "| payload | codec | size (B) | encode | decode | note |",
        "|:--|:--|--:|--:|--:|:--|",
    ]
    for row in rows:
        if row.error:
            lines.append(f"| {row.payload} | {row.codec} | n/a | n/a | n/a | {row.error} |")
            continue
        note = row.note
        plain = by_key.get((row.payload, AMBER))
        if row.codec == AMBER_SIGNED and plain is not None and not plain.error:
            enc = (row.encode_s or 0) / (plain.encode_s or 1) - 1
            dec = (row.decode_s or 0) / (plain.decode_s or 1) - 1
            note = f"signed {enc:+.0%} enc, {dec:+.0%} dec" + (f"; {note}" if note else "")
        lines.append(
            f"| {row.payload} | {row.codec} | {row.size:,} | {_time(row.encode_s)} "
            f"| {_time(row.decode_s)} | {note} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="as bench/run.py (default 1)")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per measurement")
    parser.add_argument("--payloads", help="comma-separated payload names (default: all)")
    parser.add_argument("--no-million", action="store_true", help="skip the 1M employees payload")
    parser.add_argument("--out", type=Path, help="also write the report to this markdown file")
    args = parser.parse_args(argv)
    chosen = bench_payloads(args.scale, not args.no_million)
    if args.payloads:
        wanted = set(args.payloads.split(","))
        chosen = [p for p in chosen if p.name in wanted]
    rows = measure_all(
        chosen, Budget(args.budget), lambda step: print(f"  {step}", file=sys.stderr)
    )
    report = render(rows)
    sys.stdout.write(report)
    if args.out:
        write_atomically(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
