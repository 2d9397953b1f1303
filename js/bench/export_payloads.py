"""Writes the seed payloads of bench/payloads.py as amber files for the Node benchmark.

Each payload is written by the Python implementation (amber.dumps), so the JS benchmark
times the bytes Python services put in caches and queues. The class payloads are written
as their OBJECT shapes; the JS side decodes them as placeholders.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import amber  # noqa: E402
from payloads import all_payloads  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = []
    for p in all_payloads(args.scale):
        data = amber.dumps(p.build())
        (args.out / f"{p.name}.amber").write_bytes(data)
        index.append({"name": p.name, "origin": p.origin, "description": p.description})
    (args.out / "index.json").write_text(json.dumps(index, indent=1))


if __name__ == "__main__":
    main()
