"""Hypothesis strategies for amber object graphs (with sharing and cycles)."""

from __future__ import annotations

import copy
import math
import struct
from typing import Any

from hypothesis import strategies as st

CONTAINERS = (list, tuple, dict, set, frozenset)


def _nan(sign: int, quiet: int, payload: int) -> float:
    bits = (sign << 63) | (0x7FF << 52) | (quiet << 51) | payload
    if bits & ((1 << 52) - 1) == 0:
        bits |= 1
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


nan_floats = st.builds(_nan, st.integers(0, 1), st.integers(0, 1), st.integers(0, (1 << 51) - 1))
floats = st.one_of(
    st.floats(),
    nan_floats,
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, 5e-324, 1.7976931348623157e308, 0.5, 0.1]),
    st.floats(width=32),
)
ints = st.one_of(
    st.integers(-20, 70),
    st.integers(-(2**64), 2**64),
    st.integers(-(2**300), 2**300),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, -(2**64)]),
)
i64_ints = st.one_of(
    st.integers(-20, 300),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**63 - 1, -(2**63), 63, 64, -64, -65, 2**62, -(2**62) - 1]),
)
# Lists the encoder may pack (spec 5.10.1): all ints of the i64 range, all floats, or mixes in
# which a bool, a bigint or a number of the other kind keeps them a LIST.
number_lists = st.one_of(
    st.lists(i64_ints, min_size=4, max_size=12),
    st.lists(floats, min_size=4, max_size=12),
    st.lists(st.one_of(i64_ints, floats, ints, st.booleans()), min_size=4, max_size=8),
)
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = st.one_of(
    st.text(max_size=30),
    st.lists(st.one_of(st.characters(), surrogates), max_size=30).map("".join),
    st.integers(0, 40).map(lambda n: "x" * n),
)
complexes = st.builds(complex, floats, floats)

hashable_atoms = st.one_of(
    st.none(), st.booleans(), ints, floats, complexes, texts, st.binary(max_size=40)
)
atoms = st.one_of(hashable_atoms, st.binary(max_size=40).map(bytearray))

hashables = st.recursive(
    hashable_atoms,
    lambda c: st.one_of(
        st.lists(c, max_size=5).map(tuple),
        st.frozensets(c, max_size=5),
    ),
    max_leaves=12,
)


@st.composite
def tuple_lists(draw, items: st.SearchStrategy[Any] = atoms) -> list[Any]:
    """Lists of 3 to 8 tuples of one length k (1 to 4) made of `items`: the shape the encoder
    writes as TUPLE_LIST (spec 5.11.1) from 4 rows on, when none of its tuples is shared.
    Some get a misfit that keeps them LISTs: a tuple of another length (maybe empty) or an item
    that is not a tuple."""
    k = draw(st.integers(1, 4))
    rows: list[Any] = [
        tuple(draw(st.lists(items, min_size=k, max_size=k))) for _ in range(draw(st.integers(3, 8)))
    ]
    misfit = draw(st.integers(0, 5))
    if misfit == 0:
        rows.insert(draw(st.integers(0, len(rows))), tuple(draw(st.lists(items, max_size=5))))
    elif misfit == 1:
        rows.insert(draw(st.integers(0, len(rows))), draw(items))
    return rows


@st.composite
def records_lists(draw, values: st.SearchStrategy[Any] = atoms) -> list[Any]:
    """Lists of 1 to 6 dicts with the same str key objects (1 to 4 keys) in one order, with
    values from `values`: the shape the encoder writes as RECORDS (spec 5.12.1) from 2 dicts of
    2 keys on, when none of them is shared. Some get a misfit that keeps most of them LISTs: a
    dict with the keys in another order, one key fewer, equal keys that are other objects
    (unless CPython hands out the same object), or an item that is not a dict."""
    keys = draw(st.lists(st.text(max_size=6), min_size=1, max_size=4, unique=True))
    rows: list[Any] = [{key: draw(values) for key in keys} for _ in range(draw(st.integers(1, 6)))]
    misfit = draw(st.integers(0, 7))
    at = draw(st.integers(0, len(rows)))
    if misfit == 0:
        rows.insert(at, {key: draw(values) for key in reversed(keys)})
    elif misfit == 1:
        rows.insert(at, {key: draw(values) for key in keys[1:]})
    elif misfit == 2:
        rows.insert(at, {"".join(list(key)) + "": draw(values) for key in keys})
    elif misfit == 3:
        rows.insert(at, draw(values))
    return rows


trees = st.recursive(
    atoms,
    lambda c: st.one_of(
        st.lists(c, max_size=6),
        number_lists,
        tuple_lists(c),
        tuple_lists(),
        records_lists(c),
        records_lists(),
        st.lists(c, max_size=6).map(tuple),
        st.dictionaries(hashables, c, max_size=6),
        st.sets(hashables, max_size=6),
        st.frozensets(hashables, max_size=6),
    ),
    max_leaves=30,
)


def is_hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def reachable(root: Any) -> list[Any]:
    """Every object reachable from root (each once, by identity), root first."""
    seen: set[int] = set()
    out: list[Any] = []
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        t = type(obj)
        if t is dict:
            for k, v in obj.items():
                stack.append(k)
                stack.append(v)
        elif t in CONTAINERS:
            stack.extend(obj)
    return out


