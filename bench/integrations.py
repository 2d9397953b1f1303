"""amber inside the systems it plugs into: Celery, Django's Redis cache and Dask, side by side.

Usage: python bench/integrations.py [--quick] [--out DIR] [--systems celery,django,dask]

One Redis server (started here, on a free port of 127.0.0.1) serves every system that needs
one. Each ``integration_<system>.py`` measures its own pipeline end to end (a real Celery
worker, Django's ``RedisCache``, a ``distributed.LocalCluster`` with worker processes) with
every codec in the same run, so the ratios below compare numbers taken minutes apart on the
same machine, never across runs. Writes integrations.md, integrations.json and
integrations.png to --out; a system that fails to run fails the whole command, after the
others have been written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from integration_common import Measurement
from report import machine_info

BENCH_DIR = Path(__file__).resolve().parent
TESTS_DIR = BENCH_DIR.parent / "tests"
DEFAULT_OUT = BENCH_DIR / "results"
SYSTEMS = ("celery", "django", "dask")
SUBJECT = "amber"


def is_peer(codec: str) -> bool:
    """Whether a codec is another library: "amber signed" and the like are amber's variants,
    shown beside amber but not counted as what amber is measured against."""
    return not codec.startswith(SUBJECT)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="few calls per measurement")
    parser.add_argument("--systems", help="comma-separated subset of " + ",".join(SYSTEMS))
    return parser.parse_args(argv)


def chosen_systems(names: str | None) -> list[str]:
    if not names:
        return list(SYSTEMS)
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SYSTEMS))
    if unknown:
        sys.exit(f"unknown systems: {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    return chosen


def number(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value:,.0f} B"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def amber_advantage(subject: Measurement, peer: Measurement) -> float | None:
    """How many times better amber is than the peer (> 1: amber ahead), whatever the metric."""
    if subject.value <= 0 or peer.value <= 0:
        return None
    if subject.better == "lower":
        return peer.value / subject.value
    return subject.value / peer.value


def group(
    measurements: list[Measurement],
) -> dict[str, dict[tuple[str, str], dict[str, Measurement]]]:
    """system -> (payload, metric) -> codec -> measurement, in the order they were taken."""
    grouped: dict[str, dict[tuple[str, str], dict[str, Measurement]]] = defaultdict(dict)
    for m in measurements:
        grouped[m.system].setdefault((m.payload, m.metric), {})[m.codec] = m
    return grouped


def system_table(rows: dict[tuple[str, str], dict[str, Measurement]]) -> list[str]:
    codecs: list[str] = []
    for by_codec in rows.values():
        for codec in by_codec:
            if codec not in codecs:
                codecs.append(codec)
    if SUBJECT in codecs:
        codecs.remove(SUBJECT)
        codecs.insert(0, SUBJECT)
    peers = [c for c in codecs if is_peer(c)]
    header = ["payload", "metric", *codecs, *(f"amber vs {p}" for p in peers)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join([":--", ":--"] + ["--:"] * (len(header) - 2)) + "|",
    ]
    for (payload, metric), by_codec in rows.items():
        cells = [payload, metric]
        for codec in codecs:
            m = by_codec.get(codec)
            if m is None:
                cells.append("n/a")
            elif metric == "exact":
                cells.append("yes" if m.value >= 1.0 else "**no**")
            else:
                cells.append(number(m.value, m.unit))
        subject = by_codec.get(SUBJECT)
        for peer in peers:
            other = by_codec.get(peer)
            if metric == "exact" or subject is None or other is None:
                cells.append("")
                continue
            advantage = amber_advantage(subject, other)
            cells.append("" if advantage is None else f"{advantage:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(
    measurements: list[Measurement], failures: dict[str, str], info: dict[str, Any]
) -> str:
    lines = [
        "# amber inside Celery, Django's Redis cache and Dask",
        "",
        "Written by `make bench` (`bench/integrations.py`); every number is from one run, "
        "codecs taking turns. `amber vs X` is how many times better amber is than X on that "
        "metric (above 1: amber ahead; for time, X's time over amber's; for throughput, "
        "amber's over X's; for bytes, X's size over amber's). `exact`: the value read back "
        "equals the original with the same types (tuples stay tuples, sets stay sets, "
        "Decimals stay Decimals) and, for object graphs, the same sharing.",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in info.items()]
    lines.append("")
    for system, rows in group(measurements).items():
        lines += [f"## {system}", "", *system_table(rows), ""]
    for system, reason in failures.items():
        lines += [f"## {system}: FAILED", "", "```", reason.rstrip(), "```", ""]
    lines.append("![amber against each codec, per metric](integrations.png)")
    return "\n".join(lines) + "\n"


def draw_chart(measurements: list[Measurement], path: Path) -> None:
    """One bar per (system, payload, metric, peer): amber's advantage, on a log axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    bars: list[tuple[str, float, str]] = []
    for system, rows in group(measurements).items():
        for (payload, metric), by_codec in rows.items():
            subject = by_codec.get(SUBJECT)
            if metric == "exact" or subject is None:
                continue
            for codec, m in by_codec.items():
                if not is_peer(codec):
                    continue
                advantage = amber_advantage(subject, m)
                if advantage is not None:
                    bars.append((f"{system} {payload} {metric} vs {codec}", advantage, codec))
    if not bars:
        return
    palette = plt.get_cmap("tab10")
    peers = sorted({codec for _, _, codec in bars})
    colors = {codec: palette(i % 10) for i, codec in enumerate(peers)}
    height = max(3.0, 0.22 * len(bars) + 1.2)
    fig, ax = plt.subplots(figsize=(10, height))
    labels = [label for label, _, _ in bars]
    values = [value for _, value, _ in bars]
    ax.barh(range(len(bars)), values, color=[colors[c] for _, _, c in bars])
    ax.set_yticks(range(len(bars)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    as_times = FuncFormatter(lambda value, _: f"{value:g}x")
    ax.xaxis.set_major_formatter(as_times)
    ax.xaxis.set_minor_formatter(as_times)
    ax.tick_params(axis="x", which="minor", labelsize=6)
    low = min([*values, 1.0])
    high = max([*values, 1.0])
    ax.set_xlim(low / 1.5, high * 1.5)
    ax.set_xlabel("amber's advantage (x, log scale; right of 1: amber better)")
    ax.set_title("amber in real pipelines: Celery, Django cache, Dask")
    for i, value in enumerate(values):
        ax.text(value, i, f" {value:.2f}x", va="center", fontsize=6)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in peers]
    ax.legend(handles, [f"vs {c}" for c in peers], fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    systems = chosen_systems(args.systems)
    sys.path.insert(0, str(TESTS_DIR))
    from _services import RedisServer

    measurements: list[Measurement] = []
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    with RedisServer() as redis:
        for system in systems:
            started = time.perf_counter()
            print(f"== {system}", flush=True)
            try:
                module = importlib.import_module(f"integration_{system}")
                taken = list(module.measure(redis.url, args.quick))
            except Exception:
                failures[system] = traceback.format_exc()
                print(failures[system], file=sys.stderr, flush=True)
                continue
            finally:
                seconds[system] = time.perf_counter() - started
            measurements += taken
            for m in taken:
                print(f"  {m.payload:>10} {m.metric:<16} {m.codec:<14} {number(m.value, m.unit)}")
    info = dict(machine_info())
    info["run"] = (
        ("quick" if args.quick else "full")
        + ", "
        + ", ".join(f"{system} {secs:.0f} s" for system, secs in seconds.items())
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "integrations.md").write_text(markdown(measurements, failures, info))
    payload = {
        "machine": info,
        "measurements": [m.__dict__ for m in measurements],
        "failures": failures,
    }
    (args.out / "integrations.json").write_text(json.dumps(payload, indent=1) + "\n")
    draw_chart(measurements, args.out / "integrations.png")
    for name in ("integrations.md", "integrations.json", "integrations.png"):
        print(f"wrote {args.out / name}")
    if failures:
        print(f"FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    if not measurements or any(math.isnan(m.value) for m in measurements):
        print("FAILED: no measurements, or a NaN among them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
