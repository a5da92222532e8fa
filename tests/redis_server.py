"""A private ``redis-server`` for tests that take Redis away: started on a free port, stopped and
started again by the test, never the shared Redis other tests and workers use.

``use_for_django_and_celery`` points Django's cache and the Celery app's broker at it for the
duration of a test, and puts the previous ones back afterwards.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory = tempfile.mkdtemp(prefix="concord-redis-")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.directory,
            ],  # fmt: skip
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        for _ in range(100):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)  # sleep-ok: polls another process (redis-server) until it answers
        raise AssertionError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def require_redis_server() -> None:
    from tests.conftest import require

    require(shutil.which("redis-server") is not None, "needs the redis-server binary")


def _reset_celery_connections(app) -> None:
    # The app keeps the connection and producer pools of the broker URL it saw first; they come
    # from kombu's process-wide registry (one per URL), so they are dropped here, never closed:
    # the shared broker's pool is used again afterwards.
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def use_for_django_and_celery(server: RedisServer, settings):
    """Django's cache and Celery's broker (not eager) on ``server`` inside the block."""
    from config.celery import app

    saved = (app.conf.broker_url, app.conf.task_always_eager)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server.url,
        }
    }
    app.conf.broker_url = server.url
    app.conf.task_always_eager = False
    _reset_celery_connections(app)
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.task_always_eager = saved
        _reset_celery_connections(app)


@contextmanager
def running_redis_server():
    """A started private server, closed (and its files removed) on the way out."""
    require_redis_server()
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.close()
