"""The judge result counter (issue 31): the pages' data version reads a row kept by database
triggers instead of counting a project's judge results, and every kind of write moves it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.db import connection

from agreement.reports.gather import available_judges, data_version, judges_version
from annotation.models import Item
from llm_judges import counter_triggers
from llm_judges.models import Judge, JudgeResult, JudgeResultCounts, JudgeRun
from tests import factories

pytestmark = pytest.mark.django_db


def _items(project, n, prefix="i"):
    return [
        Item.objects.create(
            project=project, external_id=f"{prefix}{k}", payload={"id": f"{prefix}{k}"}, position=k
        )
        for k in range(n)
    ]


def _result(item, judge, status=JudgeResult.Status.OK, **fields):
    return JudgeResult(
        item=item,
        judge=judge,
        prompt_version="v1",
        status=status,
        answer={"label": "agree"} if status == JudgeResult.Status.OK else None,
        **fields,
    )


@pytest.fixture
def judged():
    project = factories.ProjectFactory(task_type="stance", config={})
    items = _items(project, 4)
    judge = Judge.objects.create(project=project, name="gpt", kind="llm", model="m")
    JudgeResult.objects.bulk_create([_result(item, judge) for item in items[:3]])
    return project, items, judge


def _counted(project):
    return list(
        JudgeResultCounts.objects.filter(project=project).values_list("results", flat=True)
    ) or [0]


def _check_counter(project):
    """The counter equals a count of the rows."""
    assert _counted(project) == [JudgeResult.objects.filter(item__project=project).count()]


def test_a_bulk_insert_counts_and_moves_the_key(judged):
    project, items, judge = judged
    _check_counter(project)
    before = judges_version(project)
    JudgeResult.objects.bulk_create([_result(items[3], judge)])
    assert judges_version(project) != before
    _check_counter(project)


def test_an_insert_ignored_by_a_conflict_changes_nothing(judged):
    project, items, judge = judged
    before = judges_version(project)
    JudgeResult.objects.bulk_create([_result(items[0], judge)], ignore_conflicts=True)
    assert judges_version(project) == before
    _check_counter(project)


def test_a_single_create_moves_the_key(judged):
    project, items, judge = judged
    before = judges_version(project)
    _result(items[3], judge).save()
    assert judges_version(project) != before
    _check_counter(project)


def test_changing_a_result_moves_the_key(judged):
    project, items, judge = judged
    before = judges_version(project)
    result = JudgeResult.objects.get(item=items[0])
    result.answer = {"label": "disagree"}
    result.save()
    after_save = judges_version(project)
    assert after_save != before
    JudgeResult.objects.filter(item=items[1]).update(status=JudgeResult.Status.FAILED)
    assert judges_version(project) != after_save
    _check_counter(project)


def test_a_run_claiming_results_moves_the_key(judged):
    project, items, judge = judged
    run = JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1")
    before = judges_version(project)
    JudgeResult.objects.filter(item__in=items).update(run=run)
    assert judges_version(project) != before


def test_deleting_results_moves_the_key_even_with_as_many_written_again(judged):
    project, items, judge = judged
    before = judges_version(project)
    JudgeResult.objects.filter(item=items[0]).delete()
    deleted = judges_version(project)
    assert deleted != before
    _check_counter(project)
    JudgeResult.objects.bulk_create([_result(items[0], judge)])
    again = judges_version(project)
    assert again not in (before, deleted)  # as many results as before, yet another key
    _check_counter(project)


def test_deleting_an_item_deletes_its_results_and_moves_the_key(judged):
    project, items, _ = judged
    before = judges_version(project)
    items[0].delete()
    assert judges_version(project) != before
    _check_counter(project)


def test_a_judges_prompt_change_moves_the_key(judged):
    project, _, judge = judged
    before = judges_version(project)
    judge.prompt_version = "v2"
    judge.save()
    assert judges_version(project) != before


def test_the_data_version_moves_with_a_judge_result(judged):
    project, items, judge = judged
    before = data_version(project)
    JudgeResult.objects.bulk_create([_result(items[3], judge)])
    assert data_version(project) != before


def test_another_projects_results_leave_this_key_alone(judged):
    project, _, _ = judged
    other = factories.ProjectFactory(task_type="stance", config={})
    other_items = _items(other, 2, prefix="o")
    other_judge = Judge.objects.create(project=other, name="gpt", kind="llm", model="m")
    before = judges_version(project)
    JudgeResult.objects.bulk_create([_result(item, other_judge) for item in other_items])
    JudgeResult.objects.filter(item=other_items[0]).update(status=JudgeResult.Status.FAILED)
    JudgeResult.objects.filter(item=other_items[1]).delete()
    assert judges_version(project) == before
    _check_counter(other)


def test_deleting_a_project_with_results_leaves_no_counter(judged):
    project, _, _ = judged
    project.delete()
    assert not JudgeResultCounts.objects.exists()


def test_the_version_is_one_query_whatever_the_results(judged, django_assert_num_queries):
    project, _, _ = judged
    with django_assert_num_queries(1):
        judges_version(project)
    empty = factories.ProjectFactory(task_type="stance", config={})
    with django_assert_num_queries(1):
        assert judges_version(empty) == [0, 0, None, 0, None]


def test_available_judges_are_those_with_a_parsed_answer(judged):
    project, items, judge = judged
    silent = Judge.objects.create(project=project, name="silent", kind="llm", model="m")
    JudgeResult.objects.bulk_create([_result(items[3], silent, status=JudgeResult.Status.FAILED)])
    assert available_judges(project) == [judge.name]


def test_the_rebuild_recounts_from_the_rows_and_moves_the_revision(judged):
    project, _, _ = judged
    JudgeResultCounts.objects.filter(project=project).update(results=99)
    before = JudgeResultCounts.objects.get(project=project).revision
    counter_triggers.counts_rebuild()
    row = JudgeResultCounts.objects.get(project=project)
    assert row.results == 3 and row.revision > before


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite table rebuilds only")
def test_a_sqlite_table_rebuild_sets_these_triggers_aside_and_back(judged):
    from annotation.counter_triggers import sqlite_triggers_create, sqlite_triggers_drop

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]

    def names():
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            return {name for (name,) in cursor.fetchall()}

    assert set(counter_triggers.TRIGGERS) <= names()
    sqlite_triggers_drop(None, editor)
    assert not set(counter_triggers.TRIGGERS) & names()
    sqlite_triggers_create(None, editor)
    assert set(counter_triggers.TRIGGERS) <= names()
    project, items, judge = judged
    before = judges_version(project)
    JudgeResult.objects.bulk_create([_result(items[3], judge)])
    assert judges_version(project) != before


def test_recount_rebuilds_the_judge_result_counter_with_the_others(judged):
    from django.core.management import call_command

    project, _, _ = judged
    JudgeResultCounts.objects.filter(project=project).update(results=99)
    before = judges_version(project)
    call_command("recount", "--project", project.slug, stdout=StringIO())
    row = JudgeResultCounts.objects.get(project=project)
    assert row.results == 3 and judges_version(project) != before
    JudgeResultCounts.objects.filter(project=project).delete()
    call_command("recount", "--project", project.slug, stdout=StringIO())
    assert JudgeResultCounts.objects.get(project=project).results == 3
