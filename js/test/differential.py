"""The Python side of the JS differential test (js/test/differential.test.ts).

gen N SEED: N random graphs from tests/_strategies.py (sharing and cycles included), and a
third as many lists of the forms of spec 14's 2026-11-25 entry (namespaces, the singletons,
builtin exceptions with causes, builtin types, and the class instances of
tests/_rich_strategies.py, subclasses of builtins and __reduce__ classes among them), as
canonical payloads, one JSON object on stdout. Graphs holding a str in which a high
surrogate is followed by a low one are left out and counted: a JS string cannot keep such a
pair apart from the character it encodes (the skip list of js/README.md).

roundtrip: reads {"payloads": [[hex, sort_keys], ...]} on stdin, loads each and writes it
again canonically; prints the hex results.

envelopes: reads {"sealed": [[hex, secret hex or null], ...], "plain": [[hex, secret hex or
null], ...]} on stdin. Each sealed payload (made by JS) is opened with the secret and written
again canonically, with what envelope_info says of it; each plain payload is loaded and
sealed again with compress="zstd" (signed with the secret), for JS to open.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import amber  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _rich_strategies import class_instances  # noqa: E402
from _strategies import graphs, reachable  # noqa: E402

PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
# The same pair as written (a high then a low surrogate, each as three bytes), wherever a
# value holds it (inside class instances too); in other data it only leaves a graph out.
PAIR_BYTES = re.compile(rb"\xed[\xa0-\xaf][\x80-\xbf]\xed[\xb0-\xbf][\x80-\xbf]")


def has_surrogate_pair(root: object) -> bool:
    for obj in reachable(root):
        if isinstance(obj, str) and PAIR.search(obj):
            return True
        if isinstance(obj, dict):
            if any(isinstance(k, str) and PAIR.search(k) for k in obj):
                return True
    return False


_children = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=6),
    st.lists(st.integers(), max_size=3), st.tuples(st.text(max_size=3)),
)


def _exception(args: list[Any], cause: bool, note: str | None) -> BaseException:
    e = ValueError(*args)
    if cause:
        e.__cause__ = KeyError("k")
    if note is not None:
        e.add_note(note)
    return e


_new_forms = st.lists(
    st.one_of(
        st.dictionaries(st.text(max_size=4), _children, max_size=3).map(lambda d: types.SimpleNamespace(**d)),
        st.sampled_from([..., NotImplemented, int, str, type, OSError]),
        st.builds(_exception, st.lists(_children, max_size=2), st.booleans(), st.none() | st.text(max_size=4)),
        class_instances(_children),
    ),
    min_size=1, max_size=4,
)


def gen(n: int, seed_value: int) -> None:
    payloads: list[tuple[str, bool]] = []
    left_out = 0

    def add(value: object, sort_keys: bool) -> None:
        nonlocal left_out
        payload = amber.dumps(value, canonical=True, sort_keys=sort_keys)
        if has_surrogate_pair(value) or PAIR_BYTES.search(payload):
            left_out += 1
            return
        payloads.append((payload.hex(), sort_keys))

    for strategy, count in ((graphs(), n), (_new_forms, max(1, n // 3))):

        @seed(seed_value)
        @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategy, st.booleans())
        def collect(value: object, sort_keys: bool) -> None:
            add(value, sort_keys)

        collect()
    json.dump({"payloads": payloads, "left_out_surrogate_pairs": left_out}, sys.stdout)


def roundtrip() -> None:
    request = json.load(sys.stdin)
    out = [
        amber.dumps(amber.loads(bytes.fromhex(h)), canonical=True, sort_keys=s).hex()
        for h, s in request["payloads"]
    ]
    json.dump(out, sys.stdout)


def envelopes() -> None:
    request = json.load(sys.stdin)
    opened = []
    for h, secret in request["sealed"]:
        data = bytes.fromhex(h)
        key = None if secret is None else bytes.fromhex(secret)
        info = amber.envelope_info(data)
        value = amber.loads(data, key=key)
        opened.append([amber.dumps(value, canonical=True).hex(), info["compression"], info["size"]])
    sealed = []
    for h, secret in request["plain"]:
        key = None if secret is None else bytes.fromhex(secret)
        sealed.append(amber.dumps(amber.loads(bytes.fromhex(h)), compress="zstd", key=key).hex())
    json.dump({"opened": opened, "sealed": sealed}, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "envelopes":
        envelopes()
    else:
        roundtrip()
