"""Hostile-input driver, run in a child interpreter by test_hostile.py so a crash fails a test.

    python _fuzz.py truncations
    python _fuzz.py mutations SEED COUNT

Prints one JSON document on the last line of stdout. With AMBER_FUZZ_TRACE=1 every input is
written (hex) to stderr before it is decoded, so the input that crashed the process is the last
line of stderr.
"""

from __future__ import annotations

import json
import os
import random
import sys
import traceback
from typing import Any

import amber
from _common import ERROR_KINDS, LIMIT_KINDS
from _notation import classes_in, load_vectors, vector_bytes
from _samples import sample_objects

TRACE = os.environ.get("AMBER_FUZZ_TRACE") == "1"
HEADER = b"\xab\x41\x01"
INTERESTING = [
    0x00,
    0x01,
    0x3F,
    0x40,
    0x57,
    0x58,
    0x5B,
    0x5C,
    0x5F,
    0x60,
    0x67,
    0x68,
    0x69,
    0x6A,
    0x6B,
    0x6C,
    0x6D,
    0x6E,
    0x6F,
    0x70,
    0x71,
    0x72,
    0x73,
    0x74,
    0x75,
    0x76,
    0x77,
    0x78,
    0x79,
    0x7A,
    0x7B,
    0x7C,
    0x7D,
    0x7F,
    0x80,
    0x8F,
    0x90,
    0x91,
    0x92,
    0x93,
    0x94,
    0x95,
    0xBF,
    0xC0,
    0xD8,
    0xD9,
    0xDC,
    0xDD,
    0xE0,
    0xE8,
    0xF1,
    0xF2,
    0xF3,
    0xF4,
    0xF5,
    0xF8,
    0xF9,
    0xFC,
    0xFF,
    0xED,
    0xA0,
    0xC3,
]


def check_error(e: BaseException, data: bytes) -> str | None:
    """None if e is a well-formed DecodeError for data, else a description of the problem."""
    if not isinstance(e, amber.DecodeError):
        return f"{type(e).__module__}.{type(e).__qualname__}: {e}"
    kind = getattr(e, "kind", None)
    offset = getattr(e, "offset", None)
    if kind not in ERROR_KINDS:
        return f"DecodeError with unknown kind {kind!r}: {e}"
    if not isinstance(offset, int) or not 0 <= offset <= len(data):
        return f"DecodeError {kind} with offset {offset!r} outside 0..{len(data)}: {e}"
    if isinstance(e, amber.DecodeLimitError) != (kind in LIMIT_KINDS):
        return f"DecodeError {kind}: DecodeLimitError-ness wrong ({type(e).__name__})"
    return None


def decode_one(data: bytes, opts: dict[str, Any], graph_diff) -> tuple[str, str | None]:
    """Returns (outcome, problem): outcome is 'ok' or an error kind."""
    if TRACE:
        sys.stderr.write(data.hex() + " " + json.dumps(opts) + "\n")
        sys.stderr.flush()
    try:
        out = amber.loads(data, **opts)
    except Exception as e:  # any non-DecodeError is the finding
        problem = check_error(e, data)
        return getattr(e, "kind", "other"), problem
    # whatever decodes is a valid graph: it encodes, and that encoding decodes to the same graph
    try:
        again = amber.dumps(out)
        classes = {k: v for k, v in opts.items() if k in ("types", "placeholders")}
        diff = graph_diff(out, amber.loads(again, **classes))
    except Exception as e:
        return "ok", f"decoded value does not round-trip: {type(e).__name__}: {e}"
    if diff is not None:
        return "ok", f"decoded value does not round-trip: {diff}"
    return "ok", None


