"""Stored export columns (issue 34: argument structure's 100k export at 13.6k rows/s spent ~80 µs of
Python a row making the same columns at every export). A task type with
``export_columns_stored`` has each human answer's own columns stored as the export writes them
(``studies.models.ReadyExportColumns``) and passed through while their key is current. What an
export writes must not change by a byte: with and without stored columns, the first export (which
stores them) and the next (which reads them), JSONL and CSV, every coders option; a stale key
(the item fixed, the config changed, the version raised) makes them anew. Two exports of one
project at once never wait for each other's writes (PostgreSQL, real connections)."""

# ruff: noqa: F811  (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from annotation import task_types
from annotation.models import Annotation, Item
from projects.models import Project
from studies.models import ReadyExportColumns
from studies.services import exports
from studies.services.exports import CODERS, FORMATS, export_chunks
from task_types.argument_structure.models import StoredMetrics
from task_types.argument_structure.task import ArgumentStructure
from task_types.citation_recovery.task import CitationRecovery
from tests.projects.test_export_rows import citation_project  # noqa: F401  (a fixture)
from tests.task_types.argument_structure.test_export_batches import (  # noqa: F401  (a fixture)
    answered_project,
    embedder,
)


def exported(project: Project, fmt: str, coders: str = "humans") -> str:
    return "".join(
        export_chunks(project=Project.objects.get(pk=project.pk), fmt=fmt, coders=coders)
    )


def made_anew(project: Project, fmt: str, coders: str, monkeypatch) -> str:
    """The export as the task type's rows make it, nothing stored read or written."""
    with monkeypatch.context() as patched:
        task_type = type(task_types.get(project.task_type))
        patched.setattr(task_type, "export_columns_stored", False)
        return exported(project, fmt, coders)


@pytest.fixture
def stored_citations(monkeypatch):
    """Citation recovery with its columns stored (as argument structure has them)."""
    monkeypatch.setattr(CitationRecovery, "export_columns_stored", True)


def several_rows(item, annotation) -> list[dict]:
    """Rows of every shape the writers tell apart, by the answer's helpfulness: two rows with the
    same columns (text a CSV quotes, a formula, a dict and a list), one whose column repeats a
    shared one (``group``), none, and a row beside an empty one."""
    n = annotation.answer.get("helpfulness", 0) % 4
    if n == 0:
        return [
            {"part": 1, "note": 'a, "quoted"\nline', "cells": {"k": [1, 2.5]}},
            {"part": 2, "note": "=1+2", "cells": ["é", None, True]},
        ]
    if n == 1:
        return [{"part": 1, "group": "repeats a shared column"}]
    if n == 2:
        return []
    return [{"part": 3, "note": "x", "cells": None}, {}]


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("coders", CODERS)
def test_stored_columns_change_no_byte(
    citation_project, stored_citations, monkeypatch, fmt, coders
):
    project = citation_project
    expected = made_anew(project, fmt, coders, monkeypatch)
    first = exported(project, fmt, coders)  # stores them
    stored = ReadyExportColumns.objects.filter(annotation__item__project=project).exists()
    assert stored == (coders in ("humans", "all"))  # human answers' only
    second = exported(project, fmt, coders)  # reads them
    assert first == expected and second == expected


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
def test_several_rows_per_answer_and_unjoinable_ones_change_no_byte(
    citation_project,
    stored_citations,
    monkeypatch,
    fmt,
):
    monkeypatch.setattr(CitationRecovery, "exporter", lambda self, project: several_rows)
    expected = made_anew(citation_project, fmt, "all", monkeypatch)
    assert exported(citation_project, fmt, "all") == expected
    assert exported(citation_project, fmt, "all") == expected
    assert exported(citation_project, fmt, "humans") == made_anew(
        citation_project, fmt, "humans", monkeypatch
    )
    # Rows that cannot be joined to the shared columns as stored text are stored as such
    # (``rows`` empty: only the agreement key is served), and no row is stored as text.
    stored = {
        row.annotation_id: row
        for row in ReadyExportColumns.objects.filter(annotation__item__project=citation_project)
    }
    for annotation in Annotation.objects.filter(item__project=citation_project, is_current=True):
        kind = annotation.answer.get("helpfulness", 0) % 4
        row = stored[annotation.pk]
        assert row.rows == {0: 2, 1: None, 2: 0, 3: None}[kind]
        assert (row.jsonl == "") == (kind != 0)


@pytest.mark.django_db
def test_an_edited_item_a_changed_config_and_a_new_version_make_them_anew(
    embedder,
    monkeypatch,
):
    project = answered_project(3)
    exported(project, "jsonl")
    keys = dict(ReadyExportColumns.objects.values_list("annotation_id", "key"))
    assert len(keys) == 6

    item = Item.objects.filter(project=project).order_by("position").first()
    payload = {**item.payload, "label": "refutes"}  # a fix of the item's record
    Item.objects.filter(pk=item.pk).update(payload=payload)
    for fmt in FORMATS:
        assert exported(project, fmt) == made_anew(project, fmt, "humans", monkeypatch)
    assert '"label":"refutes"' in exported(project, "jsonl")
    now = dict(ReadyExportColumns.objects.values_list("annotation_id", "key"))
    changed = {a for a in keys if keys[a] != now[a]}
    assert changed == set(
        Annotation.objects.filter(item=item).values_list("id", flat=True)
    )  # only that item's answers

    Project.objects.filter(pk=project.pk).update(config={**project.config, "mode": "edit", "x": 1})
    exported(project, "csv")
    after_config = dict(ReadyExportColumns.objects.values_list("annotation_id", "key"))
    assert all(after_config[a] != now[a] for a in now)

    monkeypatch.setattr(ArgumentStructure, "export_columns_version", "raised")
    for fmt in FORMATS:
        assert exported(project, fmt) == made_anew(project, fmt, "humans", monkeypatch)
    after_version = dict(ReadyExportColumns.objects.values_list("annotation_id", "key"))
    assert all(after_version[a] != after_config[a] for a in now)


