"""amber against the fastest peer on each CPython: ratios from several `bench/run.py` runs.

Usage: python bench/pythons.py RESULTS.json [RESULTS.json ...] > bench/results/pythons.md

Each file is the results.json of one run on one interpreter (`make bench-pythons` makes them).
A cell is the fastest peer's time over amber's (above 1: amber ahead), the peers being the
codecs of that run other than amber, exact or not; size is amber's over the smallest peer's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def ratios(results: list[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per payload: (encode, decode, size) of amber against the best peer."""
    by_payload: dict[str, dict[str, dict[str, Any]]] = {}
    for row in results:
        if row.get("error") or row.get("variant"):
            continue
        by_payload.setdefault(row["payload"], {})[row["codec"]] = row
    out = {}
    for payload, codecs in by_payload.items():
        amber = codecs.get("amber")
        peers = [row for name, row in codecs.items() if name != "amber"]
        if amber is None or not peers:
            continue
        out[payload] = (
            min(p["encode_s"] for p in peers) / amber["encode_s"],
            min(p["decode_s"] for p in peers) / amber["decode_s"],
            amber["size"] / min(p["size"] for p in peers),
        )
    return out


def main(paths: list[str]) -> None:
    runs = []
    for path in paths:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        version = document["machine"]["Python"].replace("CPython ", "")
        peers = [c["name"] for c in document["codecs"] if c["name"] != "amber"]
        runs.append((version, ratios(document["results"]), peers, document))
    if not runs:
        sys.exit("no results given")
    runs.sort(key=lambda run: tuple(int(p) for p in run[0].split(".")))
    first = runs[0][3]
    print("# amber on each CPython: ratios to the fastest peer\n")
    print(
        "Written by `make bench-pythons` (`bench/pythons.py`): one `bench/run.py` run per "
        "interpreter, each on a release build of its own, one after the other on the same "
        "machine. A cell is the fastest peer's time over amber's (above 1: amber ahead); "
        "size is amber's over the smallest peer's (below 1: amber smaller). Compare "
        "versions by their ratios, not by raw times: the peers change with the interpreter "
        "too.\n"
    )
    print(f"- CPU: {first['machine']['CPU']}")
    print(f"- OS: {first['machine']['OS']}")
    print(f"- peers: {', '.join(runs[0][2])}")
    print(f"- source: {first['settings'].get('source', '?')}\n")
    versions = [version for version, *_ in runs]
    payloads = list(runs[0][1])
    for title, index in (("encode", 0), ("decode", 1), ("size", 2)):
        print(f"## {title}\n")
        print("| payload | " + " | ".join(versions) + " |")
        print("|:--|" + "--:|" * len(versions))
        for payload in payloads:
            cells = []
            for _, table, *_ in runs:
                cells.append(f"{table[payload][index]:.2f}" if payload in table else "n/a")
            print(f"| {payload} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
