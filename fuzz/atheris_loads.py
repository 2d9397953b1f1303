"""atheris target for the extension: any bytes give a value or amber.DecodeError.

Run through `make fuzz-python`. A crash (segfault, abort) or any other exception fails the run.
Successful decodes must also encode and decode back to the same graph.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import amber
    from amber._compare import graph_diff


def test_one_input(data: bytes) -> None:
    try:
        value = amber.loads(data, max_depth=64)
    except amber.DecodeError:
        return
    again = amber.loads(amber.dumps(value))
    difference = graph_diff(value, again)
    if difference is not None:
        raise AssertionError(f"round trip changed the value: {difference}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
