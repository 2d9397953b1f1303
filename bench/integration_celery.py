"""Celery with amber against json, pickle and msgpack: a real worker process on a real Redis.

One ``celery worker`` (solo pool) runs an echo task per codec, each sent with its codec
(``Task.serializer``) and storing its result with its codec (a result backend of its own),
so every call pays the codec four times: the caller's encode, the worker's decodes (Celery
decodes a task body twice: once to build the request, once more to run it), the worker's
result encode and the caller's result decode, plus Celery's and Redis's own costs, which are
the same for every codec. The broker is Redis database 7, the result backend database 8.

Measured for the seed's job hash and a rich payload: tasks per second (a batch of tasks sent,
then every result gathered) and the round-trip latency of single calls (send, wait for the
result). Codecs take turns, batch by batch and call by call, in a rotating order, so a slow
spell of a shared machine falls on all of them. A codec that cannot carry a payload is
recorded as ``exact`` 0 and not timed; one that carries it but changes it (JSON turns tuples
into lists) is ``exact`` 0 and still timed.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from integration_common import Measurement, job_hash, percentile, rich_payload

SYSTEM = "celery"
BENCH_DIR = Path(__file__).resolve().parent
BROKER_DB = 7
BACKEND_DB = 8
# codec as reported (named as the other integration benchmarks name it) -> kombu serializer
CODECS = {
    "amber": "amber",
    "amber signed": "amber-signed",
    "json": "json",
    "pickle": "pickle",
    "msgpack": "msgpack",
}
SIGNING_KEY = b"amber bench: celery signing key!"
# The worker process finds its result backend here (its broker comes from the command line).
BACKEND_ENV = "AMBER_BENCH_CELERY_BACKEND"
RESULT_TIMEOUT = 60.0
READY_TIMEOUT = 60.0


def _database_url(redis_url: str, db: int) -> str:
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


def _task_name(serializer: str) -> str:
    return f"amber_bench.echo.{serializer}"


def make_app(backend_url: str | None) -> Any:
    """The Celery app of caller and worker alike: one echo task per codec.

    The app itself has no result backend: each task has one of its own, whose serializer is
    the task's codec, since Celery's result serializer is otherwise one per app. With an app
    backend as well, Celery would subscribe it to every task's result channel, and nothing
    would ever read those messages.
    """
    import amber.contrib.kombu
    from celery import Celery
    from celery.backends.redis import RedisBackend

    amber.contrib.kombu.register_signed(SIGNING_KEY)
    app = Celery("amber_bench")
    app.conf.update(
        accept_content=list(CODECS.values()),
        result_accept_content=list(CODECS.values()),
        task_serializer="amber",
        broker_connection_retry_on_startup=True,
        result_expires=600,
        worker_hijack_root_logger=True,
    )
    for serializer in CODECS.values():

        def echo(payload: Any) -> Any:
            return payload

        task = app.task(name=_task_name(serializer), serializer=serializer, shared=False)(echo)
        if backend_url is not None:
            task.backend = RedisBackend(app=app, url=backend_url, serializer=serializer)
    return app


def __getattr__(name: str) -> Any:
    # ``celery -A integration_celery:worker_app`` builds the worker's app on demand, so that
    # importing this module (as integrations.py does) starts nothing and imports no Celery.
    if name == "worker_app":
        app = make_app(os.environ[BACKEND_ENV])
        globals()["worker_app"] = app
        return app
    raise AttributeError(name)


class _Worker:
    def __init__(self, broker: str, backend: str, logdir: str) -> None:
        self.log = Path(logdir) / "worker.log"
        self.out = Path(logdir) / "worker.out"
        env = dict(os.environ)
        env[BACKEND_ENV] = backend
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Celery refuses to run a worker that accepts pickle as root unless told to; the
            # bench runs as root in containers, on 127.0.0.1, against its own Redis.
            env["C_FORCE_ROOT"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(BENCH_DIR), env.get("PYTHONPATH", "")) if p
        )
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "integration_celery:worker_app",
            "-b",
            broker,
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
            f"--logfile={self.log}",
            "-n",
            f"amber-bench-{uuid.uuid4().hex[:8]}@%h",
        ]
        with self.out.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=BENCH_DIR, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def text(self) -> str:
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        out = self.out.read_text(errors="replace") if self.out.exists() else ""
        return f"{log[-4000:]}\n{out[-2000:]}"

    def wait_ready(self, task: Any) -> None:
        """Return once the worker has answered a task; its log stays quiet at WARNING."""
        import celery.exceptions

        result = _send(task, "ping")
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                result.get(timeout=0.5)
                return
            except celery.exceptions.TimeoutError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"the celery worker exited early:\n{self.text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the celery worker did not answer in time:\n{self.text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def _send(task: Any, payload: Any) -> Any:
    # Subscribe before publishing, as Celery does for the app's own backend, so the result
    # is announced to this caller instead of being fetched after the fact.
    task_id = str(uuid.uuid4())
    task.backend.result_consumer.consume_from(task_id)
    return task.apply_async((payload,), task_id=task_id)


def _carry(task: Any, payload: Any) -> tuple[bool, str | None]:
    """(whether the codec carried the payload at all, what differs in what came back)."""
    from amber._compare import graph_diff

    try:
        result = _send(task, payload).get(timeout=RESULT_TIMEOUT)
    except Exception as exc:  # the codec cannot carry the payload (EncodeError at the caller)
        return False, f"{type(exc).__name__}: {exc}"[:300]
    return True, graph_diff(payload, result)


def _body_size(serializer: str, payload: Any) -> int:
    """Bytes of the task body ((args, kwargs, embed), as Celery's protocol 2 sends it)."""
    from kombu.serialization import dumps

    embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    return len(dumps(((payload,), {}, embed), serializer=serializer)[2])


def _throughput(tasks: dict[str, Any], payload: Any, total: int, rounds: int) -> dict[str, float]:
    """codec -> tasks per second: batches of total/rounds sent, then every result gathered."""
    per_round = max(1, total // rounds)
    seconds = dict.fromkeys(tasks, 0.0)
    done = dict.fromkeys(tasks, 0)
    names = list(tasks)
    for round_number in range(rounds):
        shift = round_number % len(names)
        for codec in names[shift:] + names[:shift]:
            task = tasks[codec]
            gc.collect()
            start = time.perf_counter()
            results = [_send(task, payload) for _ in range(per_round)]
            for result in results:
                result.get(timeout=RESULT_TIMEOUT)
            seconds[codec] += time.perf_counter() - start
            done[codec] += per_round
    return {codec: done[codec] / seconds[codec] for codec in names}


def _latency(tasks: dict[str, Any], payload: Any, calls: int) -> dict[str, list[float]]:
    """codec -> sorted per-call round trips in ms, codecs taking turns call by call."""
    samples: dict[str, list[float]] = {codec: [] for codec in tasks}
    names = list(tasks)
    clock = time.perf_counter_ns
    for call in range(calls):
        shift = call % len(names)
        for codec in names[shift:] + names[:shift]:
            task = tasks[codec]
            start = clock()
            _send(task, payload).get(timeout=RESULT_TIMEOUT)
            samples[codec].append((clock() - start) / 1e6)
    return {codec: sorted(values) for codec, values in samples.items()}


def measure(redis_url: str, quick: bool) -> list[Measurement]:
    broker = _database_url(redis_url, BROKER_DB)
    backend = _database_url(redis_url, BACKEND_DB)
    total, rounds, calls = (200, 2, 40) if quick else (2000, 10, 200)
    app = make_app(backend)
    app.conf.broker_url = broker
    measurements: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="amber-bench-celery-") as logdir:
        worker = _Worker(broker, backend, logdir)
        try:
            all_tasks = {codec: app.tasks[_task_name(name)] for codec, name in CODECS.items()}
            worker.wait_ready(all_tasks["json"])
            # Connections open, subscriptions made, code paths warm before any timing.
            for task in all_tasks.values():
                for _ in range(5):
                    try:
                        _send(task, job_hash()).get(timeout=RESULT_TIMEOUT)
                    except Exception as exc:
                        raise RuntimeError(f"warm-up failed:\n{worker.text()}") from exc
            for payload_name, payload in (("job hash", job_hash()), ("rich", rich_payload())):
                carried: dict[str, Any] = {}
                for codec, task in all_tasks.items():
                    ok, why = _carry(task, payload)
                    exact = ok and why is None
                    measurements.append(
                        Measurement(
                            SYSTEM, payload_name, codec, "exact", float(exact), "", "higher"
                        )
                    )
                    if why is not None:
                        print(f"  {payload_name} {codec}: not exact: {why}", flush=True)
                    if ok:
                        carried[codec] = task
                        measurements.append(
                            Measurement(
                                SYSTEM,
                                payload_name,
                                codec,
                                "body size",
                                float(_body_size(CODECS[codec], payload)),
                                "B",
                                "lower",
                            )
                        )
                rates = _throughput(carried, payload, total, rounds)
                latencies = _latency(carried, payload, calls)
                for codec in carried:
                    measurements.append(
                        Measurement(
                            SYSTEM, payload_name, codec, "tasks/s", rates[codec], "1/s", "higher"
                        )
                    )
                    for label, fraction in (("p50 latency", 0.5), ("p99 latency", 0.99)):
                        measurements.append(
                            Measurement(
                                SYSTEM,
                                payload_name,
                                codec,
                                label,
                                percentile(latencies[codec], fraction),
                                "ms",
                                "lower",
                            )
                        )
        finally:
            worker.stop()
            app.close()
    return measurements


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH_DIR.parent / "tests"))
    from _services import RedisServer

    started = time.perf_counter()
    with RedisServer() as server:
        for m in measure(server.url, "--quick" in sys.argv):
            print(f"{m.payload:>10} {m.metric:<12} {m.codec:<13} {m.value:12.3f} {m.unit}")
    print(f"{time.perf_counter() - started:.1f} s")
