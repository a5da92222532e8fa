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
_froze = False  # whether the first of them froze (nobody else had)


@contextmanager
def older_objects_set_aside() -> Iterator[None]:
    """Imports and exports (``studies.services``) run inside it. Where something else froze
    objects first (a server that freezes after start-up), that is left as it is."""
    global _holders, _froze
    with _lock:
        if _holders == 0:
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()  # moves the tracked objects aside in constant time; collects nothing
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _froze:
                gc.unfreeze()
                _froze = False
