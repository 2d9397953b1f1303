"""Class patterns: how many of the corpus's patterns pickle and amber copy exactly.

Run alone (any build; nothing is timed)::

    .venv/bin/python bench/class_patterns.py [--out FILE.md]

The corpus is ``tests/_class_patterns.py``: the classes real applications keep in caches,
task queues and pipelines, by family. Each pattern's object is copied by pickle (protocol 5)
and by amber (``loads`` given the pattern's allow-list), and the copy is checked with
amber's exact comparison (types, values to the bit, sharing and cycles). The report counts
the exact copies per family and lists every pattern, with why a copy failed: the exception
raised (type and first line), or the first difference.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import amber

TESTS_DIR = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS_DIR))

from _class_patterns import FAMILIES, PATTERNS, Pattern, exact_copy, pickle_copy  # noqa: E402

OK, FAIL = "✓", "✗"
# "<function f at 0x7f...>": the address would change the report on every run
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def pickle_copy_of(p: Pattern, value: object) -> object:
    return pickle_copy(value)


def amber_copy(p: Pattern, value: object) -> object:
    return amber.loads(amber.dumps(value), types=list(p.types))


def check(p: Pattern, copy: Callable[[Pattern, object], object]) -> str | None:
    """None when ``copy`` makes an exact copy of a fresh object of ``p``, else why not."""
    value = p.build()
    try:
        result = copy(p, value)
    except Exception as error:
        # a failure of any kind is a result to report, not a reason to stop
        lines = str(error).strip().splitlines()
        return ADDRESS.sub("", f"{type(error).__name__}: {lines[0] if lines else ''}").rstrip(": ")
    problem = exact_copy(value, result)
    return None if problem is None else f"inexact: {problem}"


def cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def report(results: list[tuple[Pattern, str | None, str | None]]) -> str:
    lines = [
        "# Class patterns: exact copies by pickle and by amber",
        "",
        f"amber {amber.__version__}, Python {platform.python_version()}; "
        f"{len(results)} patterns from `tests/_class_patterns.py` "
        "(`bench/class_patterns.py`). A copy counts when it is exact: same types, values to "
        "the bit, sharing and cycles kept. amber loads with each pattern's allow-list.",
        "",
        "| family | patterns | pickle exact | amber exact |",
        "|---|---:|---:|---:|",
    ]
    for family in (*FAMILIES, None):
        rows = [r for r in results if family is None or r[0].family == family]
        pickled = sum(r[1] is None for r in rows)
        ambered = sum(r[2] is None for r in rows)
        name = "**total**" if family is None else family
        lines.append(f"| {name} | {len(rows)} | {pickled} | {ambered} |")
    lines += [
        "",
        "| pattern | family | pickle | amber | why not exact |",
        "|---|---|:---:|:---:|---|",
    ]
    for p, pickle_problem, amber_problem in results:
        reasons = [
            f"{codec}: {cell(problem)}"
            for codec, problem in (("pickle", pickle_problem), ("amber", amber_problem))
            if problem is not None
        ]
        lines.append(
            f"| {p.name} | {p.family} | {FAIL if pickle_problem else OK} | "
            f"{FAIL if amber_problem else OK} | {'<br>'.join(reasons)} |"
        )
    return "\n".join(lines) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` through a temporary file beside it: a failed run never leaves a
    half-written report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the Markdown report here")
    args = parser.parse_args(argv)
    results = [(p, check(p, pickle_copy_of), check(p, amber_copy)) for p in PATTERNS]
    text = report(results)
    sys.stdout.write(text)
    if args.out:
        write_atomically(Path(args.out), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
