"""amber's performance targets, checked against this run's own numbers.

Every row is computed from the measurements of the run that prints it, so the
answer to "does amber meet its targets?" is never typed by hand and never stale.
The bars are the peers: every codec other than amber that handled the payload,
lossy ones included (a peer that drops sharing or turns tuples into lists still
sets the speed a user could get instead).

1. encode time, every payload: amber <= the fastest peer;
2. decode time: amber <= 0.8 x the fastest peer on record payloads (rows of dicts
   or dataclasses, where a binary format with known field names should win
   clearly), <= the fastest peer elsewhere;
3. size, every payload: amber <= the smallest peer;
4. a 10M float64 array: encode and decode each at >= 80% of the speed of copying
   its buffer once (``arrays.py``);
5. 1M employees: peak extra memory <= 110% of what the operation must hold anyway
   (``memory.py``);
6. refs=True (the default) costs <= 15% over refs=False on payloads with no
   sharing (``refs.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arrays import ArraysSection
from memory import MemorySection
from refs import RefsSection
from report import Report, Result, micros, table
from serializers import SUBJECT

# Payloads of records: decode must beat the fastest peer by 20%.
RECORD_PAYLOADS = frozenset({"job_hash", "rowset_1000", "dto_1000", "employees", "structs_100k"})
RECORD_DECODE_LIMIT = 0.8
PEER_LIMIT = 1.0
COPY_SPEED_LIMIT = 0.8  # amber's speed over a single copy's (copy time / amber time)
MEMORY_LIMIT = 1.10  # peak extra memory over what the operation must hold
REFS_LIMIT = 1.15  # refs=True time over refs=False time

MET, MISSED, NOT_AVAILABLE = "met", "MISSED", "n/a"
STATUSES = (MET, MISSED, NOT_AVAILABLE)

GROUPS = {
    "1": "encode time <= fastest peer, every payload",
    "2": "decode time <= 0.8 x fastest peer on record payloads, <= fastest peer elsewhere",
    "3": "size <= smallest peer, every payload",
    "4": "10M float64 array: encode and decode >= 0.8 x the speed of one buffer copy",
    "5": "1M employees: peak extra memory <= 1.1 x what the operation must hold",
    "6": "refs=True vs refs=False, payloads with no sharing: time ratio <= 1.15",
}

LEGEND = [
    "Each row compares amber with its bar; `ratio` is what the target bounds:",
    "",
    "- 1-3: amber's time (or size) over the best peer's: every codec but amber that",
    "  handled the payload, lossy ones included (marked); `≤ 1.00` means at least as fast.",
    "- 4: copy time over amber's time (`x of copy speed`), the copy being",
    "  `bytes(memoryview(arr))` of the same array.",
    "- 5: peak extra RSS over the output size (encode), or over input size plus the",
    "  decoded objects' RSS (decode).",
    "- 6: amber's time with refs=True over its time with refs=False.",
]


@dataclass(frozen=True)
class Check:
    """One target check: amber's value, the bar it is held to, and the verdict.

    ``ratio`` is None when the check could not be made (no peer, measurement
    skipped or failed); ``status`` then says n/a and ``note`` why. A check that
    amber itself failed (error on the payload) is MISSED, not n/a.
    """

    target: str
    what: str
    amber: str
    bar: str
    ratio: float | None
    limit: float
    at_least: bool = False  # True: ratio must be >= limit (speeds); else <= (costs)
    note: str = ""
    amber_failed: bool = False
    # For the chart: the payload and whether the bar's peer round-trips exactly.
    payload: str | None = None
    bar_name: str | None = None
    bar_lossy: bool = False
    values: dict[str, float | None] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.amber_failed:
            return MISSED
        if self.ratio is None:
            return NOT_AVAILABLE
        met = self.ratio >= self.limit if self.at_least else self.ratio <= self.limit
        return MET if met else MISSED

    @property
    def limit_text(self) -> str:
        return f"{'≥' if self.at_least else '≤'} {self.limit:.2f}"

    @property
    def ratio_text(self) -> str:
        """Two decimals, or as many more as it takes not to round a miss onto the limit."""
        if self.ratio is None:
            return "—"
        if self.ratio == self.limit:
            return f"{self.ratio:.2f}"
        for decimals in range(2, 7):
            text = f"{self.ratio:.{decimals}f}"
            if text != f"{self.limit:.{decimals}f}":
                break
        return text

    def row(self) -> list[str]:
        ratio = self.ratio_text
        status = self.status if not self.note else f"{self.status} ({self.note})"
        return [self.target, self.what, self.amber, self.bar, ratio, self.limit_text, status]


def _size_text(size: int | None) -> str:
    return "—" if size is None else f"{size:,} B"


def _peer_label(result: Result) -> str:
    return result.label if result.exact else f"{result.label}, lossy"


def _peer_checks(report: Report, payload: str) -> list[Check]:
    """Targets 1-3 for one payload, from the codec table."""
    subject = report.get(payload, SUBJECT)
    peers = [
        result
        for (name, codec), result in report.results.items()
        if name == payload and codec != SUBJECT and result.ok
    ]
    decode_limit = RECORD_DECODE_LIMIT if payload in RECORD_PAYLOADS else PEER_LIMIT
    checks = []
    specs: list[tuple[str, str, float]] = [
        ("1", "encode_s", PEER_LIMIT),
        ("2", "decode_s", decode_limit),
        ("3", "size", PEER_LIMIT),
    ]
    for target, attribute, limit in specs:
        kind = {"encode_s": "encode", "decode_s": "decode", "size": "size"}[attribute]
        what = f"{kind} {payload}"
        text = _size_text if attribute == "size" else (lambda s: f"{micros(s)} µs")
        if subject is None or not subject.ok:
            reason = "amber not run" if subject is None else (subject.error or "")
            checks.append(
                Check(
                    target,
                    what,
                    "n/a",
                    "—",
                    None,
                    limit,
                    note=reason.split(":", 1)[0],
                    amber_failed=subject is not None,
                    payload=payload,
                )
            )
            continue
        mine = getattr(subject, attribute)
        if not peers:
            checks.append(
                Check(target, what, text(mine), "—", None, limit, note="no peer", payload=payload)
            )
            continue
        best = min(peers, key=lambda result: getattr(result, attribute))
        theirs = getattr(best, attribute)
        checks.append(
            Check(
                target,
                what,
                text(mine),
                f"{_peer_label(best)}: {text(theirs)}",
                mine / theirs,
                limit,
                payload=payload,
                bar_name=best.label,
                bar_lossy=not best.exact,
                values={"amber": float(mine), "bar": float(theirs)},
            )
        )
    return checks


def _array_checks(arrays: ArraysSection | None) -> list[Check]:
    """Target 4: the in-band float64 array, encode and decode against one copy."""
    if arrays is None:
        return [
            Check(
                "4", f"{direction} float64 array", "—", "—", None, COPY_SPEED_LIMIT, True, "skipped"
            )
            for direction in ("encode", "decode")
        ]
    row, copy_s = arrays.target_row(), arrays.array_copy_s
    checks = []
    for direction in ("encode", "decode"):
        what = f"{direction} {arrays.array_label}"
        bar = "—" if copy_s is None else f"one copy: {copy_s * 1e3:.1f} ms"
        seconds = None if row is None else getattr(row, f"{direction}_s")
        if row is None or seconds is None or copy_s is None:
            note = "not measured" if row is None else (row.error or "not measured")
            checks.append(
                Check(
                    "4",
                    what,
                    "n/a",
                    bar,
                    None,
                    COPY_SPEED_LIMIT,
                    True,
                    note.split(":", 1)[0],
                    amber_failed=row is not None and row.error is not None,
                )
            )
            continue
        checks.append(
            Check(
                "4",
                what,
                f"{seconds * 1e3:.1f} ms",
                bar,
                copy_s / seconds,
                COPY_SPEED_LIMIT,
                True,
                values={"amber_s": seconds, "copy_s": copy_s},
            )
        )
    return checks


def _memory_checks(memory: MemorySection | None) -> list[Check]:
    """Target 5: amber's peak extra memory encoding and decoding the employees."""
    label = "employees" if memory is None else memory.label
    if memory is None or memory.skipped:
        note = memory.skipped if memory is not None and memory.skipped else "skipped"
        return [
            Check("5", f"{direction} peak memory, {label}", "—", "—", None, MEMORY_LIMIT, note=note)
            for direction in ("encode", "decode")
        ]
    checks = []
    for direction in ("encode", "decode"):
        what = f"{direction} peak memory, {label}"
        found = memory.amber_ratio(direction)
        if found is None:
            error = memory.amber_error(direction) or "not measured"
            checks.append(
                Check(
                    "5",
                    what,
                    "n/a",
                    "—",
                    None,
                    MEMORY_LIMIT,
                    note=error.split(":", 1)[0],
                    amber_failed=True,
                )
            )
            continue
        peak, allowance, ratio = found
        checks.append(
            Check(
                "5",
                what,
                f"{peak / 1e6:.1f} MB extra",
                f"{memory.allowance_text(direction)}: {allowance / 1e6:.1f} MB",
                ratio,
                MEMORY_LIMIT,
                values={"peak_extra_bytes": peak, "allowance_bytes": allowance},
            )
        )
    return checks


