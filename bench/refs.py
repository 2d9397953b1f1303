"""What reference tracking costs: amber with refs=True (the default) vs refs=False.

With refs=True amber remembers every container and string it writes so that a
second sight of the same object becomes a back-reference; refs=False skips that
bookkeeping and writes every occurrence out in full. On a graph with no sharing
both write the same bytes, so any time difference is pure bookkeeping cost: the
target is that refs=True costs at most 15% over refs=False there (each of encode
and decode).

"No sharing" is decided by amber itself: a payload qualifies when
``dumps(x) == dumps(x, refs=False)`` byte for byte. Payloads where the outputs
differ (shared dict keys, repeated strings or ints) are measured too, for
context, but are not held to the target: there refs=True does real work and
usually writes far less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from report import MISSING, micros, table
from serializers import Codec
from timing import Budget, best_seconds_per_call

GraphDiff = Callable[[object, object], "str | None"]
Encode = Callable[[Any], bytes]
# The two sides are timed in alternation, this many rounds of half the budget each,
# and each side keeps its best: a slow spell on a busy machine then hits both
# sides, instead of skewing a ratio whose target (1.15) is within such noise.
ROUNDS = 3


def paired_best(
    first: tuple[Callable[[Any], object], object],
    second: tuple[Callable[[Any], object], object],
    budget: Budget,
) -> tuple[float, float]:
    """Best seconds per call of two (function, argument) pairs, timed in turns."""
    share = Budget(budget.seconds / 2, budget.max_repeats, budget.min_repeats)
    best_first = best_second = float("inf")
    for _ in range(ROUNDS):
        best_first = min(best_first, best_seconds_per_call(*first, share))
        best_second = min(best_second, best_seconds_per_call(*second, share))
    return best_first, best_second


@dataclass(frozen=True)
class RefsRow:
    """One payload encoded with refs on and off; times are best seconds per call."""

    payload: str
    same_output: bool | None = None
    size_refs: int | None = None
    size_norefs: int | None = None
    encode_refs_s: float | None = None
    encode_norefs_s: float | None = None
    decode_refs_s: float | None = None
    decode_norefs_s: float | None = None
    norefs_diff: str | None = None  # how refs=False's round trip differs, if it does
    error: str | None = None

    @property
    def qualifies(self) -> bool:
        """No sharing (identical bytes), so the target applies."""
        return self.error is None and self.same_output is True


def _ratio(on: float | None, off: float | None) -> str:
    return MISSING if on is None or not off else f"{on / off:.2f}"


def make_encoders() -> tuple[Encode, Encode, str]:
    """refs=True and refs=False encoders, and how they are called.

    ``amber.Encoder(refs=...)`` when the build has it, so both sides pay the same
    call overhead; else ``dumps(obj, refs=...)``. Raises when the build has neither.
    """
    import amber

    encoder_class: Any = getattr(amber, "Encoder", None)
    if encoder_class is not None:
        try:
            on, off = encoder_class(refs=True), encoder_class(refs=False)
            return on.encode, off.encode, "Encoder(refs=True/False).encode"
        except TypeError:
            pass
    dumps: Callable[..., bytes] = amber.dumps
    dumps(None, refs=False)  # TypeError here: this build has no refs option

    def with_refs(value: object) -> bytes:
        return dumps(value, refs=True)

    def without_refs(value: object) -> bytes:
        return dumps(value, refs=False)

    return with_refs, without_refs, "dumps(obj, refs=True/False)"


class RefsSection:
    """refs=True vs refs=False rows, one per payload."""

    key = "refs"
    title = "refs=True vs refs=False"

    def __init__(self) -> None:
        self.rows: list[RefsRow] = []
        self.unavailable: str | None = None
        self.how = ""
        self._encoders: tuple[Encode, Encode] | None = None
        try:
            on, off, self.how = make_encoders()
            self._encoders = (on, off)
        except Exception as error:  # an amber without refs=False: n/a, not a crash
            self.unavailable = f"{type(error).__name__}: {error}"

    def measure(
        self, payload: str, value: object, amber: Codec, budget: Budget, graph_diff: GraphDiff
    ) -> None:
        """Encode ``value`` both ways; time both encodes and both decodes, in turn."""
        if self._encoders is None:
            return
        on, off = self._encoders
        try:
            with_refs, without_refs = on(value), off(value)
            decoded = amber.decode(without_refs)
        except Exception as error:
            message = str(error).splitlines()[0][:120] if str(error) else ""
            self.rows.append(RefsRow(payload, error=f"{type(error).__name__}: {message}"))
            return
        diff = graph_diff(value, decoded)
        del decoded
        encode_on, encode_off = paired_best((on, value), (off, value), budget)
        decode = amber.decode
        decode_on, decode_off = paired_best((decode, with_refs), (decode, without_refs), budget)
        self.rows.append(
            RefsRow(
                payload,
                same_output=with_refs == without_refs,
                size_refs=len(with_refs),
                size_norefs=len(without_refs),
                encode_refs_s=encode_on,
                encode_norefs_s=encode_off,
                decode_refs_s=decode_on,
                decode_norefs_s=decode_off,
                norefs_diff=diff,
            )
        )

    def lines(self) -> list[str]:
        if self.unavailable:
            return [f"Not measured: {self.unavailable}."]
        headers = [
            "payload",
            "sharing",
            "size refs=True B",
            "size refs=False B",
            "encode µs on / off",
            "encode ratio",
            "decode µs on / off",
            "decode ratio",
        ]
        rows = []
        for row in self.rows:
            if row.error is not None:
                rows.append([row.payload, f"n/a: {row.error}", *[""] * 6])
                continue
            if row.qualifies:
                sharing = "none (target)"
            else:
                sharing = "output differs" + ("" if row.norefs_diff is None else ", lossy off")
            rows.append(
                [
                    row.payload,
                    sharing,
                    MISSING if row.size_refs is None else f"{row.size_refs:,}",
                    MISSING if row.size_norefs is None else f"{row.size_norefs:,}",
                    f"{micros(row.encode_refs_s)} / {micros(row.encode_norefs_s)}",
                    _ratio(row.encode_refs_s, row.encode_norefs_s),
                    f"{micros(row.decode_refs_s)} / {micros(row.decode_norefs_s)}",
                    _ratio(row.decode_refs_s, row.decode_norefs_s),
                ]
            )
        return [
            f"amber called as `{self.how}`, decoded with the payload's `loads`. Ratios are "
            "refs=True time / refs=False time; the target (at most 1.15) applies to the "
            "payloads with no sharing, where both write identical bytes. `output differs`: "
            "refs=True wrote back-references (shared keys, strings, ints), shown for context; "
            "`lossy off`: refs=False loses identity the graph has.",
            "",
            *table(headers, rows, left_columns=2),
        ]

    def as_json(self) -> Any:
        return {
            "how": self.how,
            "unavailable": self.unavailable,
            "rows": [{**asdict(row), "qualifies": row.qualifies} for row in self.rows],
        }
