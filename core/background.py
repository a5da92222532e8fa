"""Work that a request starts but must not wait for.

With a broker, Celery tasks already run in the workers. In the embedded set-up (`make run`: no
broker, Celery eager, ``CONCORD_EAGER_IN_BACKGROUND``), an eager task would run inside the request
that queued it; :func:`in_background` runs it on a daemon thread of the same server instead, so
the page answers at once. Nothing else changes: the work writes through the same services, and
the SQLite settings (WAL, busy timeout, immediate writes) let it write beside the requests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import connections

log = logging.getLogger(__name__)


def in_background(work: Callable[[], object], *, name: str) -> None:
    """Run ``work`` now, or on a daemon thread in the embedded set-up (see the module)."""
    if not getattr(settings, "CONCORD_EAGER_IN_BACKGROUND", False):
        work()
        return

    def run() -> None:
        try:
            work()
        except Exception:  # the work records its own outcome; this is the last resort
            log.exception("background work %s failed", name)
        finally:
            connections.close_all()

    threading.Thread(target=run, name=f"concord-{name}", daemon=True).start()
