"""Turn measurements into tables (console and markdown), JSON and a chart."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from serializers import SUBJECT, Codec

BASELINE = "pickle"
SUMMARY_PEERS = ("msgspec", "orjson", "ssrjson", "pickle")
SUMMARY_TITLE = f"{SUBJECT} vs {', '.join(SUMMARY_PEERS)}"
# Columns of the "vs pickle" table on the console (results.md has every codec).
CONSOLE_VS_PICKLE = (SUBJECT, "msgspec", "orjson", "ssrjson", "pyfory")
MISSING = "—"


@dataclass(frozen=True)
class Result:
    """One payload through one codec. Times are the best seconds per call."""

    payload: str
    codec: str
    encode_s: float | None = None
    decode_s: float | None = None
    size: int | None = None
    exact: bool | None = None
    diff: str | None = None
    error: str | None = None
    # How the codec was called differently for this payload ("typed", "registered").
    variant: str | None = None

    @property
    def label(self) -> str:
        return self.codec if self.variant is None else f"{self.codec} ({self.variant})"

    @property
    def status(self) -> str:
        if self.error is not None:
            return f"n/a ({self.error.split(':', 1)[0]})"
        return "exact" if self.exact else "lossy"

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Ratios:
    """subject vs peer: peer_time / subject_time (>1: subject faster), sizes subject/peer."""

    encode: float
    decode: float
    size: float


def ratios(subject: Result | None, peer: Result | None) -> Ratios | None:
    if subject is None or peer is None or not subject.ok or not peer.ok:
        return None
    assert subject.encode_s and subject.decode_s and subject.size
    assert peer.encode_s is not None and peer.decode_s is not None and peer.size
    return Ratios(
        encode=peer.encode_s / subject.encode_s,
        decode=peer.decode_s / subject.decode_s,
        size=subject.size / peer.size,
    )


class Section(Protocol):
    """A measurement section beyond the codec tables (targets, arrays, memory, refs).

    Each section renders itself, so ``Report`` only places it: ``title`` is its
    heading in results.md, ``lines()`` its markdown body (also printed on the
    console), and ``as_json()`` its raw numbers under ``key`` in results.json.
    """

    @property
    def key(self) -> str: ...

    @property
    def title(self) -> str: ...

    def lines(self) -> list[str]: ...

    def as_json(self) -> Any: ...


# ---------------------------------------------------------------- formatting


def micros(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    value = seconds * 1e6
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def ratio_text(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}"


def ratio_cells(found: Ratios | None) -> list[str]:
    if found is None:
        return [MISSING] * 3
    return [ratio_text(found.encode), ratio_text(found.decode), ratio_text(found.size)]


def triple(found: Ratios | None, result: Result | None) -> str:
    """Ratios as "enc / dec / size", tagged with the result's variant and lossiness."""
    if found is None:
        return "n/a"
    text = f"{found.encode:.2f} / {found.decode:.2f} / {found.size:.2f}"
    tags = []
    if result is not None and result.variant is not None:
        tags.append(result.variant)
    if result is not None and result.ok and not result.exact:
        tags.append("lossy")
    return f"{text} ({', '.join(tags)})" if tags else text


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], left_columns: int = 1
) -> list[str]:
    """A markdown pipe table, padded so it also reads well as plain text.

    The first ``left_columns`` columns are left-aligned (names), the rest
    right-aligned (numbers).
    """
    body = [list(row) for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *body, strict=False)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.ljust(width) if index < left_columns else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            ":" + "-" * (width + 1) if index < left_columns else "-" * (width + 1) + ":"
            for index, width in enumerate(widths)
        )
        + "|"
    )
    return [line(headers), rule, *(line(row) for row in body)]


# ---------------------------------------------------------------- tables


