"""Large buffers: a 10M-element float64 numpy array and a 10M-byte ``bytes``.

For a big contiguous buffer the floor of any in-band serializer is one copy of
the buffer into the output and one copy out of it, so the bar here is not a peer
but ``bytes(memoryview(arr))``, timed on the same object: amber should run at
>= 80% of that copy's speed (copy time / amber time >= 0.8) each way.

The out-of-band mode hands every buffer of >= 1 MiB to ``buffer_callback``
instead of copying it into the payload, and ``loads(data, buffers=chunks)`` takes
them back, so neither direction needs to copy at all:

    chunks = []
    data = amber.dumps(arr, buffer_callback=chunks.append)
    amber.loads(data, buffers=chunks)

A build without that API raises TypeError (unknown keyword); the row then reads
"n/a" with the error and the run goes on. pickle protocol 5, whose
``buffer_callback``/``buffers`` amber's mode mirrors, is shown for context.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from report import MISSING, table
from timing import Budget, best_seconds_per_call

ARRAY_ELEMENTS = 10_000_000
BYTES_LENGTH = 10_000_000
# The array and bytes are fixed-size (they do not follow --scale); --quick divides them.
QUICK_DIVISOR = 10

GraphDiff = Callable[[object, object], "str | None"]
Encode = Callable[[Any], Any]
Decode = Callable[[Any], Any]


@dataclass(frozen=True)
class ArrayRow:
    """One object through one codec mode; times are the best seconds per call."""

    subject: str  # which object: the float64 array or the bytes
    mode: str  # "amber in-band", "amber out-of-band", "pickle 5 in-band", ...
    copy_s: float | None
    encode_s: float | None = None
    decode_s: float | None = None
    in_band: int | None = None  # bytes in the payload itself
    out_of_band: int | None = None  # bytes handed to buffer_callback
    exact: bool | None = None
    error: str | None = None

    def speed(self, seconds: float | None) -> float | None:
        """Copy time over this time: 1.0 runs as fast as one copy, 0.5 at half speed."""
        if seconds is None or self.copy_s is None or seconds <= 0:
            return None
        return self.copy_s / seconds


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.1f}"


def _speed(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:,.0f}x" if value >= 100 else f"{value:.2f}x"


def _error(error: BaseException, stage: str) -> str:
    message = str(error).splitlines()[0][:120] if str(error) else ""
    return f"{type(error).__name__}: {stage}: {message}"


def _out_of_band(dumps: Callable[..., bytes], loads: Callable[..., Any]) -> tuple[Encode, Decode]:
    """encode -> (payload, buffers) and back, through buffer_callback / buffers=."""

    def encode(value: object) -> tuple[bytes, list[Any]]:
        chunks: list[Any] = []
        return dumps(value, buffer_callback=chunks.append), chunks

    def decode(pair: tuple[bytes, list[Any]]) -> Any:
        data, chunks = pair
        return loads(data, buffers=chunks)

    return encode, decode


def _nbytes(chunk: Any) -> int:
    return int(memoryview(chunk).nbytes)


class ArraysSection:
    """The large-buffer measurements and their rows."""

    key = "arrays"

    def __init__(self, elements: int, length: int) -> None:
        self.elements = elements
        self.length = length
        self.title = f"Large buffers: {self.array_label} and {self.bytes_label}"
        self.rows: list[ArrayRow] = []
        self.skipped: str | None = None

    @property
    def array_label(self) -> str:
        return f"{self.elements:,} float64 array"

    @property
    def bytes_label(self) -> str:
        return f"{self.length:,}-byte bytes"

    @property
    def array_copy_s(self) -> float | None:
        found = [row.copy_s for row in self.rows if row.subject == self.array_label]
        return found[0] if found else None

    def target_row(self) -> ArrayRow | None:
        """amber in-band on the float64 array: the row target 4 is about."""
        for row in self.rows:
            if row.subject == self.array_label and row.mode == "amber in-band":
                return row
        return None

    def lines(self) -> list[str]:
        if self.skipped:
            return [f"Not measured: {self.skipped}."]
        headers = [
            "object",
            "mode",
            "encode ms",
            "decode ms",
            "encode x of copy speed",
            "decode x of copy speed",
            "in-band B",
            "out-of-band B",
            "exact",
        ]
        rows = []
        errors: dict[str, list[str]] = {}  # error -> the modes it hit
        for row in self.rows:
            if row.error is not None:
                cells = ["n/a", "n/a", "", "", "", "", ""]
                modes = errors.setdefault(row.error, [])
                if row.mode not in modes:
                    modes.append(row.mode)
            else:
                cells = [
                    _ms(row.encode_s),
                    _ms(row.decode_s),
                    _speed(row.speed(row.encode_s)),
                    _speed(row.speed(row.decode_s)),
                    MISSING if row.in_band is None else f"{row.in_band:,}",
                    MISSING if row.out_of_band is None else f"{row.out_of_band:,}",
                    "exact" if row.exact else "lossy",
                ]
            rows.append([row.subject, row.mode, *cells])
        copies = "; ".join(
            f"{subject}: {_ms(copy)} ms"
            for subject, copy in dict((row.subject, row.copy_s) for row in self.rows).items()
        )
        return [
            "Baseline: one copy of the buffer, `bytes(memoryview(obj))`, timed the same way "
            f"({copies}). `x of copy speed` is copy time / codec time: at least 0.80 is the "
            "target for amber in-band on the array; out-of-band rows pass the buffer by "
            "reference, so they can run far above 1.",
            "",
            *table(headers, rows, left_columns=2),
            *([""] if errors else []),
            *(f"- n/a, {', '.join(modes)}: {error}" for error, modes in errors.items()),
        ]

    def as_json(self) -> Any:
        return {
            "elements": self.elements,
            "bytes_length": self.length,
            "skipped": self.skipped,
            "rows": [asdict(row) for row in self.rows],
        }


def _measure_mode(
    subject: str,
    mode: str,
    value: object,
    copy_s: float,
    encode: Encode,
    decode: Decode,
    budget: Budget,
    graph_diff: GraphDiff,
) -> ArrayRow:
    """Round-trip once (size, exactness, API present?), then time both ways."""
    try:
        encoded = encode(value)
    except Exception as error:  # TypeError: a build without the out-of-band API
        return ArrayRow(subject, mode, copy_s, error=_error(error, "encode"))
    try:
        decoded = decode(encoded)
    except Exception as error:
        return ArrayRow(subject, mode, copy_s, error=_error(error, "decode"))
    if isinstance(encoded, tuple):
        data, chunks = encoded
        in_band, out_of_band = len(data), sum(_nbytes(chunk) for chunk in chunks)
    else:
        in_band, out_of_band = len(encoded), 0
    exact = graph_diff(value, decoded) is None
    del decoded
    return ArrayRow(
        subject,
        mode,
        copy_s,
        encode_s=best_seconds_per_call(encode, value, budget),
        decode_s=best_seconds_per_call(decode, encoded, budget),
        in_band=in_band,
        out_of_band=out_of_band,
        exact=exact,
    )


def measure_arrays(
    elements: int,
    length: int,
    budget: Budget,
    graph_diff: GraphDiff,
    with_pickle: bool = True,
) -> ArraysSection:
    """Time one copy, then amber (and pickle 5) in-band and out-of-band, per object."""
    section = ArraysSection(elements, length)
    try:
        import amber
        import numpy
    except ImportError as error:
        section.skipped = f"{type(error).__name__}: {error}"
        return section

    # Called through Callable[..., Any]: buffer_callback= and buffers= are newer than
    # some builds (and their stubs); such a build raises TypeError, reported as n/a.
    dumps: Callable[..., bytes] = amber.dumps
    loads: Callable[..., Any] = amber.loads
    modes: list[tuple[str, Encode, Decode]] = [
        ("amber in-band", dumps, loads),
        ("amber out-of-band", *_out_of_band(dumps, loads)),
    ]
    if with_pickle:
        pickle_dumps = functools.partial(pickle.dumps, protocol=5)
        modes += [
            ("pickle 5 in-band", pickle_dumps, pickle.loads),
            ("pickle 5 out-of-band", *_out_of_band(pickle_dumps, pickle.loads)),
        ]

    generator = numpy.random.default_rng(2024)
    objects: list[tuple[str, object]] = [
        (section.array_label, generator.random(elements)),
        (section.bytes_label, generator.bytes(length)),
    ]
    for subject, value in objects:
        copy_s = best_seconds_per_call(lambda obj: bytes(memoryview(obj)), value, budget)
        for mode, encode, decode in modes:
            section.rows.append(
                _measure_mode(subject, mode, value, copy_s, encode, decode, budget, graph_diff)
            )
    return section
