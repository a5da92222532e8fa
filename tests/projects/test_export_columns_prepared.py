"""Export columns prepared on a worker (issue 34: argument structure's first export of 100k
answers ran at ~3k rows/s and loaded the scorer's model, ~650 MB, into the web process that
streamed it). A periodic task finds the projects whose answers, items or config changed since a
worker last prepared their columns (one query, from the counters triggers keep) and stores what
is missing or stale as an export would, so that the export after it only reads them: the same
bytes, nothing computed or written. A preparation never waits for an export (or
another preparation) writing the same project's columns."""

# ruff: noqa: F811  (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, Item
from projects.models import Project
from studies import celery_tasks
from studies.models import ReadyExportColumns
from studies.selectors.export_columns import projects_with_unprepared_columns
from studies.services.export_columns import WRITER_LOCK
from studies.services.exports import ColumnsPrepared, export_columns_prepare
from task_types.argument_structure.models import StoredMetrics
from tests import factories
from tests.llm_judges.test_worker import broker  # noqa: F401  (a fixture: a real broker)
from tests.llm_judges.worker import CeleryWorker, database_url, wait_for
from tests.projects.test_export_rows import citation_project  # noqa: F401  (a fixture)
from tests.projects.test_export_stored_columns import exported, made_anew
from tests.task_types.argument_structure.test_export_batches import (  # noqa: F401  (a fixture)
    answered_project,
    embedder,
)


@pytest.mark.django_db
def test_prepared_columns_are_what_the_export_then_only_reads(embedder, monkeypatch):
    project = answered_project(4)
    expected = {fmt: made_anew(project, fmt, "humans", monkeypatch) for fmt in ("jsonl", "csv")}
    StoredMetrics.objects.all().delete()  # stored by those exports: as after a bulk arrival
    embedder.calls.clear()
    done = export_columns_prepare(project=project)
    assert (done.answers, done.stored, done.busy) == (8, 8, False)
    current = Annotation.objects.filter(item__project=project, is_current=True)
    assert ReadyExportColumns.objects.filter(annotation__in=current).count() == 8
    assert StoredMetrics.objects.filter(annotation__in=current).count() == 8
    assert embedder.calls, "the preparation computed the metrics"
    embedder.calls.clear()
    for fmt in ("jsonl", "csv"):
        with CaptureQueriesContext(connection) as queries:
            assert exported(project, fmt) == expected[fmt]
        sql = [q["sql"] for q in queries.captured_queries]
        assert not any(q.startswith(("INSERT", "UPDATE")) for q in sql)
        assert not any("storedmetrics" in q for q in sql)
    assert embedder.calls == []  # the export called no model
    again = export_columns_prepare(project=project)  # nothing missing: nothing stored
    assert (again.answers, again.stored) == (8, 0)


@pytest.mark.django_db
def test_stale_columns_are_made_anew_by_the_next_preparation(embedder, monkeypatch):
    project = answered_project(2)
    export_columns_prepare(project=project)
    project.config = {**project.config, "note": "a changed config makes every key stale"}
    project.save(update_fields=["config"])
    expected = made_anew(project, "jsonl", "humans", monkeypatch)
    assert export_columns_prepare(project=project).stored == 4
    with CaptureQueriesContext(connection) as queries:
        assert exported(project, "jsonl") == expected
    assert not any(q["sql"].startswith("INSERT") for q in queries.captured_queries)


@pytest.mark.django_db
def test_a_task_type_that_stores_no_columns_is_left_alone(citation_project):
    assert Annotation.objects.filter(item__project=citation_project).exists()
    assert projects_with_unprepared_columns() == []
    assert export_columns_prepare(project=citation_project) == ColumnsPrepared(0, 0, False)
    assert not ReadyExportColumns.objects.exists()


