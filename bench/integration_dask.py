"""Dask distributed: scatter, worker-to-worker transfer and gather, amber against Dask's families.

One ``LocalCluster`` with two worker processes (one thread each, 127.0.0.1) serves every codec;
a client of its own per codec picks the families (``serializers=``/``deserializers=``), and
before each turn the workers are told the same families for the transfers they start between
themselves, as ``amber.contrib.dask``'s preload does. Codecs:

- ``amber``: ``amber.contrib.dask.SERIALIZERS`` (amber, then Dask's families for the rest);
- ``dask default``: ``["dask", "pickle"]``, what Dask uses when nothing is chosen;
- ``pickle``: the pickle family alone.

Each turn times, in wall-clock milliseconds: ``scatter`` (client to worker A, sent directly,
no hashing of the value), ``worker to worker`` (a trivial task on worker B that needs the
value, so B fetches it from A; a task's scheduling is included) and ``gather`` (back to the
client, directly from a worker). Codecs take turns, in a rotating order, and the best turn of
each counts. ``exact``: the gathered value equals the original with the same types and the
same sharing (``amber._compare.graph_diff``). Dask hands a top-level dict to its families
item by item, so with its own families the objects that the records share with the root come
back as copies.
"""

from __future__ import annotations

import datetime
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from integration_common import Measurement

SYSTEM = "dask"
TIMEOUT = 120.0  # seconds for any one cluster operation


def graph_payload(n_records: int) -> dict[str, Any]:
    """Small records sharing their owners and tag sets, which the root also holds."""
    owners = [
        {"id": i, "name": f"owner-{i}", "roles": {"ops", f"team-{i % 7}"}} for i in range(100)
    ]
    tags = [frozenset({"a", "b"}), frozenset({"c"}), frozenset()]
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    records = [
        {
            "id": i,
            "sku": f"SKU-{i:06d}",
            "qty": i % 7 + 1,
            "price": (i % 1000) / 8,
            "when": start + datetime.timedelta(seconds=i),
            "dims": (i % 3, 20, 5.5),
            "owner": owners[i % 100],
            "tags": tags[i % 3],
        }
        for i in range(n_records)
    ]
    return {"records": records, "owners": owners, "tags": tags}


def array_payload(megabytes: int) -> Any:
    import numpy as np

    return np.random.default_rng(7).random(megabytes * 1_000_000 // 8)


def _use_families(families: list[str], dask_worker: Any = None) -> None:
    """Run on each worker: the families it asks its peers for when it fetches data."""
    dask_worker.rpc.serializers = list(families)
    dask_worker.rpc.deserializers = list(families)


def _touch(value: Any) -> int:
    """A task that needs the value and does next to nothing with it."""
    return len(value) if isinstance(value, dict) else int(value.nbytes)


@contextmanager
def _gc_paused() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _released(client: Any, keys: set[str]) -> None:
    """Wait until no worker holds these keys, so that turns do not pile up memory."""
    deadline = time.monotonic() + TIMEOUT
    while any(keys & set(held) for held in client.has_what().values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers still hold {sorted(keys)} after {TIMEOUT:.0f} s")
        time.sleep(0.02)


def _turn(
    client: Any, families: list[str], value: Any, first: str, second: str
) -> tuple[dict[str, float], Any]:
    """One scatter, worker-to-worker transfer and gather of ``value``; milliseconds each."""
    client.run(_use_families, families)
    clock = time.perf_counter
    with _gc_paused():
        start = clock()
        [future] = client.scatter([value], workers=[first], direct=True, hash=False)
        scattered = clock()
        task = client.submit(_touch, future, workers=[second], allow_other_workers=False)
        task.result(timeout=TIMEOUT)
        moved = clock()
        back = client.gather(future, direct=True)
        gathered = clock()
    keys = {future.key, task.key}
    client.cancel([future, task])
    del future, task
    _released(client, keys)
    times = {
        "scatter": (scattered - start) * 1000,
        "worker to worker": (moved - scattered) * 1000,
        "gather": (gathered - moved) * 1000,
    }
    return times, back


def measure(redis_url: str, quick: bool) -> list[Measurement]:
    """Best-of-turns scatter, transfer and gather times, and exactness, per payload and codec."""
    del redis_url  # Dask needs no Redis
    import amber.contrib.dask as amber_dask
    from amber._compare import graph_diff
    from distributed import Client, LocalCluster

    codecs: dict[str, list[str]] = {
        "amber": list(amber_dask.SERIALIZERS),
        "dask default": ["dask", "pickle"],
        "pickle": ["pickle"],
    }
    n_records, megabytes, turns = (10_000, 10, 2) if quick else (100_000, 100, 5)
    payloads: dict[str, Callable[[], Any]] = {
        f"graph {n_records // 1000}k records": lambda: graph_payload(n_records),
        f"float64 array {megabytes} MB": lambda: array_payload(megabytes),
    }
    results: list[Measurement] = []
    with LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP server, on 127.0.0.1
        memory_limit="4GiB",
        preload=["amber.contrib.dask"],
    ) as cluster:
        clients = {
            name: Client(cluster, serializers=families, deserializers=families, timeout=TIMEOUT)
            for name, families in codecs.items()
        }
        try:
            first, second = sorted(next(iter(clients.values())).scheduler_info()["workers"])
            for name, families in codecs.items():  # connections open and code paths warm
                _turn(clients[name], families, {"warm": [1, 2]}, first, second)
            for payload_name, build in payloads.items():
                value = build()
                best: dict[str, dict[str, float]] = {name: {} for name in codecs}
                exact: dict[str, bool] = {}
                names = list(codecs)
                for turn in range(turns):
                    order = names[turn % len(names) :] + names[: turn % len(names)]
                    for name in order:
                        times, back = _turn(clients[name], codecs[name], value, first, second)
                        if name not in exact:
                            exact[name] = graph_diff(value, back) is None
                        del back
                        for metric, ms in times.items():
                            best[name][metric] = min(best[name].get(metric, ms), ms)
                for name in names:
                    for metric, ms in best[name].items():
                        results.append(Measurement(SYSTEM, payload_name, name, metric, ms, "ms"))
                    results.append(
                        Measurement(
                            SYSTEM, payload_name, name, "exact", float(exact[name]), "", "higher"
                        )
                    )
                del value
        finally:
            for client in clients.values():
                client.close(timeout=TIMEOUT)
    return results


if __name__ == "__main__":
    import sys

    for m in measure("", quick="--quick" in sys.argv):
        print(f"{m.payload:>26} {m.metric:<17} {m.codec:<13} {m.value:10.1f} {m.unit}")
