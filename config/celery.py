"""Celery application.

With no ``REDIS_URL`` the settings switch Celery to eager mode, so ``make run`` needs no broker:
tasks run in-process, synchronously, exactly as a worker would run them.
"""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="celery_tasks")


# Pool processes of this worker (``-c N``), learnt in the main process before the pool forks.
_pool_processes: int | None = None


def torch_threads_for(*, configured: int, cores: int, processes: int) -> int:
    """torch threads for one pool process: ``configured`` when set, else ``cores // processes``
    (at least 1), so processes x threads never exceeds the cores."""
    if configured > 0:
        return configured
    return max(1, cores // max(1, processes))


@signals.worker_init.connect
def remember_pool_size(sender=None, **kwargs) -> None:
    global _pool_processes
    _pool_processes = getattr(sender, "concurrency", None)


@signals.worker_process_init.connect
def prepare_local_models(**kwargs) -> None:
    """In each pool process as it starts: set torch's threads, and load the embedding model once
    (kept for the process's life) unless ``CONCORD_EMBEDDING_PRELOAD`` is off. Without preloading
    nothing heavy is imported here (annotation.text brings spaCy and torch): torch, when a batch
    first imports it, reads ``OMP_NUM_THREADS``."""
    import logging
    import sys
    import time

    from django.conf import settings

    threads = torch_threads_for(
        configured=settings.CONCORD_TORCH_THREADS,
        cores=len(os.sched_getaffinity(0)),
        processes=_pool_processes or 1,
    )
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    if not settings.CONCORD_EMBEDDING_PRELOAD:
        return
    from annotation.text import embeddings

    embeddings.set_torch_threads(threads)
    log = logging.getLogger("concord.worker")
    started = time.perf_counter()
    try:
        embeddings.get_model()
    except embeddings.EmbeddingModelError as exc:  # a judge run will say so; the worker serves
        log.warning("embedding model not loaded at worker start: %s", exc)
        return
    log.info(
        "embedding model loaded in pool process %s in %.1f s (%d torch threads)",
        os.getpid(),
        time.perf_counter() - started,
        threads,
    )
