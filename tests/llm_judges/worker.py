"""A real Celery worker process (``celery -A config worker``) for tests and benchmarks, pointed at
a given database and Redis, consuming one queue of its own so parallel runs never share tasks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL for a Django database settings dict (the test database during tests)."""
    user = quote(settings_dict.get("USER") or "")
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


# A bound, never a figure a test asserts: what is waited for ends the wait as soon as it holds,
# so a quiet machine waits no longer than before, and a busy one (issue 33: three suites and a
# CPU burner at once, a worker's pool loading MiniLM at load 15) gets at least this long.
BUSY_MACHINE_BOUND = 600


class CeleryWorker:
    def __init__(
        self,
        *,
        queue: str,
        database_url: str,
        redis_url: str,
        concurrency: int = 1,
        env: dict | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.queue = queue
        self.lines: list[str] = []
        self.ready = threading.Event()
        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "CONCORD_JUDGE_QUEUE": queue,
            "PYTHONUNBUFFERED": "1",
            # Pool processes load MiniLM at start only where a test asks (seconds per process).
            "CONCORD_EMBEDDING_PRELOAD": "0",
            **(env or {}),
        }
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "-Q", queue, "-c", str(concurrency), "-P", "prefork", "-l", "info",
            "-n", f"{queue}-{uuid.uuid4().hex[:6]}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            *args,  # e.g. "-B", "-s", FILE: embedded beat with its schedule file
        ]  # fmt: skip
        # Own session: the worker and its pool children form a process group we can kill.
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            if " ready." in line:
                self.ready.set()

    def log(self) -> str:
        return "\n".join(self.lines[-80:])

    def wait_ready(self, timeout: float = 90) -> None:
        if not self.ready.wait(max(timeout, BUSY_MACHINE_BOUND)):
            self.stop()
            raise AssertionError(f"the Celery worker did not start:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once: no chance to ack or requeue."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def redis_reachable() -> bool:
    """Whether the broker of the settings (REDIS_URL) answers: the real-worker tests need it."""
    from django.conf import settings

    if not settings.REDIS_URL:
        return False
    import redis

    try:
        return bool(redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def wait_for(condition, *, timeout: float, what: str, worker: CeleryWorker | None = None):
    """Poll ``condition()`` until it is true (returned) or ``timeout`` seconds pass, at least
    ``BUSY_MACHINE_BOUND`` (an AssertionError naming ``what``, with the worker's log)."""
    import time

    deadline = time.monotonic() + max(timeout, BUSY_MACHINE_BOUND)
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)  # sleep-ok: polls what a worker process has written
    log = f"\nworker log:\n{worker.log()}" if worker else ""
    raise AssertionError(f"timed out waiting for {what}{log}")
