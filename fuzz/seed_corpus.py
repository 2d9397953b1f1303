"""Write the test vectors as seed files for the fuzzers.

Every target but `ext` is seeded with the payloads of the vectors (values, errors,
envelopes, streams). The `ext` target takes one EXT code byte and a blob; it is seeded with
the blobs of the value vectors' EXT values and with those found in the error vectors'
payloads.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

SPEC = Path(__file__).resolve().parent.parent / "spec"
VECTORS = SPEC / "vectors"
EXT_TAGS = (0x76, 0xF6)


def vector_payloads() -> list[bytes]:
    payloads = []
    for name in ("values.json", "errors.json", "envelopes.json", "streams.json"):
        document = json.loads((VECTORS / name).read_text())
        payloads += [bytes.fromhex("".join(v["hex"].split())) for v in document["vectors"]]
    return payloads


def blob_codes() -> dict[str, int]:
    """The EXT codes whose body is a blob, by name, from the spec's code table."""
    row = re.compile(r"^\| 0x([0-9A-F]{2}) \| ([A-Z_]+) \| blob \|", re.MULTILINE)
    text = (SPEC / "format.md").read_text()
    return {name: int(code, 16) for code, name in row.findall(text)}


def notation_blobs(value: object, codes: dict[str, int]) -> Iterator[bytes]:
    """The EXT blobs of a value in the vectors' notation, each as code byte and blob."""
    if isinstance(value, dict):
        if "blob" in value and value.get("ext") in codes:
            yield bytes([codes[value["ext"]]]) + bytes.fromhex(value["blob"])
        for item in value.values():
            yield from notation_blobs(item, codes)
    elif isinstance(value, list):
        for item in value:
            yield from notation_blobs(item, codes)


def varint(data: bytes, at: int) -> tuple[int, int] | None:
    value = shift = 0
    for i in range(at, min(at + 10, len(data))):
        value |= (data[i] & 0x7F) << shift
        shift += 7
        if data[i] < 0x80:
            return value, i + 1
    return None


def payload_blobs(payload: bytes, codes: set[int]) -> Iterator[bytes]:
    """What looks like an EXT blob anywhere in a payload (a seed need not be exact)."""
    for at, tag in enumerate(payload):
        code = payload[at + 1] if at + 1 < len(payload) else None
        if tag not in EXT_TAGS or code not in codes:
            continue
        length = varint(payload, at + 2)
        if length is not None:
            n, start = length
            yield bytes([code]) + payload[start : start + n]


def ext_seeds() -> list[bytes]:
    codes = blob_codes()
    seeds = []
    for vector in json.loads((VECTORS / "values.json").read_text())["vectors"]:
        seeds += notation_blobs(vector["value"], codes)
    for vector in json.loads((VECTORS / "errors.json").read_text())["vectors"]:
        seeds += payload_blobs(bytes.fromhex("".join(vector["hex"].split())), set(codes.values()))
    return seeds


def main(target: str) -> None:
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    seeds = ext_seeds() if out.name == "ext" else vector_payloads()
    for seed in seeds:
        (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)


if __name__ == "__main__":
    main(sys.argv[1])
