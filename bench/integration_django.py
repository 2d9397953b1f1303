"""Django's RedisCache with amber against Django's own pickle serializer, on a real Redis.

Each call is a whole ``cache.set`` or ``cache.get``: key making, serializing, the round trip
to Redis and back, deserializing, as a view would pay it. Codecs take turns in short batches,
in a rotating order, so a noisy neighbour on a small machine slows all of them alike; the
latencies are per-call percentiles over every batch. Stored bytes are read back from Redis
with redis-py, as the server holds them.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from integration_common import Measurement, job_hash, percentile, rich_payload

SYSTEM = "django"
# The Redis database the Django benchmark writes to (the tests of amber.contrib.django use
# databases 1 and 2; the benchmark runs against a server of its own).
DATABASE = 1
BATCH = 50
SIGNING_KEY = b"amber bench: a signing key of 32"


def _configure_django() -> None:
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            SECRET_KEY="amber bench: django settings secret key, not a real one",
            USE_TZ=True,
            INSTALLED_APPS=[],
            CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
        )
        django.setup()


def _database_url(redis_url: str, db: int) -> str:
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


def _caches(url: str) -> dict[str, Any]:
    """codec name -> a RedisCache of its own, each with a key prefix of its own."""
    from amber.contrib.django import Serializer, SignedSerializer
    from django.core.cache.backends.redis import RedisCache

    serializers: dict[str, Any] = {
        "amber": Serializer({}),
        "pickle": None,  # Django's default RedisSerializer
        "amber signed": SignedSerializer({"key": SIGNING_KEY}),
    }
    caches: dict[str, Any] = {}
    for name, serializer in serializers.items():
        options = {} if serializer is None else {"serializer": serializer}
        prefix = "amber-bench-django-" + name.replace(" ", "-")
        caches[name] = RedisCache(url, {"KEY_PREFIX": prefix, "OPTIONS": options})
    return caches


def _timed_batch(call: Callable[[], object], count: int, into: list[float]) -> None:
    clock = time.perf_counter_ns
    for _ in range(count):
        start = clock()
        call()
        into.append((clock() - start) / 1000.0)


def _latencies(caches: dict[str, Any], value: Any, calls: int) -> dict[str, dict[str, list[float]]]:
    """codec -> "set"/"get" -> per-call µs, the codecs timed in turns of one batch each."""
    samples: dict[str, dict[str, list[float]]] = {n: {"set": [], "get": []} for n in caches}
    names = list(caches)
    for cache in caches.values():  # connections open and code paths warm before timing
        for _ in range(5):
            cache.set("value", value, None)
            cache.get("value")
    rounds = max(1, calls // BATCH)
    for round_number in range(rounds):
        shift = round_number % len(names)
        order = names[shift:] + names[:shift]
        gc.collect()
        gc.disable()
        try:
            for name in order:
                cache = caches[name]
                _timed_batch(
                    lambda c=cache: c.set("value", value, None), BATCH, samples[name]["set"]
                )
                _timed_batch(lambda c=cache: c.get("value"), BATCH, samples[name]["get"])
        finally:
            gc.enable()
    return samples


def measure(redis_url: str, quick: bool) -> list[Measurement]:
    """Set/get latency, stored bytes and exactness for each payload and codec."""
    _configure_django()
    import redis
    from amber._compare import graph_diff

    url = _database_url(redis_url, DATABASE)
    calls = 300 if quick else 2000
    caches = _caches(url)
    raw = redis.Redis.from_url(url)
    payloads: dict[str, Callable[[], Any]] = {"rich": rich_payload, "job_hash": job_hash}
    results: list[Measurement] = []
    try:
        for payload_name, build in payloads.items():
            value = build()
            samples = _latencies(caches, value, calls)
            for codec, cache in caches.items():
                row = functools.partial(Measurement, SYSTEM, payload_name, codec)
                for op in ("set", "get"):
                    ordered = sorted(samples[codec][op])
                    results.append(row(f"{op} p50", percentile(ordered, 0.50), "µs"))
                    results.append(row(f"{op} p99", percentile(ordered, 0.99), "µs"))
                original = build()
                cache.set("exact", original, None)
                stored = raw.get(cache.make_and_validate_key("exact"))
                results.append(row("stored bytes", float(len(stored or b"")), "B"))
                exact = graph_diff(original, cache.get("exact")) is None
                results.append(row("exact", 1.0 if exact else 0.0, "", "higher"))
    finally:
        for cache in caches.values():
            cache.delete_many(["value", "exact"])
        raw.close()
    return results


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _services import RedisServer

    with RedisServer() as server:
        for m in measure(server.url, quick="--quick" in sys.argv):
            print(f"{m.payload:>9} {m.metric:<13} {m.codec:<13} {m.value:12.1f} {m.unit}")
