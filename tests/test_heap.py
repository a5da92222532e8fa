"""core.heap: long bulk operations set the older objects aside from the cyclic collector."""

import gc
import io
import json
import threading
import weakref

import pytest

from core.heap import collections_spaced, older_objects_set_aside
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


# --- the young generation's threshold while an export runs ---------------------------------------


def test_the_young_threshold_is_raised_for_the_block_and_put_back_afterwards():
    before = gc.get_threshold()
    with collections_spaced(threshold=before[0] + 5000):
        assert gc.get_threshold() == (before[0] + 5000, *before[1:])
    assert gc.get_threshold() == before


def test_a_higher_threshold_set_by_someone_else_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(before[0] + 90_000, *before[1:])
    try:
        with collections_spaced(threshold=before[0] + 10):
            assert gc.get_threshold()[0] == before[0] + 90_000
        assert gc.get_threshold()[0] == before[0] + 90_000
    finally:
        gc.set_threshold(*before)


def test_the_threshold_is_put_back_once_the_last_block_leaves_even_after_an_error():
    before = gc.get_threshold()
    entered, leave = threading.Event(), threading.Event()

    def other():
        with collections_spaced():
            entered.set()
            leave.wait(5)

    thread = threading.Thread(target=other)
    with pytest.raises(RuntimeError), collections_spaced():
        thread.start()
        assert entered.wait(5)
        raise RuntimeError("boom")
    assert gc.get_threshold()[0] > before[0]  # the other thread is still inside
    leave.set()
    thread.join()
    assert gc.get_threshold() == before


def test_an_export_runs_with_the_threshold_raised_and_puts_it_back(project):
    from studies.services.exports import export_jsonl
    from tests.projects.test_export_rows import answer_all, member

    factories.make_items(project, 2)
    answer_all(project, member(project), lambda item: {"sentences": [0], "helpfulness": 50})
    before = gc.get_threshold()
    rows = export_jsonl(project=project)
    next(rows)
    assert gc.get_threshold()[0] > before[0]
    rows.close()  # stopped early
    assert gc.get_threshold() == before
    assert list(export_jsonl(project=project))
    assert gc.get_threshold() == before
