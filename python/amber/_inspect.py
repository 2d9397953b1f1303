"""What ``amber inspect`` and ``amber stats`` show: a payload's values as the decoder walks
them (``amber._amber._trace``), one line per value, or counted by type.

The walk is the Rust decoder's, with every check it makes; this module only formats the
events it reports.
"""

from __future__ import annotations

import contextlib
import gc
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ._amber import DecodeError, _trace

__all__ = [
    "Event",
    "Stats",
    "Trace",
    "error_text",
    "inspect_lines",
    "stats",
    "stats_lines",
    "summary",
    "trace",
]

# The value type each tag stands for, for summaries and for the counts of ``stats``.
TYPE_OF_TAG = {
    "SMALL_INT": "int",
    "SMALL_NEG": "int",
    "INT": "int",
    "BIGINT": "int",
    "NONE": "None",
    "FALSE": "bool",
    "TRUE": "bool",
    "FLOAT32": "float",
    "FLOAT64": "float",
    "COMPLEX": "complex",
    "SHORT_STR": "str",
    "STR": "str",
    "STR_SURROGATES": "str",
    "BYTES": "bytes",
    "BYTEARRAY": "bytearray",
    "SHORT_LIST": "list",
    "LIST": "list",
    "PACKED_INT_LIST": "list",
    "PACKED_FLOAT_LIST": "list",
    "TUPLE_LIST": "list",
    "RECORDS": "list",
    "OBJECT_ROWS": "list",
    "SHORT_TUPLE": "tuple",
    "TUPLE": "tuple",
    "SHORT_DICT": "dict",
    "DICT": "dict",
    "SET": "set",
    "FROZENSET": "frozenset",
    "EXT": "ext",
    "OBJECT": "object",
    "REF": "ref",
    "SUPERSEDE": "supersede",
    # A float column's value in an OBJECT_ROWS: a float without a tag.
    "column": "float",
}
# The kinds of value that open a nesting level, besides EXT composites, TUPLE_LISTs and RECORDS
# (two).
_OPENS_LEVEL = frozenset({"container", "packed", "object", "supersede"})
HEADER_LEN = 3
HEX_BYTES = 8  # head bytes shown per line
TEXT_CHARS = 40  # characters of a str shown
BYTES_SHOWN = 16
ITEMS_SHOWN = 8  # first items of a packed list
BIG_INT_BITS = 256  # longer ints are shown by their size
# What each value of the OBJECT kinds with several values is (spec 5.17.3), shown before it.
_CALL_ROLES = ("state", "list items", "dict items")
VALUE_ROLES: dict[str, tuple[str, ...]] = {
    "MUTABLE_SUBCLASS": ("builtin value", "state"),
    "VALUE_SUBCLASS": ("builtin value", "state"),
    "REDUCE": ("arguments", *_CALL_ROLES),
    "NEWOBJ": ("arguments", *_CALL_ROLES),
    "REDUCE_KW": ("call", *_CALL_ROLES),
    "NEWOBJ_KW": ("call", *_CALL_ROLES),
    "EXCEPTION": ("arguments", "state", "cause", "context", "suppress context"),
}


class Event(NamedTuple):
    """One value of a payload, as ``_trace`` reports it (offsets are absolute)."""

    offset: int
    end: int | None
    depth: int
    tag: int
    name: str
    head_end: int | None
    tracked: int | None
    info: tuple[Any, ...]
    value: Any


@dataclass
class Trace:
    """A payload's trace: its first events, how many values it has, its error, and the
    decompressed body its offsets are in, for a compressed payload."""

    events: list[Event]
    values: int
    error: DecodeError | None
    body: bytes | None = None


def trace(
    data: bytes | bytearray,
    *,
    max_depth: int,
    max_alloc: int | None,
    max_events: int | None,
    key: Any = None,
) -> Trace:
    """The trace of ``data``, with its first ``max_events`` events (all for None); ``key``
    as for ``loads``, for a signed payload."""
    # A trace makes a tuple or two per value; left running, the cycle collector would walk
    # them over and over while they are made.
    with _collector_paused():
        raw, values, error, body = _trace(
            data, max_depth=max_depth, max_alloc=max_alloc, max_events=max_events, key=key
        )
        return Trace(list(map(Event._make, raw)), values, error, body)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def error_text(error: DecodeError, base: int = 0) -> str:
    """The error's sentence with its kind and offset, the offset moved by ``base``."""
    text = str(error)
    suffix = f" (at byte {error.offset}, {error.kind})"
    if text.endswith(suffix):
        text = text[: -len(suffix)]
    return f"{text} (at byte {error.offset + base}, {error.kind})"


