"""N annotators per item under concurrent requests (PostgreSQL row locks, real threads)."""

import logging
import threading
import time
from collections import Counter

import pytest
from django.db import connection, connections, transaction

from annotation import services
from annotation.models import Assignment, Batch, Item
from tests import factories
from tests.conftest import require

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def at_once(function, arguments, *, timeout=600) -> list[str]:
    """Run ``function(argument)`` in one thread per argument, all released together by a barrier;
    returns the errors raised (a thread must not die silently) and names any thread still running
    after ``timeout`` seconds, so a slow machine fails with that message instead of with counts
    read while threads still write."""
    arguments = list(arguments)
    start = threading.Barrier(len(arguments))
    errors = []

    def run(argument):
        try:
            start.wait()
            function(argument)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(a,)) for a in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    errors += [
        f"{thread.name} still running after {timeout} s" for thread in threads if thread.is_alive()
    ]
    return errors


def test_n_annotators_per_item_holds_when_20_annotators_ask_at_once(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(annotators_per_item=3)
    factories.make_items(project, 12)
    annotators = [factories.UserFactory() for _ in range(20)]
    for user in annotators:
        factories.MembershipFactory(project=project, user=user, role="annotator")

    def work(user):
        while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
            services.annotation_submit(assignment=assignment, answer=ANSWER)

    assert not at_once(work, annotators)
    per_item = Counter(Assignment.objects.filter(project=project).values_list("item_id", flat=True))
    assert set(per_item.values()) == {3}, per_item
    assert len(per_item) == 12
    pairs = Assignment.objects.filter(project=project).values_list("item_id", "annotator_id")
    assert len(set(pairs)) == len(pairs)
    assert all(i.assigned_count == 3 for i in Item.objects.filter(project=project))
    assert Assignment.objects.filter(project=project, state="submitted").count() == 36


def test_concurrent_workers_starting_batches_never_share_a_batch_beyond_the_overlap(
    transactional_db,
):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(
        annotators_per_item=2, crowd={"batch_size": 4, "controls_per_batch": 2}
    )
    factories.make_items(project, 40)
    factories.make_items(project, 6, kind="control", start=1000)
    workers = [factories.UserFactory() for _ in range(20)]
    for user in workers:
        factories.MembershipFactory(project=project, user=user, role="annotator")

    def work(user):
        # Everyone asks for a batch at the same instant, then works through it and asks again.
        while (
            assignment := services.assignment_next(
                project=project, annotator=user, start_batch=True
            )
        ) is not None:
            services.annotation_submit(assignment=assignment, answer=ANSWER)

    assert not at_once(work, workers)
    regular = Assignment.objects.filter(project=project, item__kind="regular")
    per_item = Counter(regular.values_list("item_id", flat=True))
    assert len(per_item) == 40 and set(per_item.values()) == {2}, per_item
    pairs = list(Assignment.objects.filter(project=project).values_list("item_id", "annotator_id"))
    assert len(set(pairs)) == len(pairs)
    # Every batch is whole: 4 regular items while the pool lasted (40 × 2 places = 20 batches).
    sizes = Counter(
        Assignment.objects.filter(project=project, item__kind="regular").values_list(
            "batch_id", flat=True
        )
    )
    assert sorted(sizes.values()) == [4] * 20
    assert Batch.objects.filter(project=project, state="finished").count() == 20
    assert not Batch.objects.filter(project=project, state="open").exists()
    assert all(i.assigned_count == 2 for i in Item.objects.filter(project=project, kind="regular"))


def test_one_annotator_asking_for_a_batch_from_several_tabs_at_once_gets_one_batch(
    transactional_db,
):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(
        annotators_per_item=1,
        crowd={"batch_size": 3, "controls_per_batch": 1, "assignment_strategy": "least_annotated"},
    )
    factories.make_items(project, 30)
    factories.make_items(project, 3, kind="control", start=1000)
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    tabs = 8
    got = []

    def ask(_tab):
        got.append(services.assignment_next(project=project, annotator=user).batch_id)

    assert not at_once(ask, range(tabs))
    assert len(set(got)) == 1 and len(got) == tabs
    assert Batch.objects.filter(project=project).count() == 1
    assert Assignment.objects.filter(project=project).count() == 4


def test_two_tabs_of_one_annotator_asking_at_once_share_one_reservation(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(annotators_per_item=3, crowd={"control_rate": 0.5})
    factories.make_items(project, 6)
    factories.make_items(project, 4, kind="control", start=100)
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    for _round in range(5):
        start = threading.Barrier(6)
        got, errors = [], []

        def tab(start=start, got=got, errors=errors):
            try:
                start.wait()
                got.append(services.assignment_next(project=project, annotator=annotator).pk)
            except Exception as exc:
                errors.append(repr(exc))
            finally:
                connections.close_all()

        assert not at_once(lambda _tab, tab=tab: tab(), range(6))
        assert not errors and len(set(got)) == 1, (got, errors)
        services.annotation_submit(assignment=Assignment.objects.get(pk=got[0]), answer=ANSWER)
    sequences = list(
        Assignment.objects.filter(annotator=annotator).values_list("sequence", flat=True)
    )
    assert sorted(sequences) == list(range(1, 6))


class _Deadlock(Exception):
    pgcode = "40P01"


def test_a_request_whose_transaction_postgresql_chose_to_break_a_deadlock_is_dealt_again(
    transactional_db, monkeypatch
):
    # Seen in a run under load: 20 workers starting batches at once, one got "deadlock detected".
    from django.db import OperationalError

    project = factories.ProjectFactory(annotators_per_item=1)
    factories.make_items(project, 2)
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    real = services._assignment_next
    calls = []

    def once_deadlocked(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("deadlock detected") from _Deadlock()
        return real(**kwargs)

    monkeypatch.setattr(services, "_assignment_next", once_deadlocked)
    assert services.assignment_next(project=project, annotator=user) is not None
    assert len(calls) == 2

    def always(**kwargs):  # a deadlock every time, or another error: raised, not hidden
        raise OperationalError("deadlock detected") from _Deadlock()

    monkeypatch.setattr(services, "_assignment_next", always)
    with pytest.raises(OperationalError, match="deadlock"):
        services.assignment_next(project=project, annotator=user)

    def other(**kwargs):
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(services, "_assignment_next", other)
    with pytest.raises(OperationalError, match="server closed"):
        services.assignment_next(project=project, annotator=user)


def _blocked_by(waiter_pid: int, holder_pid: int, *, timeout: float = 120) -> None:
    """Return once PostgreSQL backend ``waiter_pid`` waits for a lock ``holder_pid`` holds: polls
    ``pg_blocking_pids`` (a condition, not a sleep); fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT %s = ANY(pg_blocking_pids(%s))", [holder_pid, waiter_pid])
            if cursor.fetchone()[0]:
                return
    raise AssertionError(f"backend {waiter_pid} never waited for {holder_pid}")


def test_a_batch_start_waits_for_a_first_submit_on_its_item_without_a_deadlock(
    transactional_db, caplog
):
    # Issue 33, made deterministic. The submit holds its item's row (submitted_count) and, at
    # COMMIT, checks the deferred foreign key of the annotator's first counter row
    # (annotatoranswercounts → project: FOR KEY SHARE on the project row). The dealer holds the
    # project row while it locks the free items, this one among them. With FOR UPDATE on the
    # project row the two waited for each other until PostgreSQL rolled the dealer back.
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(annotators_per_item=2, crowd={"batch_size": 2})
    items = factories.make_items(project, 2)
    first, second = factories.UserFactory(), factories.UserFactory()
    for user in (first, second):
        factories.MembershipFactory(project=project, user=user, role="annotator")
    mine = services.assignment_next(project=project, annotator=first, start_batch=True)
    submitter, dealer = [], []
    submitted = threading.Event()
    ready = threading.Event()

    def submit():
        with transaction.atomic():  # commit only once the dealer waits for this item's row
            services.annotation_submit(assignment=mine, answer=ANSWER)
            submitter.append(_backend_pid())
            submitted.set()
            assert ready.wait(timeout=120)
            _blocked_by(dealer[0], submitter[0])

    def deal():
        assert submitted.wait(timeout=120)
        dealer.append(_backend_pid())
        ready.set()
        dealer.append(services.assignment_next(project=project, annotator=second, start_batch=True))

    with caplog.at_level(logging.WARNING, logger="annotation.services"):
        assert not at_once(lambda step: step(), [submit, deal])
    assert not [r for r in caplog.records if "deadlock" in r.getMessage()]
    theirs = Assignment.objects.filter(annotator=second, batch_id=dealer[1].batch_id)
    assert sorted(theirs.values_list("item_id", flat=True)) == sorted(i.pk for i in items)
    assert all(i.assigned_count == 2 for i in Item.objects.filter(project=project))


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]
