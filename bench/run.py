"""Side-by-side benchmark: amber against pickle, marshal and the fast peers.

Usage: python bench/run.py [--scale N] [--out DIR] [--require amber] [--quick]

For every payload and codec it records encode and decode time (best per call),
encoded size, and whether the round trip is exact (amber._compare.graph_diff).
Tables go to stdout; results.md, results.json and results.png to --out.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from payloads import Payload, all_payloads
from report import CONSOLE_VS_PICKLE, Report, Result, machine_info
from serializers import FACTORIES, SUBJECT, Codec, load_codecs
from timing import Budget, best_seconds_per_call

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_BUDGET_S = 0.3
QUICK_BUDGET_S = 0.02
QUICK_SCALE = 0.1

GraphDiff = Callable[[object, object], "str | None"]


def load_graph_diff() -> GraphDiff:
    """amber._compare.graph_diff, from the installed package or from the source tree."""
    module: ModuleType
    try:
        module = importlib.import_module("amber._compare")
    except ImportError:
        source = BENCH_DIR.parent / "python" / "amber" / "_compare.py"
        spec = importlib.util.spec_from_file_location("amber_compare", source)
        if spec is None or spec.loader is None:
            raise
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    graph_diff: GraphDiff = module.graph_diff
    return graph_diff


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help="size multiplier for the big payloads (default: $SCALE or 1; 10 = 1M)",
    )
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results")
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="CODEC",
        help="fail unless CODEC imports and round-trips every payload exactly",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK_BUDGET_S}s per measurement, scale {QUICK_SCALE}",
    )
    parser.add_argument("--budget", type=float, default=None, help="seconds per timing")
    parser.add_argument("--codecs", help="comma-separated subset of " + ",".join(FACTORIES))
    parser.add_argument("--payloads", help="comma-separated subset of payload names")
    return parser.parse_args(argv)


def resolve_scale(args: argparse.Namespace) -> float:
    if args.scale is not None:
        return float(args.scale)
    if os.environ.get("SCALE"):
        return float(os.environ["SCALE"])
    return QUICK_SCALE if args.quick else 1.0


def pick(names: str | None, available: list[str], kind: str) -> list[str]:
    if not names:
        return available
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in available]
    if unknown:
        sys.exit(f"unknown {kind}: {', '.join(unknown)} (known: {', '.join(available)})")
    return chosen


def describe_error(error: BaseException, stage: str) -> str:
    message = str(error).splitlines()[0][:120] if str(error) else ""
    return f"{type(error).__name__}: {stage}: {message}"


def measure(
    value: object, payload: str, codec: Codec, budget: Budget, graph_diff: GraphDiff
) -> Result:
    """Round-trip once (for size and exactness), then time encode and decode."""
    variant = codec.variant
    try:
        encoded = codec.encode(value)
    except Exception as error:  # a codec's refusal is a result, not a crash
        return Result(payload, codec.name, variant=variant, error=describe_error(error, "encode"))
    try:
        decoded = codec.decode(encoded)
    except Exception as error:
        return Result(payload, codec.name, variant=variant, error=describe_error(error, "decode"))
    diff = graph_diff(value, decoded)
    del decoded
    return Result(
        payload,
        codec.name,
        variant=variant,
        encode_s=best_seconds_per_call(codec.encode, value, budget),
        decode_s=best_seconds_per_call(codec.decode, encoded, budget),
        size=len(encoded),
        exact=diff is None,
        diff=diff,
    )


def run_payload(
    payload: Payload,
    codecs: list[Codec],
    budget: Budget,
    graph_diff: GraphDiff,
    report: Report,
) -> None:
    value = payload.build()
    for codec in codecs:
        try:
            # Class payloads: the codec told the classes (amber types=, msgspec typed
            # Decoder, pyfory registration).
            prepared = codec.for_payload(payload.types, payload.schema)
        except Exception as error:  # e.g. a typed decoder refusing the payload type
            report.add(Result(payload.name, codec.name, error=describe_error(error, "setup")))
            continue
        report.add(measure(value, payload.name, prepared, budget, graph_diff))


def required_failures(report: Report, required: list[str]) -> list[str]:
    failures = []
    for name in required:
        for payload, _ in report.payloads:
            result = report.get(payload, name)
            if result is not None and not (result.ok and result.exact):
                failures.append(f"{name} on {payload}: {result.error or result.diff}")
    return failures


def print_block(title: str, lines: list[str]) -> None:
    print(f"\n{title}")
    print("\n".join(lines), flush=True)


def select_payloads(args: argparse.Namespace, scale: float) -> list[Payload]:
    payloads = all_payloads(scale)
    chosen = pick(args.payloads, [p.name for p in payloads], "payload")
    return [p for p in payloads if p.name in chosen]


def select_codecs(args: argparse.Namespace) -> tuple[list[Codec], dict[str, str]]:
    chosen = pick(args.codecs, list(FACTORIES), "codec") + args.require
    names = [name for name in FACTORIES if name in chosen]  # amber first, then the peers
    names += [name for name in args.require if name not in FACTORIES]
    codecs, missing = load_codecs(names)
    for name, reason in missing.items():
        print(f"{name}: not available, skipped ({reason})", file=sys.stderr)
    return codecs, missing


def print_summaries(report: Report, codecs: list[Codec], missing: dict[str, str]) -> None:
    if report.has_subject:
        print_block(f"{SUBJECT} vs peers (enc x / dec x / size x)", report.summary_table())
    elif SUBJECT in missing:
        print(f"\n{SUBJECT} not available ({missing[SUBJECT]}): no summary", flush=True)
    shown = [c.name for c in codecs if c.name in CONSOLE_VS_PICKLE]
    print_block(
        "vs pickle (pickle time / codec time; size codec / pickle)",
        report.vs_baseline_table(shown),
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scale = resolve_scale(args)
    budget_s = args.budget or (QUICK_BUDGET_S if args.quick else DEFAULT_BUDGET_S)
    budget = Budget(budget_s, min_repeats=1 if args.quick else 2)
    payloads = select_payloads(args, scale)
    codecs, missing = select_codecs(args)
    absent = [name for name in args.require if name in missing]
    if absent:
        print(f"required codec missing: {', '.join(absent)}", file=sys.stderr)
        return 2

    graph_diff = load_graph_diff()
    settings = {
        "scale": f"{scale:g}",
        "timing budget": f"{budget_s:g} s per measurement, best of up to "
        f"{budget.max_repeats} batches",
    }
    report = Report([(p.name, p.description) for p in payloads], codecs, missing, settings)
    started = time.perf_counter()
    for payload in payloads:
        run_payload(payload, codecs, budget, graph_diff, report)
        print_block(f"{payload.name}: {payload.description}", report.payload_table(payload.name))
    wall = time.perf_counter() - started
    report.settings["wall time"] = f"{wall:.0f} s"

    print_summaries(report, codecs, missing)
    written = report.write(args.out, machine_info())
    print(f"\nwall time {wall:.0f} s; wrote " + ", ".join(path.name for path in written))
    failures = required_failures(report, args.require)
    for failure in failures:
        print(f"required codec failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
