"""The cyclic garbage collector during long bulk operations.

A worker's heap holds a few hundred thousand long-lived objects (Django, DRF, the spaCy pipeline:
~290k once a sentence has been split). Every full collection walks them all (~130 ms here), and a
bulk import triggers such collections while it allocates. ``older_objects_set_aside`` moves the
objects that exist when the operation starts out of the collector's generations for its duration
(``gc.freeze``) and back afterwards (``gc.unfreeze``), so full collections walk only the
operation's own objects. Cycles among those are still collected; the set-aside objects are only
skipped, never leaked: they are collected as usual after the operation.

``collections_spaced`` raises the youngest generation's threshold for an operation's duration:
an export allocates and frees a few objects per row, and the collector's default (a young
collection every 700 net allocations) ran ~430 young collections in a 100k-row export for
nothing (its rows' objects are freed by reference counting; ~8 % of its CPU). Cycles are still
collected, only less often; the threshold is put back when the last such operation ends.
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


SPACED_THRESHOLD = 20_000  # net allocations between young collections while an export runs
_spaced_holders = 0
_threshold: tuple[int, int, int] | None = None  # the thresholds before the first holder came


@contextmanager
def collections_spaced(threshold: int = SPACED_THRESHOLD) -> Iterator[None]:
    """Exports (``studies.services.exports``) run inside it: the young generation collected
    every ``threshold`` net allocations instead of the interpreter's default (raised only: a
    higher threshold set by someone else is kept), and put back when the last holder leaves,
    however it leaves (finished, stopped early, failed)."""
    global _spaced_holders, _threshold
    with _lock:
        if _spaced_holders == 0:
            _threshold = gc.get_threshold()
            if _threshold[0] < threshold:
                gc.set_threshold(threshold, *_threshold[1:])
        _spaced_holders += 1
    try:
        yield
    finally:
        with _lock:
            _spaced_holders -= 1
            if _spaced_holders == 0 and _threshold is not None:
                gc.set_threshold(*_threshold)
                _threshold = None
