"""core.heap: long bulk operations set the older objects aside from the cyclic collector."""

import gc
import io
import json
import threading
import weakref

import pytest

from core.heap import older_objects_set_aside
from tests import factories


class _Node:
    pass


def test_the_older_objects_are_set_aside_for_the_block_and_back_afterwards():
    assert gc.get_freeze_count() == 0
    with older_objects_set_aside():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_cycles_made_inside_the_block_are_still_collected():
    with older_objects_set_aside():
        node = _Node()
        node.itself = node  # a reference cycle: only the cyclic collector frees it
        gone = weakref.ref(node)
        del node
        gc.collect()
        assert gone() is None


def test_nested_and_concurrent_blocks_unfreeze_once_the_last_one_leaves():
    entered, leave = threading.Event(), threading.Event()

    def other():
        with older_objects_set_aside():
            entered.set()
            leave.wait(5)

    thread = threading.Thread(target=other)
    with older_objects_set_aside():
        thread.start()
        assert entered.wait(5)
        with older_objects_set_aside():
            pass
        assert gc.get_freeze_count() > 0  # the inner block left, two are still inside
    assert gc.get_freeze_count() > 0  # the other thread is still inside
    leave.set()
    thread.join()
    assert gc.get_freeze_count() == 0


def test_an_error_inside_the_block_still_puts_the_objects_back():
    with pytest.raises(RuntimeError), older_objects_set_aside():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_an_import_runs_with_the_older_objects_set_aside(project):
    from studies.services.imports import import_items

    frozen = []
    rows = [json.dumps(factories.citation_payload(n)) for n in range(3)]
    import_items(
        project=project,
        stream=io.BytesIO("\n".join(rows).encode()),
        fmt="jsonl",
        progress=lambda report: frozen.append(gc.get_freeze_count()),
    )
    assert frozen and all(count > 0 for count in frozen)
    assert gc.get_freeze_count() == 0
