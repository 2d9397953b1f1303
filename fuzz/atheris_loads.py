"""atheris target for the extension: any bytes give a value or amber.DecodeError.

Run through `make fuzz-python`. A crash (segfault, abort) or any other exception fails the run.
Successful decodes must also encode and decode back to the same graph.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import atheris

with atheris.instrument_imports():
    import amber
    from amber._amber import _trace
    from amber._compare import graph_diff

# The classes the spec's vectors name, so mutated class payloads reach the code that builds
# instances (the corpus is seeded from those vectors).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _notation import classes_in, load_vectors

VECTOR_CLASSES = classes_in([v["value"] for v in load_vectors("values.json")])


def test_one_input(data: bytes) -> None:
    # The last byte picks the class options: none, the vector classes, or placeholders.
    mode = data[-1] % 3 if data else 0
    options: dict[str, Any] = {}
    if mode == 1:
        options["types"] = VECTOR_CLASSES
    elif mode == 2:
        options["placeholders"] = True
    try:
        value = amber.loads(data, max_depth=64, **options)
    except amber.DecodeError as error:
        if mode == 2:
            # The trace decodes as loads(placeholders=True) does, and must fail the same way.
            traced = _trace(data, max_depth=64)[2]
            assert traced is not None and (traced.kind, traced.offset) == (
                error.kind,
                error.offset,
            ), (traced, error)
        return
    if mode == 2:
        assert _trace(data, max_depth=64)[2] is None
    again = amber.loads(amber.dumps(value), **options)
    difference = graph_diff(value, again)
    if difference is not None:
        raise AssertionError(f"round trip changed the value: {difference}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
