"""atheris target for the extension: any bytes give a value or amber.DecodeError.

Run through `make fuzz-python`. A crash (segfault, abort) or any other exception fails the run.
Successful decodes must also encode and decode back to the same graph. Some inputs are decoded
with the keys of the envelope vectors, so signed (and compressed) seeds get past the signature.
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
VECTOR_KEYS = [
    amber.SigningKey(bytes.fromhex(secret), id=bytes.fromhex(key_id))
    for secret, key_id in sorted(
        {(k["secret"], k["id"]) for v in load_vectors("envelopes.json") for k in v["keys"]}
    )
]


def test_one_input(data: bytes) -> None:
    # The last byte picks the options: none, the vector classes, placeholders, or the keys
    # (with and without a maximum age). Compressed inputs need no option.
    mode = data[-1] % 5 if data else 0
    options: dict[str, Any] = {}
    if mode == 1:
        options["types"] = VECTOR_CLASSES
    elif mode == 2:
        options["placeholders"] = True
    elif mode == 3:
        options["key"] = VECTOR_KEYS
    elif mode == 4:
        options["key"] = VECTOR_KEYS
        options["max_age"] = 10**10
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
    envelope = amber.envelope_info(data)
    seal = {"key": VECTOR_KEYS} if envelope["signed"] else {}
    again = amber.loads(amber.dumps(value, compress=envelope["compression"], **seal), **options)
    difference = graph_diff(value, again)
    if difference is not None:
        raise AssertionError(f"round trip changed the value: {difference}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