class Report:
    """All results of one run, indexed by payload and codec."""

    def __init__(
        self,
        payloads: list[tuple[str, str]],
        codecs: list[Codec],
        missing: dict[str, str],
        settings: dict[str, Any],
    ) -> None:
        self.payloads = payloads  # (name, description), in run order
        self.codecs = codecs
        self.missing = missing
        self.settings = settings
        self.results: dict[tuple[str, str], Result] = {}
        # Rendered before the summary tables (the targets) and after the chart (the rest).
        self.leading: list[Section] = []
        self.sections: list[Section] = []

    def add(self, result: Result) -> None:
        self.results[(result.payload, result.codec)] = result

    def get(self, payload: str, codec: str) -> Result | None:
        return self.results.get((payload, codec))

    @property
    def has_subject(self) -> bool:
        return any(codec.name == SUBJECT for codec in self.codecs)

    def payload_table(self, payload: str) -> list[str]:
        subject = self.get(payload, SUBJECT)
        headers = ["codec", "encode µs", "decode µs", "size B", "exact"]
        if self.has_subject:
            headers += [f"{SUBJECT} enc x", f"{SUBJECT} dec x", f"{SUBJECT} size x"]
        rows = []
        for codec in self.codecs:
            result = self.get(payload, codec.name)
            if result is None:
                continue
            size = MISSING if result.size is None else f"{result.size:,}"
            row = [result.label, micros(result.encode_s), micros(result.decode_s), size]
            row.append(result.status)
            if self.has_subject:
                found = None if codec.name == SUBJECT else ratios(subject, result)
                row += ratio_cells(found)
            rows.append(row)
        return table(headers, rows)

    def summary_table(self) -> list[str]:
        """subject vs each of SUMMARY_PEERS: enc x / dec x / size x."""
        headers = ["payload"] + [f"vs {peer} (enc / dec / size)" for peer in SUMMARY_PEERS]
        rows = []
        for payload, _ in self.payloads:
            subject = self.get(payload, SUBJECT)
            row = [payload]
            for peer in SUMMARY_PEERS:
                result = self.get(payload, peer)
                row.append(triple(ratios(subject, result), result))
            rows.append(row)
        return table(headers, rows)

    def vs_baseline_table(self, codec_names: Sequence[str]) -> list[str]:
        """Each codec against pickle, as in the design notes: enc x / dec x / size."""
        names = [name for name in codec_names if name != BASELINE]
        headers = ["payload"] + [f"{name} (enc / dec / size)" for name in names]
        rows = []
        for payload, _ in self.payloads:
            baseline = self.get(payload, BASELINE)
            row = [payload]
            for name in names:
                result = self.get(payload, name)
                # With pickle as the "peer": pickle's time over the codec's, codec's size
                # over pickle's.
                row.append(triple(ratios(result, baseline), result))
            rows.append(row)
        return table(headers, rows)

    def lossy_notes(self) -> list[str]:
        notes = []
        for (payload, _), result in self.results.items():
            if result.ok and not result.exact:
                notes.append(f"- {payload} / {result.label}: {result.diff}")
            elif not result.ok:
                notes.append(f"- {payload} / {result.label}: {result.error}")
        return notes

    # ------------------------------------------------------------ files

    def markdown(self, machine: dict[str, str]) -> str:
        lines = ["# amber benchmark results", ""]
        lines += [f"- {key}: {value}" for key, value in machine.items()]
        lines += [f"- {key}: {value}" for key, value in self.settings.items()]
        lines += ["", "## Codecs", ""]
        lines += table(
            ["codec", "version", "options"],
            [[c.name, c.version, c.note or "defaults"] for c in self.codecs],
            left_columns=3,
        )
        if self.missing:
            lines.append("")
        lines += [f"- {name} was not run: {why}" for name, why in self.missing.items()]
        lines += ["", *HOW_TO_READ, ""]
        for section in self.leading:
            lines += [f"## {section.title}", "", *section.lines(), ""]
        if self.results and self.has_subject:
            lines += [
                f"## {SUMMARY_TITLE}",
                "",
                *self.summary_table(),
                "",
            ]
        if self.results:
            all_names = [codec.name for codec in self.codecs]
            lines += [
                "## Every codec vs pickle",
                "",
                *self.vs_baseline_table(all_names),
                "",
            ]
            lines += ["![encode and decode time relative to pickle](results.png)", ""]
        for section in self.sections:
            lines += [f"## {section.title}", "", *section.lines(), ""]
        for payload, description in self.payloads:
            if not any(key[0] == payload for key in self.results):
                continue
            lines += [
                f"## {payload}: {description}",
                "",
                *self.payload_table(payload),
                "",
            ]
        notes = self.lossy_notes()
        if notes:
            lines += ["## Why a result is lossy or n/a", "", *notes, ""]
        return "\n".join(lines)

    def as_json(self, machine: dict[str, str]) -> dict[str, Any]:
        return {
            "machine": machine,
            "settings": self.settings,
            "codecs": [
                {"name": c.name, "version": c.version, "options": c.note} for c in self.codecs
            ],
            "missing": self.missing,
            "payloads": [{"name": n, "description": d} for n, d in self.payloads],
            "results": [asdict(r) for r in self.results.values()],
            **{section.key: section.as_json() for section in (*self.leading, *self.sections)},
        }

    def write(self, out_dir: Path, machine: dict[str, str]) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        markdown_path = out_dir / "results.md"
        markdown_path.write_text(self.markdown(machine) + "\n", encoding="utf-8")
        json_path = out_dir / "results.json"
        payload = json.dumps(self.as_json(machine), indent=1, ensure_ascii=False)
        json_path.write_text(payload + "\n", encoding="utf-8")
        written = [markdown_path, json_path]
        if self.results:  # no codec tables (--no-table): no chart of them either
            chart_path = out_dir / "results.png"
            draw_chart(self, chart_path)
            written.append(chart_path)
        return written