def corpus() -> list[bytes]:
    seeds = [vector_bytes(v) for v in load_vectors("values.json")]
    seeds += [vector_bytes(v) for v in load_vectors("errors.json")]
    for obj in sample_objects():
        seeds.append(amber.dumps(obj))
        try:
            seeds.append(amber.dumps(obj, refs=False))
        except amber.EncodeError:
            pass
    small = [s for s in seeds if len(s) <= 256]
    return small or [HEADER + b"\x90"]


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        op = rng.randrange(10)
        n = len(buf)
        if op == 0 and n:  # bit flip
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # random byte
            buf[rng.randrange(n)] = rng.randrange(256)
        elif op == 2 and n:  # interesting byte
            buf[rng.randrange(n)] = rng.choice(INTERESTING)
        elif op == 3:  # insertion
            i = rng.randrange(n + 1)
            k = rng.choice((1, 1, 2, 4))
            buf[i:i] = bytes(
                rng.choice(INTERESTING) if rng.random() < 0.5 else rng.randrange(256)
                for _ in range(k)
            )
        elif op == 4 and n:  # deletion
            i = rng.randrange(n)
            del buf[i : i + rng.choice((1, 1, 2, 3, 8))]
        elif op == 5:  # splice with another seed
            other = rng.choice(pool)
            i = rng.randrange(n + 1)
            j = rng.randrange(len(other) + 1)
            buf = buf[:i] + other[j:]
        elif op == 6 and n:  # duplicate a chunk
            i = rng.randrange(n)
            j = min(n, i + rng.randrange(1, 9))
            k = rng.randrange(n + 1)
            buf[k:k] = buf[i:j]
        elif op == 7:  # a long varint
            i = rng.randrange(n + 1)
            buf[i:i] = b"\xff" * rng.randrange(1, 11) + bytes([rng.choice((0, 1, 2, 0x7F))])
        elif op == 8:  # a REF to a nearby offset
            i = rng.randrange(n + 1)
            buf[i:i] = bytes([0x93, rng.randrange(max(1, min(n, 128)))])
        elif op == 9 and n > 3:  # splice in a body fragment of another seed
            other = rng.choice(pool)[3:]
            if other:
                a = rng.randrange(len(other))
                b = rng.randrange(a, len(other) + 1)
                i = rng.randrange(3, n + 1)
                buf[i:i] = other[a:b]
    if rng.random() < 0.9 and len(buf) >= 3:
        buf[:3] = HEADER  # mostly keep the header so the body gets exercised
    return bytes(buf)


def run_mutations(seed: int, count: int) -> dict[str, Any]:
    from amber._compare import graph_diff

    rng = random.Random(seed)
    pool = corpus()
    # Half of the decodes allow every class the vectors name, so that mutated class payloads
    # reach the code that builds instances; a tenth build placeholders instead.
    vector_classes = classes_in([v["value"] for v in load_vectors("values.json")])
    outcomes: dict[str, int] = {}
    failures: list[dict[str, str]] = []
    for _ in range(count):
        data = mutate(rng, rng.choice(pool), pool)
        opts: dict[str, Any] = {}
        r = rng.random()
        if r < 0.05:
            opts["max_depth"] = rng.randrange(1, 40)
        elif r < 0.10:
            opts["max_alloc"] = rng.randrange(1, 4096)
        r = rng.random()
        if r < 0.5:
            opts["types"] = vector_classes
        elif r < 0.6:
            opts["placeholders"] = True
        outcome, problem = decode_one(data, opts, graph_diff)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if problem is not None and len(failures) < 25:
            shown = {k: (len(v) if k == "types" else v) for k, v in opts.items()}
            failures.append({"input": data.hex(), "options": json.dumps(shown), "problem": problem})
    return {"count": count, "seeds": len(pool), "outcomes": outcomes, "failures": failures}


def _prefix_lengths(n: int, rng: random.Random) -> list[int]:
    if n <= 4096:
        return list(range(n))
    chosen = set(range(600)) | set(range(n - 600, n)) | {rng.randrange(n) for _ in range(400)}
    return sorted(chosen)


def run_truncations() -> dict[str, Any]:
    rng = random.Random(1)
    results: dict[str, list[str]] = {}
    for v in load_vectors("values.json"):
        full = vector_bytes(v)
        types = classes_in(v["value"])
        problems: list[str] = []
        for n in _prefix_lengths(len(full), rng):
            data = full[:n]
            if TRACE:
                sys.stderr.write(data.hex() + "\n")
                sys.stderr.flush()
            try:
                amber.loads(data, types=types)
            except Exception as e:
                problem = check_error(e, data)
                if problem is None:
                    kind = e.kind  # type: ignore[attr-defined]
                    if n < 3 and kind != "truncated":
                        problem = f"prefix of the magic: expected truncated, got {kind} ({e})"
                    elif kind not in ("truncated", "length_too_large"):
                        problem = f"expected truncated or length_too_large, got {kind} ({e})"
                if problem is not None:
                    problems.append(f"prefix {n}/{len(full)} ({data[:64].hex()}): {problem}")
            else:
                problems.append(f"prefix {n}/{len(full)} ({data[:64].hex()}) decoded without error")
            if len(problems) >= 5:
                break
        results[str(v["name"])] = problems
    return {"vectors": len(results), "results": results}


def main() -> None:
    mode = sys.argv[1]
    try:
        if mode == "truncations":
            result = run_truncations()
        elif mode == "mutations":
            result = run_mutations(int(sys.argv[2]), int(sys.argv[3]))
        else:
            raise SystemExit(f"unknown mode {mode}")
    except Exception:
        traceback.print_exc()
        raise
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
