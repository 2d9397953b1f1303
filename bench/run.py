"""Side-by-side benchmark: amber against pickle, marshal and the fast peers.

Usage: python bench/run.py [--scale N] [--out DIR] [--require amber] [--quick]

For every payload and codec it records encode and decode time (best per call),
encoded size, and whether the round trip is exact (amber._compare.graph_diff).
Then amber alone: refs=True vs refs=False per payload, a 10M float64 array and
10M bytes against one buffer copy, and peak memory on 1M employees. From all of
it, the targets table: met or missed, per check. Tables go to stdout;
results.md, results.json, results.png and targets.png to --out, and a full run
into the default --out also rewrites the README's benchmark section.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import arrays
import memory
from payloads import Payload, all_payloads
from readme import render_block, update_readme
from refs import RefsSection
from report import CONSOLE_VS_PICKLE, Report, Result, machine_info
from serializers import FACTORIES, SUBJECT, Codec, load_codecs
from targets import TargetsSection, build_targets, draw_targets_chart
from timing import Budget, best_seconds_interleaved

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH_DIR / "results"
DEFAULT_README = BENCH_DIR.parent / "README.md"
DEFAULT_BUDGET_S = 0.3
QUICK_BUDGET_S = 0.02
QUICK_SCALE = 0.1
# A 10M-element array takes ~0.1 s a call: a longer budget still gets a few repeats.
ARRAY_BUDGET_FACTOR = 3

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
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
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
    sections = parser.add_argument_group("sections (all run by default)")
    sections.add_argument(
        "--no-table", action="store_true", help="skip the per-codec tables (targets 1-3)"
    )
    sections.add_argument(
        "--no-refs", action="store_true", help="skip refs=True vs refs=False (target 6)"
    )
    sections.add_argument(
        "--no-arrays",
        action="store_true",
        help="skip the 10M float64 array and 10M bytes (target 4; 1M under --quick)",
    )
    sections.add_argument(
        "--no-memory",
        action="store_true",
        help="skip peak memory on 1M employees (target 5; 100k under --quick)",
    )
    readme = parser.add_mutually_exclusive_group()
    readme.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="rewrite the benchmark section of this README (default: the repository's "
        "README.md, on a full run, i.e. every section, codec and payload, --require "
        "amber, not --quick, default --out)",
    )
    readme.add_argument(
        "--no-readme", action="store_true", help="never rewrite a README, even on a full run"
    )
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


def check(value: object, payload: str, codec: Codec, graph_diff: GraphDiff) -> Result:
    """Round-trip once: size and exactness, or the codec's refusal. Times come later."""
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
        payload, codec.name, variant=variant, size=len(encoded), exact=diff is None, diff=diff
    )


def measure(
    value: object,
    payload: str,
    codecs: list[Codec],
    budget: Budget,
    graph_diff: GraphDiff,
) -> list[Result]:
    """Check every codec on one payload, then time the ones that round-trip, taking turns
    (see `best_seconds_interleaved`): encodes in one series, decodes in the next."""
    results = [check(value, payload, codec, graph_diff) for codec in codecs]
    timed = [i for i, result in enumerate(results) if result.error is None]
    encode_s = best_seconds_interleaved([(codecs[i].encode, value) for i in timed], budget)
    decode_s = best_seconds_interleaved(
        [(codecs[i].decode, codecs[i].encode(value)) for i in timed], budget
    )
    for i, encode_time, decode_time in zip(timed, encode_s, decode_s, strict=True):
        results[i] = dataclasses.replace(results[i], encode_s=encode_time, decode_s=decode_time)
    return results


def run_payload(
    payload: Payload,
    codecs: list[Codec],
    budget: Budget,
    graph_diff: GraphDiff,
    report: Report,
    with_table: bool,
    refs: RefsSection | None,
) -> None:
    """Every codec on one payload, then amber's refs on/off (the payload built once)."""
    value = payload.build()
    # In codec order: a prepared codec, or the result of one that refused the payload.
    slots: list[Codec | Result] = []
    for codec in codecs:
        if not with_table and codec.name != SUBJECT:
            continue  # only amber is needed, for refs
        try:
            # Class payloads: the codec told the classes (amber types=, msgspec typed
            # Decoder, pyfory registration).
            slots.append(codec.for_payload(payload.types, payload.schema))
        except Exception as error:  # e.g. a typed decoder refusing the payload type
            slots.append(Result(payload.name, codec.name, error=describe_error(error, "setup")))
    prepared = [slot for slot in slots if not isinstance(slot, Result)]
    if with_table:
        measured = iter(measure(value, payload.name, prepared, budget, graph_diff))
        for slot in slots:
            report.add(slot if isinstance(slot, Result) else next(measured))
    if refs is not None:
        for codec in prepared:
            if codec.name == SUBJECT:
                refs.measure(payload.name, value, codec, budget, graph_diff)


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
    if not report.results:
        return
    if report.has_subject:
        print_block(f"{SUBJECT} vs peers (enc x / dec x / size x)", report.summary_table())
    elif SUBJECT in missing:
        print(f"\n{SUBJECT} not available ({missing[SUBJECT]}): no summary", flush=True)
    shown = [c.name for c in codecs if c.name in CONSOLE_VS_PICKLE]
    print_block(
        "vs pickle (pickle time / codec time; size codec / pickle)",
        report.vs_baseline_table(shown),
    )