HOW_TO_READ = [
    "Times are the best per-call time over repeated batches (GC paused while timing).",
    f"`{SUBJECT} enc x` is the peer's time over {SUBJECT}'s (>1: {SUBJECT} is faster);",
    f"`{SUBJECT} size x` is {SUBJECT}'s size over the peer's (<1: {SUBJECT} is smaller).",
    "In the vs-pickle table, enc/dec are pickle's time over the codec's (>1: faster than",
    "pickle) and size is the codec's bytes over pickle's.",
    "`exact` means the decoded graph equals the original in type, value and identity",
    "(amber._compare.graph_diff); `lossy` peers turn tuples into lists, drop sharing, etc.",
    "On class payloads (dto_1000, employee_objects, structs_100k) amber decodes with",
    "`loads(data, types=[...])`, msgspec decodes into the payload's type (`typed`) and",
    "pyfory registers the dataclasses (`registered`); decoders returning dicts are `lossy`.",
]


# ---------------------------------------------------------------- machine and chart


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, str]:
    return {
        "CPU": f"{cpu_model()} ({os.cpu_count()} logical CPUs)",
        "OS": platform.platform(terse=True),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def draw_chart(report: Report, path: Path) -> None:
    """Per payload, each codec's encode and decode time over pickle's (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    names = [codec.name for codec in report.codecs if codec.name != BASELINE]
    payloads = [name for name, _ in report.payloads]
    figure, axes = plt.subplots(2, 1, figsize=(max(10, 1.4 * len(payloads)), 9), sharex=True)
    width = 0.8 / max(1, len(names))
    colors = _codec_colors(names, plt.get_cmap("tab10"))
    for axis, direction in zip(axes, ("encode", "decode"), strict=True):
        series = {name: _bars(report, payloads, name, direction) for name in names}
        all_heights = [h for _, heights, _ in series.values() for h in heights] or [1.0]
        # Log-scale bars need a floor below the smallest value, or the shortest vanish.
        floor = min(min(all_heights), 1.0) / 1.6
        for index, name in enumerate(names):
            xs, heights, hatches = series[name]
            offsets = [x - 0.4 + width * (index + 0.5) for x in xs]
            tops = [height - floor for height in heights]
            bars = axis.bar(offsets, tops, width, bottom=floor, label=name, **colors[name])
            for bar, hatch in zip(bars, hatches, strict=True):
                bar.set_hatch(hatch)
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_ylim(floor, max(max(all_heights), 1.0) * 1.6)
        axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axis.yaxis.set_minor_formatter(NullFormatter())
        axis.set_ylabel(f"{direction} time / pickle's (lower is faster)")
        axis.grid(axis="y", which="both", alpha=0.3)
    axes[-1].set_xticks(range(len(payloads)), payloads, rotation=30, ha="right")
    figure.legend(
        *axes[0].get_legend_handles_labels(),
        loc="upper center",
        ncols=min(len(names), 9),
        fontsize="small",
        bbox_to_anchor=(0.5, 0.955),
    )
    figure.suptitle("Time relative to pickle protocol 5 (hatched bars: lossy round trip)")
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _codec_colors(names: list[str], palette: Any) -> dict[str, dict[str, Any]]:
    """amber in amber with a dark outline; peers from the palette, orange skipped."""
    peer_colors = [palette(i) for i in range(10) if i != 1]
    peers = [name for name in names if name != SUBJECT]
    styles: dict[str, dict[str, Any]] = {
        name: {"color": peer_colors[index % len(peer_colors)]} for index, name in enumerate(peers)
    }
    styles[SUBJECT] = {"color": "#ffb000", "edgecolor": "black", "linewidth": 0.8}
    return styles


def _bars(
    report: Report, payloads: list[str], codec: str, direction: str
) -> tuple[list[int], list[float], list[str]]:
    xs: list[int] = []
    heights: list[float] = []
    hatches: list[str] = []
    for x, payload in enumerate(payloads):
        result, baseline = report.get(payload, codec), report.get(payload, BASELINE)
        if result is None or baseline is None or not result.ok or not baseline.ok:
            continue
        time = getattr(result, f"{direction}_s")
        base = getattr(baseline, f"{direction}_s")
        xs.append(x)
        heights.append(time / base)
        hatches.append("" if result.exact else "//")
    return xs, heights, hatches
