"""Benchmark payloads, taken from the seed projects' own benchmarks.

Every payload is built on demand from a fixed seed, so two runs (and two machines)
time the same objects. ``scale`` multiplies the large payloads; scale 10 gives the
seeds' original sizes (1M employees, 1M-element lists).
"""

from __future__ import annotations

import random
import string
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from classes import Employee, Point, QueueJob

SEED = 2024
# The seeds' sizes for these two; they do not grow with --scale.
KEYWORD_COUNT = 100_000
KEYWORD_POOL = 25_000
ALPHA_COUNT = 100_000


@dataclass(frozen=True)
class Payload:
    """A named payload; ``build`` makes a fresh copy of the object graph.

    ``types`` lists the classes whose instances the payload holds, for codecs that
    must be told them to decode (amber's ``loads(types=...)``) or that register them
    (pyfory). ``schema`` is the payload's whole static type, e.g. ``list[QueueJob]``,
    for schema-driven decoders (msgspec); None when no such type exists.
    """

    name: str
    origin: str
    description: str
    build: Callable[[], object]
    types: tuple[type, ...] = ()
    schema: object = None


def _rng(name: str) -> random.Random:
    # One generator per payload, so selecting a subset does not change the others.
    return random.Random(SEED ^ zlib.crc32(name.encode()))


def _scaled(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def quickle_small() -> object:
    return {
        "fruit": ["apple", "banana", "cherry", "durian"],
        "vegetables": ["asparagus", "broccoli", "cabbage"],
        "numbers": [1, 2, 3, 4, 5],
    }


def quickle_strings() -> object:
    rng = _rng("quickle_strings")
    return ["".join(rng.choices(string.ascii_letters, k=15)) for _ in range(100)]


def sereal_mixed() -> object:
    return {
        "array": list(range(1, 1001)),
        "hash": {str(n): n * 2 for n in range(1, 101)},
        "nested": {letter: [letter * 5] for letter in string.ascii_lowercase},
    }


def job_hash() -> object:
    return {
        "priority": 2,
        "clientref": "A huge long string " + "a" * 67,
        "jobid": "366107",
        "name": "XXXXXXXXXX",
        "args": {
            "yyyyy": {},
            "user_id": "1000",
            "zzzzzzz": {"3146": {"aaaaa": "5.04", "bbbbbb": "2"}},
            "account_id": "4",
        },
        "type": "aaaaaaa",
        "sessionid": "758477502DC65F69E040007F01000850",
        "jobflags": 0,
    }


def packed_1k() -> object:
    return list(range(1000))


def rowset_1000() -> object:
    rng = _rng("rowset_1000")
    tag_pool = ["admin", "beta", "billing", "ops", "sales", "support", "trial", "vip"]
    rows = []
    for row_id in range(1, 1001):
        first = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 9)))
        rows.append(
            {
                "id": row_id,
                "name": f"{first.title()} {rng.choice(string.ascii_uppercase)}.",
                "email": f"{first}{row_id}@example.com",
                "created_at": (
                    f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                    f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                    f"{rng.randint(0, 59):02d}Z"
                ),
                "score": round(rng.uniform(0, 100), 2),
                "active": rng.random() < 0.8,
                "tags": rng.sample(tag_pool, rng.randint(0, 3)),
                "manager_id": rng.randint(1, row_id) if rng.random() < 0.7 else None,
            }
        )
    return rows


JOB_CLASSES = (
    "App\\Jobs\\SendInvoice",
    "App\\Jobs\\SendWelcomeEmail",
    "App\\Jobs\\ProcessPodcast",
    "App\\Jobs\\GenerateReport",
    "App\\Jobs\\SyncInventory",
)


def dto_1000() -> object:
    """phpser's DTO payload: 1000 queue jobs as dataclass instances."""
    rng = _rng("dto_1000")
    jobs = []
    for _ in range(1000):
        display_name = rng.choice(JOB_CLASSES)
        user = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10)))
        jobs.append(
            QueueJob(
                uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                display_name=display_name,
                job="Illuminate\\Queue\\CallQueuedHandler@call",
                max_tries=3,
                timeout=rng.choice((60, 120)),
                backoff=[10, 30, 60],
                flag=rng.random() < 0.5,
                data={
                    "commandName": display_name,
                    "invoiceId": rng.randint(1, 10_000_000),
                    "customerEmail": f"{user}@example.com",
                },
            )
        )
    return jobs


def employees(count: int) -> Callable[[], object]:
    def build() -> object:
        return [{"id": i, "name": f"Employee_{i}", "age": 20 + i % 45} for i in range(count)]

    return build