# -- inspect ------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int_text(value: int) -> str:
    if value.bit_length() > BIG_INT_BITS:
        return f"int of {value.bit_length()} bits"
    return str(value)


def _float_text(value: float) -> str:
    if value != value:  # NaN: its bits tell NaNs apart
        (bits,) = struct.unpack(">Q", struct.pack(">d", value))
        return f"nan (bits {bits:016x})"
    return repr(value)


def _value_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        shown = repr(value[:TEXT_CHARS])
        return shown + "..." if len(value) > TEXT_CHARS else shown
    if isinstance(value, (bytes, bytearray)):
        shown = repr(bytes(value[:BYTES_SHOWN]))
        return shown + "..." if len(value) > BYTES_SHOWN else shown
    try:
        return _cut(repr(value), 60)
    except Exception:  # a value whose repr fails is still shown by its type
        return f"<{type(value).__name__}>"


def _items_text(items: list[Any]) -> str:
    """The first items of a packed list, which have no lines of their own."""
    shown = ", ".join(_value_text(item) for item in items[:ITEMS_SHOWN])
    return shown + (", ..." if len(items) > ITEMS_SHOWN else "")


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def summary(event: Event, base: int = 0) -> str:
    """What the value is, in a few words (offsets moved by ``base``)."""
    kind = event.info[0]
    complete = event.end is not None
    what = TYPE_OF_TAG.get(event.name, event.name)
    if kind == "scalar":
        text = _value_text(event.value)
    elif kind == "data":
        length = event.info[1]
        if not complete:
            text = f"{what} of {length} bytes"
        elif what == "str" and length > TEXT_CHARS:
            text = f"{_value_text(event.value)} ({length} bytes)"
        elif what == "int":
            text = _int_text(event.value)
        else:
            text = _value_text(event.value)
    elif kind == "container":
        count = event.info[1]
        unit = "pair" if what == "dict" else "item"
        text = f"{what} of {count} {unit}{'' if count == 1 else 's'}"
    elif kind == "packed":
        count = event.info[1]
        unit = "int" if event.name == "PACKED_INT_LIST" else "float"
        text = f"list of {count} {unit}{'' if count == 1 else 's'}, packed"
        if complete and count:
            text += ": " + _items_text(event.value)
    elif kind == "tuple_list":
        rows, arity = event.info[1], event.info[2]
        text = f"list of {_count(rows, 'tuple')} of {_count(arity, 'item')}, as rows"
    elif kind == "records":
        rows, width = event.info[1], event.info[2]
        text = f"list of {_count(rows, 'dict')} of {_count(width, 'key')}, as records"
    elif kind == "object_rows":
        rows, number, defines, (module, qualname, _, fields), columns = event.info[1:]
        text = f"list of {_count(rows, 'instance')} of {module}:{qualname}, as object rows"
        text += f", shape {number}"
        if defines:
            text += f" (defined here: {', '.join(fields)})"
        if columns:
            text += f"; float column{'' if len(columns) == 1 else 's'}: {', '.join(columns)}"
    elif kind == "column_float":
        text = f"{_value_text(event.value)} (float column {event.info[1]}: 8 bytes, no tag)"
    elif kind == "ext":
        code, blob = event.info[1], event.info[2]
        text = code if blob is None else f"{code}, {_count(blob, 'byte')}"
        if blob is not None and complete:
            text += f": {_value_text(event.value)}"
    elif kind == "object":
        number, defines, (module, qualname, object_kind, fields) = event.info[1:]
        text = f"{module}:{qualname} {object_kind}, shape {number}"
        if defines:
            text += " (defined here" + (f": {', '.join(fields)})" if fields else ")")
    elif kind == "ref":
        text = f"-> {event.info[1] + base} (table #{event.info[2]})"
    elif kind == "supersede":
        text = "its first value is dropped; the REF after it is the value"
    else:
        text = "(incomplete)"
    if event.tracked is not None:
        text += f"  [tracked #{event.tracked}]"
    return text


