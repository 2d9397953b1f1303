"""Write every test vector (values, errors, envelopes, streams) as a seed file for the fuzzers."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"


def vector_payloads() -> list[bytes]:
    payloads = []
    for name in ("values.json", "errors.json", "envelopes.json", "streams.json"):
        document = json.loads((VECTORS / name).read_text())
        payloads += [bytes.fromhex("".join(v["hex"].split())) for v in document["vectors"]]
    return payloads


def main(target: str) -> None:
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    for payload in vector_payloads():
        (out / hashlib.sha1(payload).hexdigest()).write_bytes(payload)


if __name__ == "__main__":
    main(sys.argv[1])
