"""A small, slow reference encoder written from the design brief (spec/format.md).

It exists so that tests can assert the exact bytes amber.dumps must produce for graphs drawn at
random (the encoder's choices are fixed by the spec: shortest tag forms, FLOAT32 when exact,
packed lists of unshared numbers, TUPLE_LIST for lists of unshared tuples of one length, RECORDS
for lists of unshared dicts with the same str key objects (outside canonical mode), REF on
the second meeting of an object with the TRACKED bit set on its first tag, SUPERSEDE for the
copies of tuples met again while being written, found by a first pass).

Packing, rows and records follow the spec's exact rules (sections 5.10.1, 5.11.1 and 5.12.1): an
item is shared
when the graph holds it in more than one place, which a first walk counts. The extension proves
the same thing with CPython's reference counts, which also count holders outside the graph (a
test framework keeping generated values, a variable of the caller): it then writes such a list
unpacked, or as a LIST of tuples. Compare its bytes with these only for graphs whose objects
nothing else holds (`_strategies.fresh_copy`).

Unsupported is raised for graphs amber cannot encode (unsupported types, depth, refs=False
cycles).
"""

from __future__ import annotations

import struct
from typing import Any

from _common import varint as raw_varint

MAGIC = b"\xab\x41\x01"

NONE, FALSE, TRUE, REF, SUPERSEDE = 0x90, 0x91, 0x92, 0x93, 0x94
SHORT_STR, SHORT_LIST, SHORT_TUPLE, SHORT_DICT = 0x40, 0x58, 0x5C, 0x60
STR, STR_SURROGATES, BYTES, BYTEARRAY = 0x68, 0x69, 0x6A, 0x6B
INT, BIGINT, FLOAT64, FLOAT32, COMPLEX = 0x6C, 0x6D, 0x6E, 0x6F, 0x70
LIST, TUPLE, DICT, SET, FROZENSET = 0x71, 0x72, 0x73, 0x74, 0x75
PACKED_INT_LIST, PACKED_FLOAT_LIST, RECORDS, TUPLE_LIST = 0x78, 0x79, 0x7B, 0x7C
TRACKED = 0x80
PACKED_MIN = 4  # shorter lists are SHORT_LIST, which has no count byte to save
TUPLE_LIST_MIN = PACKED_MIN  # the same threshold for rows of tuples (spec 5.11.1)
RECORDS_MIN = 2  # one dict would take a byte more as a RECORDS (spec 5.12.1)
RECORDS_MIN_WIDTH = 2  # a row of one key may take one byte, below the default budget
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class Unsupported(Exception):
    """The reference encoder does not model this graph (or it is not encodable)."""


def varint(n: int) -> bytes:
    """A varint the spec allows (0 <= n < 2**64); `_common.varint` also writes invalid ones."""
    if n < 0 or n >= 1 << 64:
        raise ValueError(n)
    return raw_varint(n)