def inspect_lines(
    data: bytes | bytearray,
    result: Trace,
    *,
    base: int = 0,
    show_hex: bool = True,
) -> Iterator[str]:
    """The listing of a payload: a line for the header, one per recorded value, then how
    it ended. ``base`` is the payload's offset in the input."""
    width = max(6, len(str(len(data) + base)))
    error = result.error

    def line(offset: int, raw: bytes | bytearray, depth: int, name: str, text: str) -> str:
        column = ""
        if show_hex:
            shown = " ".join(f"{b:02x}" for b in raw[:HEX_BYTES])
            if len(raw) > HEX_BYTES:
                shown += " .."
            column = f"{shown:<{HEX_BYTES * 3 + 2}}"
        return f"{offset + base:>{width}}  {column}{'  ' * depth}{name}  {text}"

    if result.body is not None:
        # The values are in the decompressed body, which has no header of its own.
        data, base = result.body, 0
    elif error is None or error.offset >= HEADER_LEN:
        version = data[2] & 0x0F
        flags = data[2] & 0xF0
        text = f"version {version}" + (f", flags 0x{flags:02x}" if flags else "")
        yield line(0, data[:HEADER_LEN], 0, "HEADER", text)
    # [depth, arity, items met, keys, row] of each TUPLE_LIST, RECORDS or OBJECT_ROWS whose
    # rows are being listed, innermost last (keys: how many values come before the rows, the
    # keys of a RECORDS; row: what each row is). Its rows have no tags, so no events: a line
    # marks where each begins, at its first value.
    tuple_lists: list[list[Any]] = []
    # [depth, roles, values met] of each OBJECT whose values are named, innermost last.
    objects: list[list[Any]] = []
    for event in result.events:
        while objects and objects[-1][0] >= event.depth:
            objects.pop()
        role = ""
        if objects and event.depth == objects[-1][0] + 1:
            _, roles, met = objects[-1]
            role = f"{roles[met]}: " if met < len(roles) else ""
            objects[-1][2] += 1
        if event.info[0] == "object" and event.info[3] is not None:
            roles = VALUE_ROLES.get(event.info[3][2])
            if roles:
                objects.append([event.depth, roles, 0])
        while tuple_lists and tuple_lists[-1][0] >= event.depth:
            tuple_lists.pop()
        if tuple_lists and event.depth == tuple_lists[-1][0] + 2:
            depth, arity, met, keys, what = tuple_lists[-1]
            if keys and met == 0:
                yield line(event.offset, b"", depth + 1, "keys of each row", _count(keys, "key"))
            elif met >= keys and (met - keys) % arity == 0:
                row = f"row {(met - keys) // arity}"
                yield line(event.offset, b"", depth + 1, row, what)
            tuple_lists[-1][2] += 1
        kind = event.info[0]
        if kind == "tuple_list" and event.info[1]:
            arity = event.info[2]
            tuple_lists.append([event.depth, arity, 0, 0, f"tuple of {_count(arity, 'item')}"])
        if kind == "records":
            width = event.info[2]
            tuple_lists.append([event.depth, width, 0, width, f"dict of {_count(width, 'pair')}"])
        if kind == "object_rows" and event.info[1]:
            module, qualname, _, fields = event.info[4]
            what = f"{module}:{qualname} of {_count(len(fields), 'field')}"
            tuple_lists.append([event.depth, len(fields), 0, 0, what])
        head_end = event.head_end
        if head_end is None:
            # The value stopped short: show its bytes up to where the decoder stopped.
            stop = error.offset if error is not None else event.offset
            head_end = max(stop, event.offset + 1)
        raw = data[event.offset : head_end]
        yield line(event.offset, raw, event.depth, event.name, role + summary(event, base))
    hidden = result.values - len(result.events)
    if hidden > 0:
        yield f"... {hidden} more value{'' if hidden == 1 else 's'}"
    if error is not None:
        yield f"error: {error_text(error, base)}"
    else:
        yield f"end: {len(data)} bytes, {result.values} value{'' if result.values == 1 else 's'}"


# -- stats --------------------------------------------------------------------------------


@dataclass
class Count:
    """Values of one kind: how many, the bytes of their own tags, lengths and data, and
    the bytes they span with their children."""

    count: int = 0
    bytes: int = 0
    total_bytes: int = 0


@dataclass
class Stats:
    """Counts and sizes of a payload's values."""

    size: int
    values: int = 0
    max_depth: int = 0
    tracked: int = 0
    shapes: int = 0
    types: dict[str, Count] = field(default_factory=dict)
    ext: dict[str, Count] = field(default_factory=dict)
    objects: dict[str, Count] = field(default_factory=dict)
    refs: int = 0
    ref_bytes: int = 0
    saved_bytes: int = 0

    def as_json(self) -> dict[str, Any]:
        def table(counts: dict[str, Count]) -> dict[str, dict[str, int]]:
            return {name: vars(count) for name, count in counts.items()}

        return {
            "bytes": self.size,
            "header_bytes": HEADER_LEN,
            "values": self.values,
            "max_depth": self.max_depth,
            "tracked": self.tracked,
            "shapes": self.shapes,
            "types": table(self.types),
            "ext": table(self.ext),
            "objects": table(self.objects),
            "refs": {"count": self.refs, "bytes": self.ref_bytes, "saved_bytes": self.saved_bytes},
        }


