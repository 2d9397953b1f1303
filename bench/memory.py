"""Peak memory of encoding and decoding 1M employees, per codec, in a child process.

Time tables hide memory: an encoder that grows its output by doubling and then
copies it into a ``bytes`` briefly holds two or three times the output. The
target is that encoding needs at most the output plus 10%, and decoding at most
the input plus the decoded objects plus 10%.

Each operation runs in its own child process (``sys.executable`` running this
file), so that neither the parent's heap nor the previous operation's freed
memory hides or inflates it. The child builds (or reads) its input, notes VmRSS,
resets the kernel's high-water mark by writing "5" to /proc/self/clear_refs,
runs the one operation, and reads VmHWM (the peak RSS since the reset) and VmRSS
again with the result still alive:

- peak extra = VmHWM - VmRSS before;
- decoded objects = VmRSS after - VmRSS before (what the result keeps).

The encode child writes its output to a temporary file; the decode child reads it
back into a ``bytes`` before taking its "before" reading, as a caller holding
the payload would.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from report import MISSING, table

MEMORY_ITEMS = 1_000_000  # fixed: does not follow --scale; --quick divides it
QUICK_DIVISOR = 10
MEMORY_CODECS = ("amber", "pickle", "msgspec", "orjson")
CHILD_TIMEOUT_S = 300
SLACK = 1.10  # the target: 10% over what the operation must hold anyway
CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


@dataclass(frozen=True)
class MemoryRow:
    """One codec's encode and decode of the employees; sizes and RSS in bytes."""

    codec: str
    output_size: int | None = None
    encode_peak_extra: int | None = None
    decode_peak_extra: int | None = None
    decoded_objects: int | None = None
    encode_error: str | None = None
    decode_error: str | None = None

    def encode_ratio(self) -> float | None:
        """Peak extra over the output size; the target is <= 1.10."""
        if self.encode_peak_extra is None or not self.output_size:
            return None
        return self.encode_peak_extra / self.output_size

    def decode_allowance(self) -> int | None:
        if self.output_size is None or self.decoded_objects is None:
            return None
        return self.output_size + self.decoded_objects

    def decode_ratio(self) -> float | None:
        """Peak extra over input size plus decoded objects; the target is <= 1.10."""
        allowance = self.decode_allowance()
        if self.decode_peak_extra is None or not allowance:
            return None
        return self.decode_peak_extra / allowance


def _mb(value: int | None) -> str:
    return MISSING if value is None else f"{value / 1e6:.1f}"


def _ratio(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}"


class MemorySection:
    """Peak-memory rows for the employees payload."""

    key = "memory"
    title = "Peak memory: employees"

    def __init__(self, items: int) -> None:
        self.items = items
        self.rows: list[MemoryRow] = []
        self.skipped: str | None = None
        self.title = f"Peak memory: {self.label}"

    @property
    def label(self) -> str:
        return f"{self.items:,} employees"

    def amber_row(self) -> MemoryRow | None:
        return next((row for row in self.rows if row.codec == "amber"), None)

    def amber_ratio(self, direction: str) -> tuple[int, int, float] | None:
        """(peak extra, allowance, ratio) for amber's encode or decode, if measured."""
        row = self.amber_row()
        if row is None:
            return None
        if direction == "encode":
            peak, allowance, ratio = row.encode_peak_extra, row.output_size, row.encode_ratio()
        else:
            peak, allowance, ratio = (
                row.decode_peak_extra,
                row.decode_allowance(),
                row.decode_ratio(),
            )
        if peak is None or allowance is None or ratio is None:
            return None
        return peak, allowance, ratio

    def amber_error(self, direction: str) -> str | None:
        row = self.amber_row()
        if row is None:
            return "amber not run"
        return row.encode_error if direction == "encode" else row.decode_error

    @staticmethod
    def allowance_text(direction: str) -> str:
        return "output size" if direction == "encode" else "input + decoded objects"

    def lines(self) -> list[str]:
        if self.skipped:
            return [f"Not measured: {self.skipped}."]
        headers = [
            "codec",
            "output MB",
            "encode peak extra MB",
            "encode ratio",
            "decoded objects MB",
            "decode peak extra MB",
            "decode ratio",
        ]
        rows = []
        for row in self.rows:
            encode = (
                [f"n/a: {row.encode_error}", "", ""]
                if row.encode_error
                else [_mb(row.output_size), _mb(row.encode_peak_extra), _ratio(row.encode_ratio())]
            )
            decode = (
                [f"n/a: {row.decode_error}", "", ""]
                if row.decode_error
                else [
                    _mb(row.decoded_objects),
                    _mb(row.decode_peak_extra),
                    _ratio(row.decode_ratio()),
                ]
            )
            rows.append([row.codec, *encode, *decode])
        return [
            f"`employees` built at {self.items:,} items (`{{'id', 'name', 'age'}}` dicts), "
            "each operation in a fresh child process. Peak extra is VmHWM after the "
            "operation minus VmRSS before it (high-water mark reset through "
            "/proc/self/clear_refs); decoded objects is the RSS the result keeps. "
            "`encode ratio` = peak extra / output size, `decode ratio` = peak extra / "
            "(input size + decoded objects); the target for amber is at most 1.10 each.",
            "",
            *table(headers, rows),
        ]

    def as_json(self) -> Any:
        return {
            "items": self.items,
            "skipped": self.skipped,
            "rows": [asdict(row) for row in self.rows],
        }


