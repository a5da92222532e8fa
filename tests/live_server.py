"""The live server's requests, counted, so that a test ends only when the server is idle.

A browser test's last requests (an autosave on unload, a progress poll, a submit the test did
not wait for) can still be running on the live server's threads when the test ends and
pytest-django flushes the database. On SQLite's shared in-memory database the server threads use
the test's own connection, and the flush's ``DELETE FROM`` fails with "database table is locked"
while a request's statement is open ("couldn't be flushed"); on PostgreSQL its ``TRUNCATE`` and
the request's row locks deadlock. Whatever the machine's load, :class:`LiveServerRequests` makes
the order fixed: at the end of each test it shuts the door (a request arriving later, from a
browser already closed, is answered 503 without touching the database) and waits until every
request in flight has sent its response; only then does the flush run.

On SQLite's shared in-memory database the server also answers one request at a time: its
threads share one connection, and two requests interleaving their transactions on it is a race
the production set-up (a connection per thread, WAL, ``BEGIN IMMEDIATE``) never has.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]

# How long a test's end waits for the server's last requests before it fails, naming them: a
# guard against a request that never ends (a hang), not a timing the tests rely on.
SETTLE_LIMIT_S = 120


class LiveServerRequests:
    def __init__(self, *, one_at_a_time: bool) -> None:
        self._changed = threading.Condition()
        self._serial = threading.Lock() if one_at_a_time else None
        self.in_flight: list[str] = []  # "METHOD /path" of each request being answered
        self.open = False
        self.turned_away = 0

    def begin_test(self) -> None:
        with self._changed:
            self.open = True

    def settle(self, *, limit_s: float = SETTLE_LIMIT_S) -> None:
        """Turn away new requests and return once none is in flight."""
        with self._changed:
            self.open = False
            if not self._changed.wait_for(lambda: not self.in_flight, timeout=limit_s):
                raise AssertionError(
                    f"the live server still answers {self.in_flight} {limit_s} s after the test"
                )

    def wrap(self, app: WSGIApp) -> WSGIApp:
        def counted(environ: dict, start_response: Callable) -> Iterable[bytes]:
            request = f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}"
            with self._changed:
                if not self.open:
                    self.turned_away += 1
                    start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                    return [b"the test that made this request has ended"]
                self.in_flight.append(request)
            if self._serial is not None:
                self._serial.acquire()
            try:
                response = app(environ, start_response)
            except BaseException:
                self._done(request)
                raise
            return _Finished(response, lambda: self._done(request))

        return counted

    def _done(self, request: str) -> None:
        if self._serial is not None:
            self._serial.release()
        with self._changed:
            self.in_flight.remove(request)
            self._changed.notify_all()


class _Finished:
    """A WSGI response that reports when the server has sent it and closed it (a streamed
    response is still reading the database until then)."""

    def __init__(self, response: Iterable[bytes], done: Callable[[], None]) -> None:
        self._response = response
        self._done = done

    def __iter__(self) -> Any:
        return iter(self._response)

    def close(self) -> None:
        try:
            close = getattr(self._response, "close", None)
            if close is not None:
                close()
        finally:
            self._done()
