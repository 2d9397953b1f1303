"""What a keyword argument costs a small call: amber's calls with options against the bare ones.

Usage: python bench/keywords.py [--out bench/results/keywords.md] [--quick]

On small payloads (job_hash, quickle_small) a call's fixed cost is a large part of its
time, so parsing a keyword, or an option that switches the fast path off, shows up
plainly. Issue 22's goal: each keyword call within 1.10 of the bare call.

Decoding compares ``loads(b, types=[C])``, ``loads(b, max_depth=50)``, ``custom=``, the
class and limit options together, and a reused ``Decoder(types=[C]).decode(b)`` with
``loads(b)``; encoding compares ``dumps(x, canonical=True)``, ``types=``, ``custom=``,
``max_depth=`` with ``refs=`` and a reused ``Encoder().encode(x)`` with ``dumps(x)``. ``C``
is a dataclass the payloads do not hold, so the keyword changes nothing in the output.

Each call is a ``timeit`` statement (the call as a user writes it, no wrapper around it),
timed in batches of about ``--batch-ms``. A round times one batch of every call of a
payload, starting one further along the list each round, so a slow spell of a shared
machine falls on all of them; the result is each call's best batch over ``--rounds``
rounds, and as a check on that, the median over rounds of the per-round ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from dataclasses import dataclass
from pathlib import Path

import amber
from payloads import job_hash, quickle_small
from report import machine_info, table

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH_DIR / "results" / "keywords.md"
GOAL = 1.10
ROUNDS, BATCH_MS = 60, 10.0
QUICK_ROUNDS, QUICK_BATCH_MS = 5, 1.0
PAYLOADS = {"job_hash": job_hash, "quickle_small": quickle_small}


@dataclass
class Unused:
    """The class named in ``types=``: allowed to the decoder, absent from the data."""

    name: str = ""
    size: int = 0


@dataclass(frozen=True)
class Case:
    """One call: its statement, and the statement whose time it is a ratio to."""

    label: str
    statement: str
    baseline: str | None = None  # None: this is a baseline


DECODE_BASE = "loads(b)"
ENCODE_BASE = "dumps(x)"
CASES = (
    Case("amber.loads(b)", DECODE_BASE),
    Case("amber.loads(b, types=[C])", "loads(b, types=[C])", DECODE_BASE),
    # The same option with the list made once: what the keyword costs without the list.
    Case("amber.loads(b, types=TYPES), TYPES made once", "loads(b, types=TYPES)", DECODE_BASE),
    Case("amber.loads(b, max_depth=50)", "loads(b, max_depth=50)", DECODE_BASE),
    Case("amber.loads(b, custom=CUSTOM)", "loads(b, custom=CUSTOM)", DECODE_BASE),
    Case(
        "amber.loads(b, unknown_fields='error', placeholders=True, max_alloc=ALLOC)",
        "loads(b, unknown_fields='error', placeholders=True, max_alloc=ALLOC)",
        DECODE_BASE,
    ),
    Case("amber.Decoder(types=[C]), reused: .decode(b)", "decode(b)", DECODE_BASE),
    Case("amber.dumps(x)", ENCODE_BASE),
    Case("amber.dumps(x, canonical=True)", "dumps(x, canonical=True)", ENCODE_BASE),
    Case("amber.dumps(x, types=TYPES)", "dumps(x, types=TYPES)", ENCODE_BASE),
    Case("amber.dumps(x, custom=CUSTOM)", "dumps(x, custom=CUSTOM)", ENCODE_BASE),
    Case(
        "amber.dumps(x, max_depth=50, refs=True)", "dumps(x, max_depth=50, refs=True)", ENCODE_BASE
    ),
    Case("amber.Encoder(), reused: .encode(x)", "encode(x)", ENCODE_BASE),
)


@dataclass(frozen=True)
class Row:
    payload: str
    case: Case
    best_s: float
    ratio: float | None  # best over the baseline's best
    median_ratio: float | None  # median over rounds of this round's ratio

    @property
    def status(self) -> str:
        if self.ratio is None:
            return ""
        return "met" if self.ratio <= GOAL else "MISSED"


def namespace(value: object) -> dict[str, object]:
    """The globals the statements run in: amber's callables, the payload and its bytes."""
    data = amber.dumps(value)
    decoder, encoder = amber.Decoder(types=[Unused]), amber.Encoder()
    for label, got in (
        ("loads(types=)", amber.loads(data, types=[Unused])),
        ("Decoder.decode", decoder.decode(data)),
    ):
        if got != value:
            raise AssertionError(f"{label} does not give the payload back")
    for label, out in (
        ("dumps(canonical=True)", amber.dumps(value, canonical=True)),
        ("Encoder.encode", encoder.encode(value)),
    ):
        if amber.loads(out) != value:
            raise AssertionError(f"{label} does not round-trip")
    return {
        "loads": amber.loads,
        "dumps": amber.dumps,
        "decode": decoder.decode,
        "encode": encoder.encode,
        "C": Unused,
        "TYPES": [Unused],
        "CUSTOM": [amber.CustomType(Unused, vars, lambda state: Unused(**state))],
        "ALLOC": 1 << 30,
        "b": data,
        "x": value,
    }