def clear_refs_problem() -> str | None:
    """Why the peak RSS cannot be reset here, or None when it can."""
    try:
        with CLEAR_REFS.open("w") as handle:
            handle.write("5")
    except OSError as error:
        return f"{CLEAR_REFS} is not writable ({type(error).__name__}: {error.strerror})"
    if "VmHWM" not in STATUS.read_text():
        return f"{STATUS} has no VmHWM"
    return None


def _run_child(operation: str, codec: str, items: int, path: Path) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its last stdout line is JSON."""
    command = [sys.executable, str(Path(__file__).resolve()), operation, codec, str(items)]
    completed = subprocess.run(
        [*command, str(path)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"child exited {completed.returncode}: {tail[:160]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def measure_memory(items: int, codecs: list[str]) -> MemorySection:
    """Encode then decode ``items`` employees with each codec, one child per operation."""
    section = MemorySection(items)
    problem = clear_refs_problem()
    if problem:
        section.skipped = problem
        return section
    with tempfile.TemporaryDirectory(prefix="amber-bench-") as scratch:
        for codec in codecs:
            path = Path(scratch) / f"{codec}.bin"
            encoded = _run_child("encode", codec, items, path)
            if "error" in encoded:
                section.rows.append(MemoryRow(codec, encode_error=encoded["error"]))
                continue
            decoded = _run_child("decode", codec, items, path)
            row = MemoryRow(
                codec,
                output_size=encoded["size"],
                encode_peak_extra=encoded["peak"] - encoded["before"],
            )
            if "error" in decoded:
                row = dataclasses.replace(row, decode_error=decoded["error"])
            else:
                row = dataclasses.replace(
                    row,
                    decode_peak_extra=decoded["peak"] - decoded["before"],
                    decoded_objects=decoded["after"] - decoded["before"],
                )
            section.rows.append(row)
            path.unlink(missing_ok=True)
    return section


# ---------------------------------------------------------------- child process


def _status_bytes() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    found = {}
    for line in STATUS.read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024  # reported in kB
    return found


def _reset_peak() -> None:
    with CLEAR_REFS.open("w") as handle:
        handle.write("5")


def child(operation: str, codec_name: str, items: int, path: Path) -> dict[str, int]:
    """Measure one operation in this (fresh) process; see the module docstring."""
    from payloads import employees
    from serializers import FACTORIES

    codec = FACTORIES[codec_name]()
    # Warm up on a tiny payload: lazy imports and one-time caches are not the
    # operation's cost.
    codec.decode(codec.encode(employees(10)()))
    if operation == "encode":
        value = employees(items)()
        before = _start()
        data = codec.encode(value)
        status = _status_bytes()
        path.write_bytes(data)
        size = len(data)
    else:
        data = path.read_bytes()
        before = _start()
        decoded = codec.decode(data)
        status = _status_bytes()  # with ``decoded`` alive: "after" includes it
        size = len(data)
        del decoded
    return {"before": before, "peak": status["VmHWM"], "after": status["VmRSS"], "size": size}


def _start() -> int:
    """Quiesce, note VmRSS and reset the peak: the operation runs right after."""
    gc.collect()
    gc.disable()  # no collection pass (and its bookkeeping) inside the measurement
    before = _status_bytes()["VmRSS"]
    _reset_peak()
    return before


if __name__ == "__main__":
    # Child mode: memory.py {encode|decode} CODEC ITEMS PATH
    _operation, _codec, _items, _path = sys.argv[1:5]
    print(json.dumps(child(_operation, _codec, int(_items), Path(_path))))
