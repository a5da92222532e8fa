"""Telling the server that a worker busy with one long request is alive, not hung.

gunicorn's sync workers report to their arbiter only between requests; one silent for
``GUNICORN_TIMEOUT`` seconds is killed, mid-response or not (issue 34: a 100k export was cut off
after 120 s). ``config/gunicorn.py`` registers the worker's own report here when a worker
starts (``post_worker_init``); long responses (exports) call :func:`alive` between chunks. Outside
gunicorn (tests, the development server, Celery) nothing is registered and :func:`alive` does
nothing. A worker stuck inside one chunk still reports nothing and is still restarted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

EVERY_S = 1.0  # report at most this often

_report: Callable[[], None] | None = None
_last = 0.0


def report_with(report: Callable[[], None] | None) -> None:
    """Register how this process reports that it is alive (None: nothing to report to)."""
    global _report, _last
    _report, _last = report, 0.0


def alive() -> None:
    """This process is making progress: report it (at most once per ``EVERY_S`` seconds)."""
    global _last
    if _report is None:
        return
    now = time.monotonic()
    if now - _last >= EVERY_S:
        _last = now
        _report()