@pytest.mark.django_db
def test_the_periodic_task_prepares_the_projects_changed_since_their_last_preparation(
    embedder, django_assert_num_queries
):
    prepared, unprepared = answered_project(2), answered_project(3)
    empty = factories.ProjectFactory(task_type="argument_structure", config={"mode": "edit"})
    export_columns_prepare(project=prepared)
    with django_assert_num_queries(1):  # one query, whatever the projects and their answers
        assert projects_with_unprepared_columns() == [unprepared.pk, empty.pk]
    # Celery runs eagerly in tests (no broker): the queued preparations run inline.
    assert celery_tasks.prepare_export_columns() == 2
    assert projects_with_unprepared_columns() == []
    current = Annotation.objects.filter(item__project=unprepared, is_current=True)
    assert ReadyExportColumns.objects.filter(annotation__in=current).count() == 6
    assert celery_tasks.prepare_export_columns() == 0
    schedule = settings.CELERY_BEAT_SCHEDULE["prepare-export-columns"]
    assert schedule["task"] == celery_tasks.prepare_export_columns.name
    assert schedule["schedule"] == settings.CONCORD_EXPORT_PREPARE_EVERY_SECONDS
    assert celery_tasks.prepare_project_export_columns(unprepared.pk + 1000) == "gone"


@pytest.mark.django_db
def test_a_new_answer_a_fixed_item_or_a_changed_config_has_the_project_prepared_again(
    embedder, monkeypatch
):
    project = answered_project(2)
    export_columns_prepare(project=project)
    assert projects_with_unprepared_columns() == []

    def fix_item() -> None:
        item = Item.objects.filter(project=project).order_by("pk").first()
        Item.objects.filter(pk=item.pk).update(payload={**item.payload, "claim": "Fixed."})

    def revise_answer() -> None:
        answer = Annotation.objects.filter(item__project=project).order_by("pk").first()
        Annotation.objects.filter(pk=answer.pk).update(time_spent_ms=1)

    changes = {
        "a changed config": lambda: Project.objects.get(pk=project.pk).save(),
        "a fixed item": fix_item,
        "a revised answer": revise_answer,
    }
    for what, change in changes.items():
        change()
        assert projects_with_unprepared_columns() == [project.pk], what
        expected = made_anew(project, "jsonl", "humans", monkeypatch)
        assert celery_tasks.prepare_project_export_columns(project.pk).endswith("answers stored")
        assert projects_with_unprepared_columns() == [], what
        with CaptureQueriesContext(connection) as queries:
            assert exported(project, "jsonl") == expected, what
        assert not any(q["sql"].startswith("INSERT") for q in queries.captured_queries), what


@pytest.mark.django_db(transaction=True)
def test_a_preparation_does_not_wait_for_another_writer_of_the_project(postgres, embedder):
    """Another connection holds the project's writer lock (an export storing its columns): the
    preparation returns at once, storing nothing; once that ends, it stores them all."""
    project = answered_project(3)
    held, release, outcome = threading.Event(), threading.Event(), {}

    def writer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)", [WRITER_LOCK, project.pk % 2**31]
                )
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(30)
        outcome["first"] = celery_tasks.prepare_project_export_columns(project.pk)
    finally:
        release.set()
        thread.join(30)
    assert outcome["first"] == "busy"
    assert not ReadyExportColumns.objects.exists()
    assert celery_tasks.prepare_project_export_columns(project.pk) == "6 of 6 answers stored"
    assert projects_with_unprepared_columns() == []
    assert Project.objects.filter(pk=project.pk).exists()


def test_a_real_worker_and_its_beat_prepare_the_columns(broker, tmp_path):
    """A Celery worker with its beat (every second here), the real scorer (MiniLM) loaded in
    the worker's process, and nothing asked of it: the answers' columns and metrics get stored,
    and the export after that stores nothing."""
    project = answered_project(3)
    worker = CeleryWorker(
        queue=broker,  # the judges' queue, where preparations go
        database_url=database_url(connection.settings_dict),
        redis_url=settings.REDIS_URL,
        env={"CONCORD_EXPORT_PREPARE_EVERY_SECONDS": "1"},
        args=("-B", "-s", str(tmp_path / "beat-schedule")),
    )
    try:
        worker.wait_ready()
        wait_for(
            lambda: not projects_with_unprepared_columns(),
            timeout=120,
            what="the worker to prepare the project's columns",
            worker=worker,
        )
    finally:
        worker.stop()
    assert any("studies.prepare_project_export_columns" in line for line in worker.lines)
    current = Annotation.objects.filter(item__project=project, is_current=True)
    assert StoredMetrics.objects.filter(annotation__in=current).count() == 6
    with CaptureQueriesContext(connection) as queries:
        text = exported(project, "csv")
    assert text.count("\n") == 7  # the header and six rows
    assert not any(q["sql"].startswith("INSERT") for q in queries.captured_queries)