def calls_per_batch(timer: timeit.Timer, batch_s: float) -> int:
    """How many calls take about ``batch_s``, from growing trial batches (the first warm up)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)  # timeit pauses GC while timing
        if elapsed >= batch_s / 4 or number >= 1 << 24:
            return max(1, round(number * batch_s / max(elapsed, 1e-9)))
        number *= 4


def measure_payload(name: str, value: object, rounds: int, batch_s: float) -> list[Row]:
    names = namespace(value)
    timers = [timeit.Timer(case.statement, globals=names) for case in CASES]
    numbers = [calls_per_batch(timer, batch_s) for timer in timers]
    per_round: list[list[float]] = [[] for _ in CASES]
    for round_index in range(rounds):
        start = round_index % len(CASES)
        for i in [*range(start, len(CASES)), *range(start)]:
            per_round[i].append(timers[i].timeit(numbers[i]) / numbers[i])
    statements = [case.statement for case in CASES]
    rows = []
    for case, times in zip(CASES, per_round, strict=True):
        ratio = median_ratio = None
        if case.baseline is not None:
            base_times = per_round[statements.index(case.baseline)]
            ratio = min(times) / min(base_times)
            median_ratio = statistics.median(t / b for t, b in zip(times, base_times, strict=True))
        rows.append(Row(name, case, min(times), ratio, median_ratio))
    return rows


def measure(rounds: int, batch_s: float) -> list[Row]:
    rows: list[Row] = []
    for name, build in PAYLOADS.items():
        rows += measure_payload(name, build(), rounds, batch_s)
    return rows


def ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render(rows: list[Row], settings: dict[str, str]) -> str:
    lines = [
        "# amber: what a keyword costs a small call",
        "",
        "Written by `make bench` (`bench/keywords.py`). Each keyword call's best time over",
        "the bare call's best (`ratio`), and the median over rounds of the same ratio taken",
        f"within one round; issue 22's goal is a ratio of at most {GOAL:.2f}. `C` is a",
        "dataclass the payload does not hold; `Decoder` and `Encoder` are made once and",
        "reused. Times are per call in µs, the call written as a user writes it.",
        "",
        *(f"- {key}: {value}" for key, value in machine_info().items()),
        *(f"- {key}: {value}" for key, value in settings.items()),
        "",
    ]
    headers = ["payload", "call", "µs", "ratio", "median ratio", f"≤ {GOAL:.2f}"]
    body = [
        [
            row.payload,
            f"`{row.case.label}`",
            f"{row.best_s * 1e6:.3f}",
            ratio_text(row.ratio),
            ratio_text(row.median_ratio),
            row.status,
        ]
        for row in rows
    ]
    lines += table(headers, body, left_columns=2)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK_ROUNDS} rounds of {QUICK_BATCH_MS:g} ms batches",
    )
    parser.add_argument("--rounds", type=int, default=None, help=f"default {ROUNDS}")
    parser.add_argument("--batch-ms", type=float, default=None, help=f"default {BATCH_MS:g}")
    args = parser.parse_args(argv)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    batch_ms = args.batch_ms or (QUICK_BATCH_MS if args.quick else BATCH_MS)
    rows = measure(rounds, batch_ms / 1000)
    from run import source_revision  # the commit line run.py writes

    version = getattr(amber, "__version__", "?")
    settings = {
        "amber": str(version),
        "timing": f"{rounds} interleaved rounds of ~{batch_ms:g} ms batches per call, best batch",
    }
    revision = source_revision()
    if revision:
        settings["source"] = revision
    text = render(rows, settings)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
