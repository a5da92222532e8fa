"""gunicorn's settings, from the environment (``gunicorn -c config/gunicorn.py``; README.md,
"Production shape"). Defaults: three sync workers, as before: three gthread workers of four
threads were not better on the annotator path at 1, 10 or 20 clients (docs/scale.md, issue 31)."""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
# "sync" (one request per process) or "gthread" (GUNICORN_THREADS requests per process).
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "sync")
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
# The proxy holds client connections; a keep-alive slightly longer than its own avoids resets.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
accesslog = "-"


def post_worker_init(worker):
    """A sync worker reports to the arbiter only between requests, and one silent for
    ``timeout`` seconds is killed: a long export (issue 34) reports between its chunks instead
    (``core.liveness``), so the timeout never cuts one, and still catches a hung worker."""
    from core import liveness

    liveness.report_with(worker.notify)