def _refs_checks(refs: RefsSection | None) -> list[Check]:
    """Target 6: refs=True over refs=False on the payloads where they write the same bytes."""
    if refs is None:
        return [Check("6", "refs=True vs refs=False", "—", "—", None, REFS_LIMIT, note="skipped")]
    if refs.unavailable:
        return [
            Check(
                "6",
                "refs=True vs refs=False",
                "n/a",
                "—",
                None,
                REFS_LIMIT,
                note=refs.unavailable,
                amber_failed=True,
            )
        ]
    checks = []
    for row in refs.rows:
        if not row.qualifies:
            continue
        for direction in ("encode", "decode"):
            on = getattr(row, f"{direction}_refs_s")
            off = getattr(row, f"{direction}_norefs_s")
            checks.append(
                Check(
                    "6",
                    f"{direction} {row.payload}",
                    f"{micros(on)} µs",
                    f"refs=False: {micros(off)} µs",
                    on / off,
                    REFS_LIMIT,
                    payload=row.payload,
                    values={"refs_s": on, "norefs_s": off},
                )
            )
    if not checks:
        checks.append(
            Check("6", "refs=True vs refs=False", "—", "—", None, REFS_LIMIT, note="no payload")
        )
    return checks


class TargetsSection:
    """Every target check of the run, as one table (results.md, console, README)."""

    key = "targets"
    title = "Targets"

    def __init__(self, checks: Sequence[Check]) -> None:
        self.checks = list(checks)

    @property
    def has_chart(self) -> bool:
        """Whether ``draw_targets_chart`` has something to draw (targets 1-3)."""
        return any(check.payload and check.target in ("1", "2", "3") for check in self.checks)

    def counts(self, group: str | None = None) -> dict[str, int]:
        chosen = [c for c in self.checks if group is None or c.target == group]
        return {status: sum(c.status == status for c in chosen) for status in STATUSES}

    def headline(self) -> str:
        counts = self.counts()
        return (
            f"**{counts[MET]} of {len(self.checks)} target checks met**, "
            f"{counts[MISSED]} missed, {counts[NOT_AVAILABLE]} n/a."
        )

    def summary_table(self) -> list[str]:
        rows = []
        for group, description in GROUPS.items():
            counts = self.counts(group)
            rows.append(
                [
                    group,
                    description,
                    str(counts[MET]),
                    str(counts[MISSED]),
                    str(counts[NOT_AVAILABLE]),
                ]
            )
        return table(["#", "target", MET, MISSED, NOT_AVAILABLE], rows, left_columns=2)

    def checks_table(self) -> list[str]:
        headers = ["#", "check", "amber", "bar", "ratio", "target", "result"]
        return table(headers, [check.row() for check in self.checks], left_columns=2)

    def lines(self, chart: str | None = "targets.png") -> list[str]:
        lines = [self.headline(), "", *self.summary_table(), "", *LEGEND, ""]
        lines += self.checks_table()
        if chart and self.has_chart:
            lines += ["", f"![amber against the best peer per payload]({chart})"]
        return lines

    def as_json(self) -> Any:
        return {
            "limits": {
                "peer": PEER_LIMIT,
                "record_decode": RECORD_DECODE_LIMIT,
                "record_payloads": sorted(RECORD_PAYLOADS),
                "copy_speed": COPY_SPEED_LIMIT,
                "memory": MEMORY_LIMIT,
                "refs": REFS_LIMIT,
            },
            "counts": self.counts(),
            "checks": [{**asdict(check), "status": check.status} for check in self.checks],
        }


