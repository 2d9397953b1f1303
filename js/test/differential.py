"""The Python side of the JS differential test (js/test/differential.test.ts).

gen N SEED: N random graphs from tests/_strategies.py (sharing and cycles included), as
canonical payloads, one JSON object on stdout. Graphs holding a str in which a high
surrogate is followed by a low one are left out and counted: a JS string cannot keep such a
pair apart from the character it encodes (the skip list of js/README.md).

roundtrip: reads {"payloads": [[hex, sort_keys], ...]} on stdin, loads each and writes it
again canonically; prints the hex results.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import amber  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _strategies import graphs, reachable  # noqa: E402

PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def has_surrogate_pair(root: object) -> bool:
    for obj in reachable(root):
        if isinstance(obj, str) and PAIR.search(obj):
            return True
        if isinstance(obj, dict):
            if any(isinstance(k, str) and PAIR.search(k) for k in obj):
                return True
    return False


def gen(n: int, seed_value: int) -> None:
    payloads: list[tuple[str, bool]] = []
    left_out = 0

    @seed(seed_value)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(graphs(), st.booleans())
    def collect(value: object, sort_keys: bool) -> None:
        nonlocal left_out
        if has_surrogate_pair(value):
            left_out += 1
            return
        payloads.append((amber.dumps(value, canonical=True, sort_keys=sort_keys).hex(), sort_keys))

    collect()
    json.dump({"payloads": payloads, "left_out_surrogate_pairs": left_out}, sys.stdout)


def roundtrip() -> None:
    request = json.load(sys.stdin)
    out = [
        amber.dumps(amber.loads(bytes.fromhex(h)), canonical=True, sort_keys=s).hex()
        for h, s in request["payloads"]
    ]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(int(sys.argv[2]), int(sys.argv[3]))
    else:
        roundtrip()
