"""The cyclic garbage collector during long bulk operations.

A worker's heap holds a few hundred thousand long-lived objects (Django, DRF, the spaCy pipeline:
~290k once a sentence has been split). Every full collection walks them all (~130 ms here), and a
bulk import triggers such collections while it allocates. ``older_objects_set_aside`` moves the
objects that exist when the operation starts out of the collector's generations for its duration
(``gc.freeze``) and back afterwards (``gc.unfreeze``), so full collections walk only the
operation's own objects. Cycles among those are still collected; the set-aside objects are only
skipped, never leaked: they are collected as usual after the operation.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0  # operations inside the block now (threads of one process share the collector)


@contextmanager
def older_objects_set_aside() -> Iterator[None]:
    global _holders
    with _lock:
        _holders += 1
        if _holders == 1:
            gc.freeze()  # moves the tracked objects aside in constant time; collects nothing
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                gc.unfreeze()