def stats(size: int, events: list[Event]) -> Stats:
    """The statistics of a payload of ``size`` bytes from all of its events, which a
    successful decode completed."""
    result = Stats(size=size, values=len(events))
    # (offset, end) of each value, and its own bytes: its span less its children's spans.
    spans = [(e.offset, e.end if e.end is not None else e.offset) for e in events]
    span_at = {offset: end - offset for offset, end in spans}
    own = [end - offset for offset, end in spans]
    open_values: list[int] = []
    for i, (offset, end) in enumerate(spans):
        while open_values and spans[open_values[-1]][1] <= offset:
            open_values.pop()
        if open_values:
            own[open_values[-1]] -= end - offset
        open_values.append(i)
    # [count, own bytes, bytes with children] by type, EXT code and class.
    types: dict[str, list[int]] = {}
    codes: dict[str, list[int]] = {}
    classes: dict[str, list[int]] = {}
    for (offset, _, depth, _, name, _, tracked, info, _), own_bytes in zip(
        events, own, strict=True
    ):
        total = span_at[offset]
        kind = info[0]
        row = types.get(name)
        if row is None:
            row = types[name] = [0, 0, 0]
        row[0] += 1
        row[1] += own_bytes
        row[2] += total
        # The levels open around a value, and those it opens (section 8.1).
        levels = depth + _levels_opened(info)
        if levels > result.max_depth:
            result.max_depth = levels
        if tracked is not None:
            result.tracked += 1
        if kind == "ext":
            _add(codes, info[1], own_bytes, total)
        elif kind == "object":
            _, defines, (module, qualname, _, _) = info[1:]
            _add(classes, f"{module}:{qualname}", own_bytes, total)
            result.shapes += defines
        elif kind == "object_rows":
            # Its rows are instances of the class without events of their own.
            rows, _, defines, (module, qualname, _, _), _ = info[1:]
            counts = classes.setdefault(f"{module}:{qualname}", [0, 0, 0])
            counts[0] += rows
            counts[1] += own_bytes
            counts[2] += total
            result.shapes += defines
        elif kind == "ref":
            result.refs += 1
            result.ref_bytes += own_bytes
            # What the identity table saved: the target written again, less the REF.
            result.saved_bytes += span_at.get(info[1], 0) - own_bytes
    for name, (count, own_bytes, total) in types.items():
        merged = result.types.setdefault(TYPE_OF_TAG.get(name, name), Count())
        merged.count += count
        merged.bytes += own_bytes
        merged.total_bytes += total
    result.ext = {code: Count(*row) for code, row in codes.items()}
    result.objects = {name: Count(*row) for name, row in classes.items()}
    return result


def _levels_opened(info: tuple[Any, ...]) -> int:
    """How many nesting levels a value opens: one for a container, packed list, object,
    SUPERSEDE or EXT composite, two for a TUPLE_LIST, RECORDS or OBJECT_ROWS (the list's and
    its rows')."""
    kind = info[0]
    if kind in ("tuple_list", "records", "object_rows"):
        return 2
    return int(kind in _OPENS_LEVEL or (kind == "ext" and info[2] is None))


def _add(table: dict[str, list[int]], key: str, own_bytes: int, total: int) -> None:
    row = table.setdefault(key, [0, 0, 0])
    row[0] += 1
    row[1] += own_bytes
    row[2] += total


def stats_lines(result: Stats) -> Iterator[str]:
    """``stats`` as a table for people."""
    body = result.size - HEADER_LEN
    yield (
        f"payload: {result.size} bytes ({HEADER_LEN} header, {body} body), "
        f"{result.values} values, nesting depth {result.max_depth}"
    )

    def table(title: str, counts: dict[str, Count]) -> Iterator[str]:
        if not counts:
            return
        yield ""
        yield f"{title:<24} {'values':>9} {'bytes':>11} {'share':>7} {'with children':>14}"
        ordered = sorted(counts.items(), key=lambda item: (-item[1].bytes, item[0]))
        for name, count in ordered:
            share = 100 * count.bytes / result.size if result.size else 0.0
            yield (
                f"{_cut(name, 24):<24} {count.count:>9} {count.bytes:>11} {share:>6.1f}% "
                f"{count.total_bytes:>14}"
            )

    yield from table("type", result.types)
    yield from table("EXT code", result.ext)
    yield from table("class", result.objects)
    yield ""
    yield (
        f"refs: {result.refs} ({result.ref_bytes} bytes), saving {result.saved_bytes} bytes; "
        f"identity table: {result.tracked} entries; shapes: {result.shapes}"
    )
