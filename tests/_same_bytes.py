"""Prints one line per payload of a fixed corpus: its name and amber.dumps' bytes in hex.

`make test-generic` runs it with the usual build and with the generic one (the fast paths
that read CPython's private layouts compiled out, as on a CPython amber does not know) and
compares the two outputs: the fallback must write the same bytes. The corpus holds the values
where a layout matters (ints at digit boundaries, strs of each kind without and with CPython's
UTF-8 copy inside them, dict tables with holes, split tables, grown tables), every value
vector, and seeded random graphs of them.

Usage: python tests/_same_bytes.py
"""

from __future__ import annotations

import ctypes
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import amber
from _notation import (
    NotationUnavailable,
    build,
    load_vectors,
    missing_requirements,
    split_options,
    vector_options,
)
from test_cpython_layouts import INT_EDGES, STRS, _dicts

OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "norefs": {"refs": False},
    "canonical": {"canonical": True, "sort_keys": True},
}


def _random_graph(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(
            [
                int(str(rng.choice(INT_EDGES))),
                "".join(["x", rng.choice(STRS)])[1:],
                rng.random(),
                None,
                True,
            ]
        )
    n = rng.randrange(0, 8)
    if roll < 0.6:
        keys = [rng.choice([*STRS, *(str(i) for i in range(20))]) for _ in range(n)]
        return {k: _random_graph(rng, depth + 1) for k in keys}
    if roll < 0.8:
        return [_random_graph(rng, depth + 1) for _ in range(n)]
    return tuple(_random_graph(rng, depth + 1) for _ in range(n))


def _make_utf8_copy(s: str) -> None:
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype = ctypes.c_void_p
    as_utf8.argtypes = [ctypes.py_object, ctypes.c_void_p]
    try:
        as_utf8(s, None)
    except UnicodeEncodeError:
        pass  # a lone surrogate has no UTF-8 form, and the str keeps no copy


def corpus() -> Iterator[tuple[str, Any]]:
    for n in INT_EDGES:
        yield f"int {n}", int(str(n))
    yield "ints", [int(str(n)) for n in INT_EDGES]
    yield "packed", [int(str(n)) for n in INT_EDGES if -(1 << 63) <= n < (1 << 63)]
    for i, s in enumerate(STRS):
        fresh = "".join(["x", s])[1:]
        yield f"str {i}", fresh
        # the same str with CPython's UTF-8 copy inside it (non-ASCII strs without
        # surrogates), which the fast build reads instead of converting the units
        _make_utf8_copy(fresh)
        yield f"str {i} with its UTF-8 copy", fresh
    for name, d in _dicts().items():
        yield f"dict {name}", d
    for v in load_vectors("values.json"):
        if missing_requirements(v):
            continue
        try:
            value = build(v["value"])
        except NotationUnavailable:
            continue
        yield f"vector {v['name']}", value
    rng = random.Random(20240601)
    for i in range(300):
        yield f"random {i}", _random_graph(rng)


def main() -> None:
    for name, value in corpus():
        for label, options in OPTIONS.items():
            try:
                out = amber.dumps(value, **options).hex()
            except Exception as e:  # the same refusal is the same answer
                out = f"{type(e).__name__}"
            print(f"{name} [{label}]\t{out}")
    # vector options (buffers, compression...) apply to the vectors only
    for v in load_vectors("values.json"):
        if missing_requirements(v):
            continue
        try:
            enc, _ = split_options(vector_options(v))
            out = amber.dumps(build(v["value"]), **enc).hex()
        except NotationUnavailable:
            continue
        except Exception as e:
            out = f"{type(e).__name__}"
        print(f"vector {v['name']} [own options]\t{out}")


if __name__ == "__main__":
    main()