def source_revision() -> str | None:
    """The repository's commit, and whether its sources have local changes, if git knows.

    The run's own outputs (bench/results, README.md) do not count as changes, so a
    second run on an unchanged tree still names the commit as clean.
    """

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", *arguments],
            cwd=BENCH_DIR.parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short=10", "HEAD")
        changes = git(
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)bench/results",
            ":(exclude)README.md",
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit} with local changes" if changes else commit


def is_full_run(args: argparse.Namespace) -> bool:
    """The run `make bench` does: every section, codec and payload, amber required."""
    return (
        SUBJECT in args.require
        and not args.quick
        and not (args.codecs or args.payloads)
        and not (args.no_table or args.no_refs or args.no_arrays or args.no_memory)
        and args.out.resolve() == DEFAULT_OUT
    )


def readme_target(args: argparse.Namespace) -> Path | None:
    if args.no_readme:
        return None
    if args.readme is not None:
        return Path(args.readme)
    return DEFAULT_README if is_full_run(args) else None


class Timer:
    """Wall time per section, for the settings line."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.parts: dict[str, float] = {}

    def record(self, name: str, since: float) -> None:
        self.parts[name] = time.perf_counter() - since

    def text(self) -> str:
        total = time.perf_counter() - self.started
        parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.parts.items())
        return f"{total:.0f} s ({parts})" if parts else f"{total:.0f} s"


def run_sections(
    args: argparse.Namespace,
    payloads: list[Payload],
    codecs: list[Codec],
    budget: Budget,
    report: Report,
    timer: Timer,
) -> TargetsSection:
    """Codec tables and refs (per payload), then arrays and memory; then the targets."""
    graph_diff = load_graph_diff()
    amber_loaded = any(codec.name == SUBJECT for codec in codecs)
    refs = RefsSection() if not args.no_refs and amber_loaded else None
    started = time.perf_counter()
    if not args.no_table or refs is not None:
        for payload in payloads:
            run_payload(payload, codecs, budget, graph_diff, report, not args.no_table, refs)
            if not args.no_table:
                title = f"{payload.name}: {payload.description}"
                print_block(title, report.payload_table(payload.name))
        timer.record("tables and refs", started)
    if refs is not None:
        report.sections.append(refs)
        print_block(refs.title, refs.lines())

    array_section = None
    if not args.no_arrays:
        started = time.perf_counter()
        divisor = arrays.QUICK_DIVISOR if args.quick else 1
        array_budget = Budget(budget.seconds * ARRAY_BUDGET_FACTOR, min_repeats=budget.min_repeats)
        array_section = arrays.measure_arrays(
            arrays.ARRAY_ELEMENTS // divisor,
            arrays.BYTES_LENGTH // divisor,
            array_budget,
            graph_diff,
            with_pickle=any(codec.name == "pickle" for codec in codecs),
        )
        report.sections.append(array_section)
        print_block(array_section.title, array_section.lines())
        timer.record("arrays", started)

    memory_section = None
    if not args.no_memory:
        started = time.perf_counter()
        items = memory.MEMORY_ITEMS // (memory.QUICK_DIVISOR if args.quick else 1)
        names = [codec.name for codec in codecs if codec.name in memory.MEMORY_CODECS]
        memory_section = memory.measure_memory(items, names)
        report.sections.append(memory_section)
        print_block(memory_section.title, memory_section.lines())
        timer.record("memory", started)

    targets = build_targets(report, array_section, memory_section, refs)
    report.leading.append(targets)
    return targets


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

    settings = {
        "scale": f"{scale:g}",
        "timing budget": f"{budget_s:g} s per measurement, best of up to "
        f"{budget.max_repeats} batches",
    }
    revision = source_revision()
    if revision:
        settings["source"] = revision
    report = Report([(p.name, p.description) for p in payloads], codecs, missing, settings)
    timer = Timer()
    targets = run_sections(args, payloads, codecs, budget, report, timer)
    report.settings["wall time"] = timer.text()

    print_summaries(report, codecs, missing)
    print_block(targets.title, targets.lines(chart=None))
    machine = machine_info()
    written = report.write(args.out, machine)
    if draw_targets_chart(targets, args.out / "targets.png"):
        written.append(args.out / "targets.png")
    readme = readme_target(args)
    if readme is not None:
        block = render_block(report, targets, machine, readme, args.out)
        if update_readme(readme, block):
            written.append(readme)
    print(f"\nwall time {timer.text()}; wrote " + ", ".join(path.name for path in written))
    failures = required_failures(report, args.require)
    for failure in failures:
        print(f"required codec failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