@pytest.mark.django_db
def test_stored_text_is_served_while_its_key_is_current(embedder):
    """The key decides: text stored under the current key is written as it is."""
    project = answered_project(2)
    exported(project, "jsonl")
    ReadyExportColumns.objects.update(jsonl=ReadyExportColumns.objects.first().jsonl)
    lines = exported(project, "jsonl").splitlines()
    assert len({line.split('"mode":', 1)[1] for line in lines}) == 1  # all the first's columns
    ReadyExportColumns.objects.update(key="0" * 64)  # stale: made anew, stored again
    assert exported(project, "jsonl").splitlines() != lines


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
def test_one_read_per_batch_and_one_write_per_batch_with_something_missing(
    embedder,
    monkeypatch,
    fmt,
):
    """Batches of 2 items (4 answers): the stored columns read in one query per batch, what is
    missing written in one per batch; when all are current, nothing else per batch (no stored
    metrics read, nothing written)."""
    monkeypatch.setattr(exports, "BATCH_ITEMS", 2)
    for items in (2, 8):
        project = answered_project(items)
        with CaptureQueriesContext(connection) as first:
            exported(project, fmt)
        stored = [q["sql"] for q in first.captured_queries if "readyexportcolumns" in q["sql"]]
        writes = [q for q in stored if q.startswith("INSERT")]
        assert len(writes) == items // 2
        with CaptureQueriesContext(connection) as second:
            exported(project, fmt)
        sql = [q["sql"] for q in second.captured_queries]
        reads = [q for q in sql if "readyexportcolumns" in q]
        assert len(reads) == items // 2 + (1 if fmt == "csv" else 0)  # + the header's names
        assert not any(q.startswith(("INSERT", "UPDATE")) for q in sql)
        assert not any("storedmetrics" in q for q in sql)


@pytest.mark.django_db
def test_deleting_an_answer_deletes_its_stored_columns(embedder):
    project = answered_project(2)
    exported(project, "csv")
    annotation = Annotation.objects.filter(item__project=project).first()
    assert ReadyExportColumns.objects.filter(annotation=annotation).exists()
    annotation.delete()
    assert not ReadyExportColumns.objects.filter(annotation_id=annotation.pk).exists()
    assert ReadyExportColumns.objects.count() == 3


def export_beside_a_writer(project: Project, monkeypatch) -> tuple[str, str]:
    """One export stops half-way (past its first batch of two items: what it stored there is
    uncommitted and locked, and it holds the project's writer lock); another export of the
    project, on its own connection, runs meanwhile and must end within a minute. Then the first
    one ends. Their texts, the first's and the other's."""
    monkeypatch.setattr(exports, "BATCH_ITEMS", 2)
    first = export_chunks(project=Project.objects.get(pk=project.pk), fmt="jsonl", rows=1)
    head = [next(first) for _ in range(5)]  # past the first batch: stored, not committed
    done: dict[str, object] = {}

    def other() -> None:
        try:
            done["text"] = exported(project, "jsonl")
        except BaseException as error:  # handed to the test's thread
            done["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(60)
    finished = not thread.is_alive()
    rest = list(first)  # the first export ends (and commits) either way
    thread.join(60)
    assert finished, "the second export waited for the first"
    assert "error" not in done, done.get("error")
    return "".join(head + rest), str(done["text"])


@pytest.mark.django_db(transaction=True)
def test_two_exports_of_a_project_at_once_do_not_wait_for_each_other(
    postgres,
    embedder,
    monkeypatch,
):
    """The other export computes what is missing for itself and stores nothing; both write
    what the code writes without stored columns."""
    project = answered_project(6)
    exported(project, "jsonl")  # the metrics stored: only the columns are missing below
    ReadyExportColumns.objects.all().delete()
    assert StoredMetrics.objects.count() == 12
    expected = made_anew(project, "jsonl", "humans", monkeypatch)
    assert export_beside_a_writer(project, monkeypatch) == (expected, expected)
    assert ReadyExportColumns.objects.count() == 12  # the first stored every answer's
    assert exported(project, "jsonl") == expected


@pytest.mark.django_db(transaction=True)
def test_an_export_does_not_wait_for_the_metrics_another_writer_is_storing(
    postgres,
    embedder,
    monkeypatch,
):
    """Nothing stored yet: the writer (an export, or a worker's preparation) holds its first
    batch's metrics and columns uncommitted. The other export computes the same answers'
    metrics and, not the writer, stores none of them: it never waits on the writer's rows
    (found by the outside probe: it waited on the metrics' INSERT)."""
    project = answered_project(6)
    expected = made_anew(project, "jsonl", "humans", monkeypatch)
    StoredMetrics.objects.all().delete()
    assert export_beside_a_writer(project, monkeypatch) == (expected, expected)
    assert StoredMetrics.objects.count() == 12