def build_targets(
    report: Report,
    arrays: ArraysSection | None,
    memory: MemorySection | None,
    refs: RefsSection | None,
) -> TargetsSection:
    """All target checks; sections that were skipped give n/a rows, not silence."""
    checks: list[Check] = []
    if report.results:
        peer_checks = [c for name, _ in report.payloads for c in _peer_checks(report, name)]
        for group in ("1", "2", "3"):  # grouped by target, payloads in run order
            checks += [check for check in peer_checks if check.target == group]
    else:  # --no-table
        checks += [
            Check(group, "codec table", "—", "—", None, PEER_LIMIT, note="skipped")
            for group in ("1", "2", "3")
        ]
    checks += _array_checks(arrays)
    checks += _memory_checks(memory)
    checks += _refs_checks(refs)
    return TargetsSection(checks)


# ---------------------------------------------------------------- chart


def draw_targets_chart(targets: TargetsSection, path: Path) -> bool:
    """amber over the best peer per payload, for encode, decode and size.

    Horizontal bars on a log scale, one panel per target; the dashed mark on each
    bar is that payload's target (0.8 for record decodes, 1 otherwise), green bars
    meet it, red ones miss it, hatched ones are held to a lossy peer. Returns False
    (and draws nothing) when the run had no codec table.
    """
    panels = [
        ("1", "encode time / fastest peer's"),
        ("2", "decode time / fastest peer's"),
        ("3", "size / smallest peer's"),
    ]
    by_group = {
        group: [c for c in targets.checks if c.target == group and c.payload] for group, _ in panels
    }
    payloads = [c.payload for c in by_group["1"] if c.payload is not None]
    if not targets.has_chart or not payloads:
        return False

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ratios = [c.ratio for checks in by_group.values() for c in checks if c.ratio]
    low = min([*ratios, 0.5]) / 1.5
    high = max([*ratios, 1.0]) * 3.0  # room for the labels right of the bars
    figure, axes = plt.subplots(
        1, len(panels), figsize=(16, 1.0 + 0.42 * len(payloads)), sharey=True
    )
    for axis, (group, label) in zip(axes, panels, strict=True):
        for y, check in enumerate(by_group[group]):
            if check.ratio is None:
                axis.text(low * 1.1, y, check.status, va="center", fontsize="small")
                continue
            color = "#3a923a" if check.status == MET else "#d1495b"
            axis.barh(
                y,
                check.ratio - low,
                left=low,
                height=0.7,
                color=color,
                hatch="//" if check.bar_lossy else "",
                edgecolor="black",
                linewidth=0.5,
            )
            axis.vlines(check.limit, y - 0.45, y + 0.45, colors="black", linestyles="--")
            axis.text(
                max(check.ratio, check.limit) * 1.06,
                y,
                f"{check.ratio_text} {check.bar_name or ''}",
                va="center",
                fontsize="x-small",
            )
        axis.axvline(1.0, color="grey", linewidth=0.6)
        axis.set_xscale("log")
        axis.set_xlim(low, high)
        axis.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xlabel(f"{label} (lower is better)")
        axis.set_title(f"target {group}: {label.split(' /')[0]}", fontsize="medium")
        axis.grid(axis="x", which="both", alpha=0.3)
    axes[0].set_yticks(range(len(payloads)), payloads)
    axes[0].invert_yaxis()
    figure.suptitle(
        f"{SUBJECT} against the best peer per payload (dashed: target; green met, red missed; "
        "hatched: the best peer is lossy)"
    )
    figure.tight_layout(rect=(0, 0, 1, 0.95))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
