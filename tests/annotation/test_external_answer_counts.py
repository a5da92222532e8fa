"""The external answer counter (issue 31): the pages' data version reads a row kept by database
triggers instead of counting a project's external coders' answers, and every kind of write
(imports' upserts, updates, deletes, cascades) moves it."""

from __future__ import annotations

import io
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from agreement.reports.gather import data_version
from annotation.counter_triggers import external_answers
from annotation.models import ExternalAnnotation, ExternalAnswerCounts, ExternalCoder, Item
from annotation.selectors import external_answers_version
from studies.services.external_annotations import import_annotations
from tests import factories

pytestmark = pytest.mark.django_db


def _items(project, n, prefix="i"):
    return [
        Item.objects.create(
            project=project, external_id=f"{prefix}{k}", payload={"id": f"{prefix}{k}"}, position=k
        )
        for k in range(n)
    ]


def _answer(coder, item, label="agree"):
    return ExternalAnnotation(coder=coder, item=item, answer={"label": label})


@pytest.fixture
def coded():
    project = factories.ProjectFactory(task_type="stance", config={})
    items = _items(project, 4)
    coder = ExternalCoder.objects.create(project=project, name="mturk-1")
    ExternalAnnotation.objects.bulk_create([_answer(coder, item) for item in items[:3]])
    return project, items, coder


def _check_counter(project):
    """The counter equals a count of the rows."""
    counted = external_answers_version(project=project)[0]
    assert counted == ExternalAnnotation.objects.filter(item__project=project).count()


def test_a_bulk_insert_counts_and_moves_the_revision(coded):
    project, items, coder = coded
    _check_counter(project)
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.bulk_create([_answer(coder, items[3])])
    assert external_answers_version(project=project) == (4, before[1] + 1)
    _check_counter(project)


def test_an_upsert_replacing_answers_moves_the_revision_not_the_count(coded):
    """What an annotation import does (``bulk_create(update_conflicts=True)``): replaced rows
    fire the update trigger, new ones the insert trigger."""
    project, items, coder = coded
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.bulk_create(
        [_answer(coder, item, "disagree") for item in items],
        update_conflicts=True,
        unique_fields=["coder", "item"],
        update_fields=["answer"],
    )
    answers, revision = external_answers_version(project=project)
    assert answers == 4 and revision > before[1]
    _check_counter(project)


def test_an_insert_ignored_by_a_conflict_changes_nothing(coded):
    project, items, coder = coded
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.bulk_create([_answer(coder, items[0])], ignore_conflicts=True)
    assert external_answers_version(project=project) == before


def test_changing_an_answer_moves_the_revision(coded):
    project, items, _ = coded
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.filter(item=items[0]).update(answer={"label": "discuss"})
    assert external_answers_version(project=project) == (before[0], before[1] + 1)


def test_deleting_moves_the_revision_even_with_as_many_written_again(coded):
    project, items, coder = coded
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.filter(item=items[0]).delete()
    deleted = external_answers_version(project=project)
    assert deleted[0] == 2 and deleted != before
    ExternalAnnotation.objects.bulk_create([_answer(coder, items[0])])
    again = external_answers_version(project=project)
    assert again[0] == before[0] and again not in (before, deleted)
    _check_counter(project)


def test_deleting_an_item_or_a_coder_cascades_and_counts(coded):
    project, items, coder = coded
    items[0].delete()
    _check_counter(project)
    coder.delete()
    assert external_answers_version(project=project)[0] == 0


def test_another_projects_answers_leave_this_one_alone(coded):
    project, _, _ = coded
    other = factories.ProjectFactory(task_type="stance", config={})
    other_items = _items(other, 2, prefix="o")
    other_coder = ExternalCoder.objects.create(project=other, name="mturk-1")
    before = external_answers_version(project=project)
    ExternalAnnotation.objects.bulk_create([_answer(other_coder, item) for item in other_items])
    ExternalAnnotation.objects.filter(item=other_items[0]).update(answer={"label": "x"})
    ExternalAnnotation.objects.filter(item=other_items[1]).delete()
    assert external_answers_version(project=project) == before
    _check_counter(other)


def test_deleting_a_project_leaves_no_counter(coded):
    project, _, _ = coded
    project.delete()
    assert not ExternalAnswerCounts.objects.exists()


def test_an_import_moves_the_data_version_in_a_fixed_number_of_queries(
    project, items, django_assert_max_num_queries
):
    """The data version reads the counter row (one query), whatever the answers; a re-import of
    the same file replaces the answers and moves it again."""
    before = data_version(project)
    lines = "".join(
        f'{{"item": "{item.external_id}", "coder": "w1", "answer": {{"helpfulness": 40}}}}\n'
        for item in items
    )
    import_annotations(project=project, stream=io.BytesIO(lines.encode()), fmt="jsonl")
    first = data_version(project)
    assert first["external"][0] == 5 and first["answers"] == before["answers"] + 5
    import_annotations(project=project, stream=io.BytesIO(lines.encode()), fmt="jsonl")
    assert data_version(project)["external"] == [5, first["external"][1] + 5]
    with django_assert_max_num_queries(8) as counted:
        data_version(project)
    coder = ExternalCoder.objects.create(project=project, name="w2")
    ExternalAnnotation.objects.bulk_create([_answer(coder, item) for item in items])
    with django_assert_max_num_queries(len(counted.captured_queries)):
        assert data_version(project)["external"][0] == 10


def test_the_rebuild_and_recount_fix_a_wrong_counter(coded):
    project, _, _ = coded
    ExternalAnswerCounts.objects.filter(project=project).update(answers=99)
    before = external_answers_version(project=project)[1]
    external_answers.counts_rebuild()
    assert external_answers_version(project=project)[0] == 3
    assert external_answers_version(project=project)[1] > before
    ExternalAnswerCounts.objects.filter(project=project).delete()
    call_command("recount", "--project", project.slug, stdout=StringIO())
    assert external_answers_version(project=project)[0] == 3


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite table rebuilds only")
def test_a_sqlite_table_rebuild_sets_these_triggers_aside_and_back(coded):
    from annotation.counter_triggers import sqlite_triggers_create, sqlite_triggers_drop

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]

    def names():
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            return {name for (name,) in cursor.fetchall()}

    assert set(external_answers.TRIGGERS) <= names()
    sqlite_triggers_drop(None, editor)
    assert not set(external_answers.TRIGGERS) & names()
    sqlite_triggers_create(None, editor)
    assert set(external_answers.TRIGGERS) <= names()
    project, items, coder = coded
    ExternalAnnotation.objects.bulk_create([_answer(coder, items[3])])
    _check_counter(project)