def zigzag(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & ((1 << 64) - 1)


def encode_int(n: int) -> bytes:
    """Bytes of an int (without REF handling)."""
    if 0 <= n <= 63:
        return bytes([n])
    if -16 <= n < 0:
        return bytes([n + 0x90])
    if -(1 << 63) <= n < (1 << 63):
        return bytes([INT]) + varint(zigzag(n))
    length = ((n if n >= 0 else ~n).bit_length() + 8) // 8
    return bytes([BIGINT]) + varint(length) + n.to_bytes(length, "little", signed=True)


def float32_exact(x: float) -> bytes | None:
    if x != x:
        return None
    try:
        b = struct.pack("<f", x)
    except OverflowError:
        return None
    if struct.pack("<d", struct.unpack("<f", b)[0]) != struct.pack("<d", x):
        return None
    return b


def encode_float(x: float) -> bytes:
    b = float32_exact(x)
    if b is not None:
        return bytes([FLOAT32]) + b
    return bytes([FLOAT64]) + struct.pack("<d", x)


def encode_str(s: str) -> bytes:
    try:
        data = s.encode("utf-8")
    except UnicodeEncodeError:
        data = s.encode("utf-8", "surrogatepass")
        return bytes([STR_SURROGATES]) + varint(len(data)) + data
    if len(data) <= 23:
        return bytes([SHORT_STR + len(data)]) + data
    return bytes([STR]) + varint(len(data)) + data


def holders(root: Any) -> dict[int, int]:
    """How many places of the graph hold each object, by id (spec 5.10.1): every slot of every
    container, each container counted once however often it occurs, plus one for the root."""
    counts: dict[int, int] = {id(root): 1}
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        t = type(obj)
        if t not in (list, tuple, dict, set, frozenset) or id(obj) in seen:
            continue
        seen.add(id(obj))
        children = [x for pair in obj.items() for x in pair] if t is dict else list(obj)
        for child in children:
            counts[id(child)] = counts.get(id(child), 0) + 1
            stack.append(child)
    return counts


def packed_form(items: list[Any], shared: Any) -> bytes | None:
    """The packed encoding of a list's items (spec 5.10.1), or None when the list is not
    packed; `shared(item)` says whether the memo could write an item as a REF."""
    n = len(items)
    if n < PACKED_MIN:
        return None
    if all(type(x) is int and I64_MIN <= x <= I64_MAX for x in items):
        if any(not -16 <= x <= 256 and shared(x) for x in items):
            return None
        return bytes([PACKED_INT_LIST]) + varint(n) + b"".join(varint(zigzag(x)) for x in items)
    if all(type(x) is float for x in items):
        exact = sum(float32_exact(x) is not None for x in items)
        if 4 * exact > n or any(shared(x) for x in items):
            return None
        return bytes([PACKED_FLOAT_LIST]) + varint(n) + struct.pack(f"<{n}d", *items)
    return None


def row_arity(items: list[Any], shared: Any) -> int | None:
    """The arity k of a list written as TUPLE_LIST (spec 5.11.1): at least 4 items, all exact
    tuples of one length k >= 1, none of them shared (`shared` as for `packed_form`); None
    when the list is not written so."""
    if len(items) < TUPLE_LIST_MIN or type(items[0]) is not tuple or not items[0]:
        return None
    k = len(items[0])
    if all(type(x) is tuple and len(x) == k and not shared(x) for x in items):
        return k
    return None


def records_width(items: list[Any], shared: Any) -> int | None:
    """The width k of a list written as RECORDS (spec 5.12.1): at least 2 items, all exact dicts
    of k >= 2 exact str keys that are the same objects, in the same order, none of the dicts
    shared (`shared` as for `packed_form`); None when the list is not written so. (Canonical
    mode never writes one: the caller checks.)"""
    if len(items) < RECORDS_MIN or type(items[0]) is not dict or len(items[0]) < RECORDS_MIN_WIDTH:
        return None
    keys = list(items[0])
    if any(type(key) is not str for key in keys):
        return None
    for item in items:
        if type(item) is not dict or len(item) != len(keys) or shared(item):
            return None
        if any(a is not b for a, b in zip(item, keys, strict=True)):
            return None
    return len(keys)


def _inline(obj: Any) -> bool:
    """Values the reference encoder never memoizes (spec section 6.4, rules 1 and 3)."""
    t = type(obj)
    if obj is None or t is bool:
        return True
    if t is int and -16 <= obj <= 256:
        return True
    return t in (str, bytes, tuple) and len(obj) == 0


# Values written by value in canonical mode (spec section 6.7): no memo, no REF.
_BY_VALUE = (int, float, complex, str, bytes, tuple, frozenset)


class _Encoder:
    def __init__(
        self,
        refs: bool,
        max_depth: int,
        copies: set[int],
        canonical: bool = False,
        sort_keys: bool = False,
    ) -> None:
        self.out = bytearray(MAGIC)
        self.refs = refs
        self.canonical = canonical
        self.sort_keys = sort_keys
        self.max_depth = max_depth
        self.memo: dict[int, int] = {}  # id -> absolute offset of the real occurrence's tag
        self.keep: list[Any] = []  # keeps ids alive
        self.stack: set[int] = set()  # containers being written (refs=False cycle check)
        self.copies = copies  # occurrence numbers (tuples/frozensets) known to be copies
        self.found_copies: set[int] = set()
        self.occurrence = 0
        self.holders: dict[int, int] = {}  # see `holders`; set by ref_dumps

    def shared(self, obj: Any) -> bool:
        """Whether the memo could write obj as a REF: it is memoized and held twice or more."""
        return self.refs and not self.canonical and self.holders.get(id(obj), 0) > 1

    def ref(self, obj: Any) -> bool:
        pos = self.memo.get(id(obj)) if self.refs else None
        if pos is None:
            return False
        self.out[pos] |= TRACKED
        self.out.append(REF)
        self.out += varint(pos - len(MAGIC))
        return True

    def remember(self, obj: Any, pos: int) -> None:
        if self.refs:
            self.memo[id(obj)] = pos
            self.keep.append(obj)

    def write(self, obj: Any, level: int) -> None:
        """Write obj; `level` is the number of nesting levels open around it."""
        t = type(obj)
        if _inline(obj):
            if obj is None:
                self.out.append(NONE)
            elif t is bool:
                self.out.append(TRUE if obj else FALSE)
            elif t is int:
                self.out += encode_int(obj)
            elif t is str:
                self.out.append(SHORT_STR)
            elif t is bytes:
                self.out += bytes([BYTES, 0])
            else:
                if level + 1 > self.max_depth:
                    raise Unsupported("depth")
                self.out.append(SHORT_TUPLE)
            return
        if self.canonical and t in _BY_VALUE:
            self.write_by_value(obj, t, level)
            return
        if self.ref(obj):
            return
        pos = len(self.out)
        if self.write_scalar(obj, t):
            pass
        elif t is bytearray:
            self.out.append(BYTEARRAY)
            self.out += varint(len(obj)) + obj
        elif t in (list, dict, set):
            self.write_container(obj, t, level)
            return
        elif t in (tuple, frozenset):
            self.write_immutable(obj, t, level)
            return
        else:
            raise Unsupported(f"unsupported type {t.__qualname__}")
        self.remember(obj, pos)

    def write_scalar(self, obj: Any, t: type) -> bool:
        """Write an int, float, complex, str or bytes; False for any other type."""
        if t is int:
            self.out += encode_int(obj)
        elif t is float:
            self.out += encode_float(obj)
        elif t is complex:
            self.out.append(COMPLEX)
            self.out += struct.pack("<dd", obj.real, obj.imag)
        elif t is str:
            self.out += encode_str(obj)
        elif t is bytes:
            self.out.append(BYTES)
            self.out += varint(len(obj)) + obj
        else:
            return False
        return True

    def write_by_value(self, obj: Any, t: type, level: int) -> None:
        if t is tuple or t is frozenset:
            if level + 1 > self.max_depth:
                raise Unsupported("depth")
            self.write_header(obj, t)
            items = self.in_order(obj) if t is frozenset else obj
            for item in items:
                self.write(item, level + 1)
        else:
            self.write_scalar(obj, t)

    def sort_key(self, obj: Any) -> bytes:
        """A value's canonical encoding on its own, body only (spec section 6.7)."""
        whole = ref_dumps(
            obj, refs=self.refs, max_depth=self.max_depth, canonical=True, sort_keys=self.sort_keys
        )
        return whole[len(MAGIC) :]

    def in_order(self, elements: Any) -> list[Any]:
        return sorted(elements, key=self.sort_key)

    def write_header(self, obj: Any, t: type) -> None:
        n = len(obj)
        if t is list:
            self.out += bytes([SHORT_LIST + n]) if n <= 3 else bytes([LIST]) + varint(n)
        elif t is tuple:
            self.out += bytes([SHORT_TUPLE + n]) if n <= 3 else bytes([TUPLE]) + varint(n)
        elif t is dict:
            self.out += bytes([SHORT_DICT + n]) if n <= 7 else bytes([DICT]) + varint(n)
        elif t is set:
            self.out += bytes([SET]) + varint(n)
        else:
            self.out += bytes([FROZENSET]) + varint(n)

    def write_children(
        self, obj: Any, t: type, level: int, rows: bool = False, records: bool = False
    ) -> None:
        """Write the children of obj at `level`; with `rows`, obj is a list of tuples whose
        items are written one row after the other (TUPLE_LIST); with `records`, a list of dicts
        whose keys are written once, then the values one row after the other (RECORDS)."""
        oid = id(obj)
        if oid in self.stack:
            if self.refs:
                raise AssertionError("re-entry with refs=True is handled by the memo")
            raise Unsupported("cycle with refs=False")
        self.stack.add(oid)
        try:
            if t is dict:
                pairs = list(obj.items())
                if self.sort_keys:
                    pairs.sort(key=lambda pair: self.sort_key(pair[0]))
                for k, v in pairs:
                    self.write(k, level)
                    self.write(v, level)
            else:
                if rows:
                    items = [item for row in obj for item in row]
                elif records:
                    items = [*obj[0], *(value for row in obj for value in row.values())]
                else:
                    items = self.in_order(obj) if self.canonical and t is set else obj
                for item in items:
                    self.write(item, level)
        finally:
            self.stack.discard(oid)

    def write_container(self, obj: Any, t: type, level: int) -> None:
        if level + 1 > self.max_depth:
            raise Unsupported("depth")
        self.remember(obj, len(self.out))
        packed = packed_form(obj, self.shared) if t is list else None
        if packed is not None:
            # Its items are held once: they are met only here, so they need no memo entry.
            self.out += packed
            return
        arity = row_arity(obj, self.shared) if t is list else None
        if arity is not None:
            # The rows are a level of their own, and are never memoized: each is met once.
            if level + 2 > self.max_depth:
                raise Unsupported("depth")
            self.out += bytes([TUPLE_LIST]) + varint(len(obj)) + varint(arity)
            self.write_children(obj, t, level + 2, rows=True)
            return
        width = records_width(obj, self.shared) if t is list and not self.canonical else None
        if width is not None:
            # As for rows: the dicts are a level of their own, never memoized.
            if level + 2 > self.max_depth:
                raise Unsupported("depth")
            self.out += bytes([RECORDS]) + varint(len(obj)) + varint(width)
            self.write_children(obj, t, level + 2, records=True)
            return
        self.write_header(obj, t)
        self.write_children(obj, t, level + 1)

    def write_immutable(self, obj: Any, t: type, level: int) -> None:
        number = self.occurrence
        self.occurrence += 1
        is_copy = number in self.copies
        if is_copy:
            level += 1
            if level > self.max_depth:
                raise Unsupported("depth")
            self.out.append(SUPERSEDE)
        if level + 1 > self.max_depth:
            raise Unsupported("depth")
        pos = len(self.out)
        self.write_header(obj, t)
        if self.refs:
            # a nested meeting is written in full: it is not in the memo yet
            self.write_children_refs(obj, t, level + 1)
        else:
            self.write_children(obj, t, level + 1)
        if self.refs and id(obj) in self.memo:
            # a nested occurrence completed first and became the real object: this is a copy
            if not is_copy:
                self.found_copies.add(number)  # pass 1: output will be discarded
            elif not self.ref(obj):
                raise AssertionError("unreachable")
            return
        if is_copy:
            raise Unsupported("occurrence numbering differs between passes")
        self.remember(obj, pos)

    def write_children_refs(self, obj: Any, t: type, level: int) -> None:
        for item in obj:
            self.write(item, level)


def ref_dumps(
    obj: Any,
    *,
    refs: bool = True,
    max_depth: int = 1000,
    canonical: bool = False,
    sort_keys: bool = False,
) -> bytes:
    """Reference encoding of obj (spec sections 4-6), or raise Unsupported."""
    counts = holders(obj) if refs and not canonical else {}
    enc = _Encoder(refs, max_depth, set(), canonical, sort_keys)
    enc.holders = counts
    enc.write(obj, 0)
    if not enc.found_copies:
        return bytes(enc.out)
    enc2 = _Encoder(refs, max_depth, enc.found_copies, canonical, sort_keys)
    enc2.holders = counts
    enc2.write(obj, 0)
    if enc2.found_copies:
        raise Unsupported("second pass found new copies")
    return bytes(enc2.out)