def employee_objects(count: int) -> Callable[[], object]:
    def build() -> object:
        return [Employee(i, f"Employee_{i}", 20 + i % 45) for i in range(count)]

    return build


def structs_tuples(count: int) -> Callable[[], object]:
    def build() -> object:
        rng = _rng("structs_tuples")
        return [(rng.random(), f"struct-{i}") for i in range(count)]

    return build


def structs_dataclass(count: int) -> Callable[[], object]:
    """cl-binary-store's struct benchmark: dataclass instances (a: float, b: str)."""

    def build() -> object:
        rng = _rng("structs_100k")
        return [Point(rng.random(), f"struct-{i}") for i in range(count)]

    return build


def complex_list(count: int) -> Callable[[], object]:
    """cl-binary-store's long-complex-list: the strings and the empty tuple are shared."""

    def build() -> object:
        rng = _rng("complex_list")
        pi, hi, hello, empty = 3.1415, "hi", "hello", ()
        items: list[object] = []
        for _ in range(count):
            if rng.random() < 0.5:
                items.append(pi)
            elif rng.random() < 0.5:
                items.append(hi)
            elif rng.random() < 0.5:
                items.append((rng.randrange(30), 2))
            else:
                items.append(hello if rng.random() < 0.5 else empty)
        return items

    return build


def repeated_int(count: int) -> Callable[[], object]:
    def build() -> object:
        value = 2**60 + _rng("repeated_int").randrange(2**60)  # a 61-bit int
        return [value] * count

    return build


def keywords(count: int, distinct: int) -> Callable[[], object]:
    """Strings drawn from a pool; a repeat is the very same str object."""

    def build() -> object:
        rng = _rng("keywords")
        pool = [f"keyword-{n}" for n in range(distinct)]
        return [pool[rng.randrange(distinct)] for _ in range(count)]

    return build


def alpha_strings(count: int) -> Callable[[], object]:
    def build() -> object:
        return [f"string {i} \N{GREEK SMALL LETTER ALPHA}" for i in range(count)]

    return build


def float_array_list(count: int) -> Callable[[], object]:
    def build() -> object:
        rng = _rng("float_array_list")
        return [rng.random() for _ in range(count)]

    return build


def all_payloads(scale: float) -> list[Payload]:
    """Every payload; ``scale`` 1 makes the big ones 100k elements, 10 the seeds' 1M."""
    big = _scaled(100_000, scale)
    return [
        Payload("quickle_small", "quickle", "3-key dict of short lists", quickle_small),
        Payload("quickle_strings", "quickle", "100 random 15-letter str", quickle_strings),
        Payload(
            "sereal_mixed",
            "Sereal",
            "1k-int list, 100-key dict, 26 lists",
            sereal_mixed,
        ),
        Payload("job_hash", "seed 004", "job-queue hash, nested dicts", job_hash),
        Payload("packed_1k", "phpser", "list(range(1000))", packed_1k),
        Payload("rowset_1000", "phpser", "1000 mixed database rows", rowset_1000),
        Payload(
            "dto_1000",
            "phpser",
            "1000 QueueJob dataclass instances",
            dto_1000,
            types=(QueueJob,),
            schema=list[QueueJob],
        ),
        Payload("employees", "Sereal", f"{big} 3-key dicts", employees(big)),
        Payload(
            "employee_objects",
            "Sereal",
            f"{big} Employee objects (plain class)",
            employee_objects(big),
            types=(Employee,),
            schema=list[Employee],
        ),
        Payload(
            "structs_tuples",
            "cl-binary-store",
            f"{big} (float, str)",
            structs_tuples(big),
        ),
        Payload(
            "structs_100k",
            "cl-binary-store",
            f"{big} Point(a: float, b: str) dataclass instances",
            structs_dataclass(big),
            types=(Point,),
            schema=list[Point],
        ),
        Payload(
            "complex_list",
            "cl-binary-store",
            f"{big} mixed items, shared refs",
            complex_list(big),
        ),
        Payload(
            "repeated_int",
            "cl-binary-store",
            f"{big} x one 61-bit int",
            repeated_int(big),
        ),
        Payload(
            "keywords",
            "cl-binary-store",
            f"{KEYWORD_COUNT} str drawn from {KEYWORD_POOL} objects",
            keywords(KEYWORD_COUNT, KEYWORD_POOL),
        ),
        Payload(
            "alpha_strings",
            "cl-binary-store",
            f"{ALPHA_COUNT} distinct str ending in \N{GREEK SMALL LETTER ALPHA}",
            alpha_strings(ALPHA_COUNT),
        ),
        Payload(
            "float_array_list",
            "cl-binary-store",
            f"{big} floats in a list",
            float_array_list(big),
        ),
    ]
