"""A real ``celery worker`` process for the tests: started, watched through its log, stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _services import ServiceError

TESTS_DIR = Path(__file__).resolve().parent


class CeleryWorker:
    """``celery -A <module> worker --pool=solo`` against one Redis database.

    Solo pool: the task runs in the process that consumed the message, so its log holds
    everything, and one process is all there is to stop.
    """

    def __init__(self, module: str, url: str, logdir: Path) -> None:
        self.module = module
        self.url = url
        self.logfile = logdir / f"{module}.log"
        self.outfile = logdir / f"{module}.out"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> CeleryWorker:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(TESTS_DIR), env.get("PYTHONPATH", "")) if p
        )
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            self.module,
            "-b",
            self.url,
            "--result-backend",
            self.url,
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=INFO",
            f"--logfile={self.logfile}",
            "-n",
            f"{self.module}@%h",
        ]
        with self.outfile.open("wb") as out:
            self._process = subprocess.Popen(
                command, cwd=TESTS_DIR, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        return self

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def report(self) -> str:
        """What the worker wrote, for a failing assertion's message."""
        out = self.outfile.read_text(errors="replace") if self.outfile.exists() else ""
        return f"--- {self.logfile.name} ---\n{self.log()[-6000:]}\n--- output ---\n{out[-3000:]}"

    def wait_for(self, found: Callable[[str], bool], *, since: int = 0, timeout: float) -> str:
        """The log from offset ``since`` once ``found`` accepts it; ServiceError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log()[since:]
            if found(text):
                return text
            if self._process is not None and self._process.poll() is not None:
                raise ServiceError(
                    f"celery worker {self.module} exited with status "
                    f"{self._process.returncode}\n{self.report()}"
                )
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"celery worker {self.module}: the log did not show what was awaited "
                    f"within {timeout:.0f} s\n{self.report()}"
                )
            time.sleep(0.05)

    def wait_ready(self, timeout: float) -> None:
        self.wait_for(lambda text: " ready." in text, timeout=timeout)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
