"""Helpers shared by several test modules (importable because conftest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent

ERROR_KINDS = frozenset(
    {
        "bad_magic",
        "unsupported_version",
        "unsupported_feature",
        "truncated",
        "trailing_bytes",
        "unknown_tag",
        "overlong_varint",
        "varint_overflow",
        "invalid_utf8",
        "noncanonical_int",
        "length_too_large",
        "depth_limit",
        "alloc_limit",
        "hash_limit",
        "bad_reference",
        "incomplete_reference",
        "supersede_without_ref",
        "unhashable",
        "duplicate_key",
        "duplicate_element",
        "unknown_ext",
        "invalid_ext",
        "bad_shape",
        "bad_name",
        "class_not_allowed",
        "missing_field",
        "unknown_field",
        "bad_state",
        "missing_buffer",
        "buffer_mismatch",
        "signature_required",
        "key_required",
        "unknown_key",
        "bad_signature",
        "expired",
        "timestamp_in_future",
        "timestamp_required",
        "bad_envelope",
        "unknown_compression",
        "bad_compression",
        "size_mismatch",
        "decompressed_too_large",
    }
)
LIMIT_KINDS = frozenset({"depth_limit", "alloc_limit", "hash_limit", "decompressed_too_large"})
SIGNATURE_KINDS = frozenset(
    {
        "signature_required",
        "key_required",
        "unknown_key",
        "bad_signature",
        "expired",
        "timestamp_in_future",
        "timestamp_required",
    }
)

HEADER = b"\xab\x41\x01"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def smallest_budget(data: bytes, **options: Any) -> int:
    """The smallest `max_alloc` with which `data` decodes with `options` (it must decode
    with 10**8)."""
    import amber

    def fits(budget: int) -> bool:
        try:
            amber.loads(data, max_alloc=budget, **options)
        except amber.DecodeLimitError as e:
            assert e.kind == "alloc_limit"
            return False
        return True

    low, high = 1, 10**8
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle + 1, high)
    return low


def check_truncations(data: bytes, types: Any = None) -> None:
    """`data` decodes (allowing `types`), and every shorter prefix of it fails with
    `truncated` or `length_too_large` at an offset within the prefix."""
    import amber

    amber.loads(data, types=types)
    for cut in range(len(data)):
        try:
            amber.loads(data[:cut], types=types)
        except amber.DecodeError as e:
            assert e.kind in ("truncated", "length_too_large"), (cut, e)
            assert e.offset <= cut, (cut, e)
        else:
            raise AssertionError(f"the first {cut} bytes decode")


def nested_list(depth: int, leaf: Any = None) -> list[Any]:
    """A list nested `depth` deep (depth 1 = [leaf]), built without recursion."""
    x: Any = leaf
    for _ in range(depth):
        x = [x]
    return x


def run_python(code: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None):
    """Run `code` in a fresh interpreter (so that a crash or a hang fails one test, not pytest).

    Returns the CompletedProcess (text mode). The child's sys.path includes tests/.
    """
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS_DIR)] + ([full_env["PYTHONPATH"]] if full_env.get("PYTHONPATH") else [])
    )
    full_env.setdefault("PYTHONFAULTHANDLER", "1")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=str(TESTS_DIR),
    )


def run_python_json(code: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None):
    """Run code that prints one JSON document as its last stdout line; return it parsed.

    Fails (AssertionError) with the child's output if it crashed or printed no JSON.
    """
    proc = run_python(code, *args, timeout=timeout, env=env)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"child interpreter failed (exit code {proc.returncode}; negative = killed by signal)\n"
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    )
    return json.loads(lines[-1])