def fresh_copy(x: Any) -> Any:
    """x rebuilt from its reference encoding: the same graph (sharing and cycles included)
    made of new objects that only the graph holds.

    The extension finds the items it may pack by their reference counts, which also count
    holders outside the graph (hypothesis keeps the values it draws, and shares constants such
    as those of `sampled_from`); such a list is written unpacked, where the reference encoder,
    which counts holders in the graph, packs it. Byte-exact comparisons with `_ref` use a
    fresh copy, on which the two must agree."""
    import amber
    from _ref import ref_dumps

    return amber.loads(ref_dumps(x))


def checked_fresh_copy(x: Any) -> Any:
    """The fresh copy of x (see `fresh_copy`), after checking that x comes back exactly from
    its payload, that the copy equals x, and that the extension writes the copy with the
    reference encoder's bytes."""
    import amber
    from _ref import ref_dumps
    from amber._compare import graph_diff

    assert graph_diff(x, amber.loads(amber.dumps(x))) is None
    y = fresh_copy(x)
    assert graph_diff(x, y) is None
    assert amber.dumps(y).hex(" ") == ref_dumps(y).hex(" ")
    return y


def set_order_may_change(x: Any) -> bool:
    """Sets of 2+ elements: a rebuilt set may iterate in another order (hash collisions), so
    re-encoding a decoded graph may legitimately order its elements differently."""
    return any(type(o) in (set, frozenset) and len(o) > 1 for o in reachable(x))


def is_cyclic(root: Any) -> bool:
    """True if some container reaches itself."""
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    stack: list[tuple[Any, Any]] = [(root, None)]
    while stack:
        obj, it = stack[-1]
        if it is None:
            if type(obj) not in CONTAINERS:
                stack.pop()
                continue
            st_ = state.get(id(obj))
            if st_ == 2:
                stack.pop()
                continue
            if st_ == 1:
                return True
            state[id(obj)] = 1
            children = [x for kv in obj.items() for x in kv] if type(obj) is dict else list(obj)
            it = iter(children)
            stack[-1] = (obj, it)
        child = next(it, _END)
        if child is _END:
            state[id(obj)] = 2
            stack.pop()
            continue
        if type(child) in CONTAINERS:
            if state.get(id(child)) == 1:
                return True
            if state.get(id(child)) != 2:
                stack.append((child, None))
    return False


_END = object()


@st.composite
def graphs(draw, base=trees, max_ops: int = 8) -> Any:
    """A tree from `base`, then random edits that share objects and create cycles.

    The edits work on copies of what is drawn: hypothesis may hand the same object to a later
    test case (a constant of a strategy), and an edit made to it then would change what that
    case draws (FlakyStrategyDefinition)."""
    root = copy.deepcopy(draw(base))
    if type(root) not in (list, dict) and draw(st.booleans()):
        root = [root]
    nodes = reachable(root)
    n_ops = draw(st.integers(0, max_ops))
    for _ in range(n_ops):
        mutables = [o for o in nodes if type(o) in (list, dict, set)]
        if not mutables:
            break
        target = draw(st.sampled_from(mutables))
        op = draw(st.sampled_from(["share", "share", "self", "tuple_cycle", "new"]))
        if op == "self" and type(target) is not set:
            obj: Any = target
        elif op == "tuple_cycle" and type(target) is list:
            extra = draw(st.lists(st.sampled_from(nodes), max_size=2))
            obj = tuple([target, *extra])
            nodes.append(obj)
        elif op == "new":
            obj = copy.deepcopy(draw(trees))
            nodes.extend(reachable(obj))
        else:
            obj = draw(st.sampled_from(nodes))
        t = type(target)
        if t is list:
            target.insert(draw(st.integers(0, len(target))), obj)
        elif t is dict:
            keys = [o for o in nodes if is_hashable(o)]
            key = draw(st.sampled_from(keys)) if keys and draw(st.booleans()) else draw(hashables)
            target[key] = obj
            nodes.append(key)
        elif is_hashable(obj):
            target.add(obj)
    return root


@st.composite
def cyclic_graphs(draw) -> Any:
    """A graph that certainly has a cycle (possibly through a tuple)."""
    root = draw(graphs())
    if type(root) not in (list, dict):
        root = [root]
    nodes = reachable(root)
    mutables = [o for o in nodes if type(o) in (list, dict)]
    target = draw(st.sampled_from(mutables))
    ancestors = [
        o
        for o in nodes
        if type(o) in CONTAINERS and o is not target and any(p is target for p in reachable(o))
    ]
    choice = draw(st.sampled_from(["self", "root", "tuple", "ancestor"]))
    if choice == "self":
        obj: Any = target
    elif choice == "root":
        obj = root
    elif choice == "tuple":
        obj = (target, draw(st.sampled_from(nodes)))
    else:
        obj = draw(st.sampled_from(ancestors)) if ancestors else (target,)
    if type(target) is list:
        target.append(obj)
    else:
        target[draw(hashables)] = obj
    return root
