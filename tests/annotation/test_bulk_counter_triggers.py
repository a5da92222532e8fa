"""Bulk writes of answers in one statement keep every counter exact and rewrite each counter row
once per statement, not once per row (issue 34: a one-statement bulk write stalled for over five
minutes in a row-level trigger rewriting the project's single counter row).

The counters are checked against a fresh count (``tests/annotation/test_open_queue.py``'s
``kept`` and ``fresh``) after each bulk statement; on PostgreSQL, the rewrites of the counter
rows are read from ``pg_stat_xact_user_tables`` (this transaction's own statistics)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import Case, Value, When
from django.utils import timezone

from annotation.models import Annotation, Assignment, Item
from projects.models import Project
from tests import factories
from tests.annotation.test_open_queue import ANSWER, add_annotators, fresh, kept

# The only row-level triggers left on the tables a bulk write touches: BEFORE triggers setting
# the row's own is_full, which touch no other row.
ROW_LEVEL_ALLOWED = {"annotation_item_full_insert", "annotation_item_full_update"}


def updates_of(table: str) -> int:
    """Rows of ``table`` updated so far in this transaction (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = %s", [table])
        row = cursor.fetchone()
    return row[0] if row else 0


def reserve(project, items, annotators) -> list[Assignment]:
    """One reserved assignment per (item, annotator), written in bulk."""
    now = timezone.now()
    return Assignment.objects.bulk_create(
        Assignment(
            project=project,
            item=item,
            annotator=annotator,
            state="reserved",
            reserved_at=now,
            expires_at=now,
        )
        for item in items
        for annotator in annotators
    )


def test_no_counter_trigger_on_a_bulk_path_is_row_level(postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT t.tgname, c.relname, (t.tgtype & 1) = 1 AS per_row
            FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
            WHERE NOT t.tgisinternal AND c.relname IN (
                'annotation_assignment', 'annotation_item', 'annotation_annotation')"""
        )
        triggers = cursor.fetchall()
    per_row = {name for name, _, row in triggers if row}
    assert per_row == ROW_LEVEL_ALLOWED
    names = {name for name, _, _ in triggers}
    assert {"annotation_assignment_counts_moved", "annotation_item_counts_moved"} <= names


def test_submitting_many_assignments_in_one_statement_rewrites_each_counter_row_once(
    postgres, project
):
    items = factories.make_items(project, 60)
    annotators = add_annotators(project, 3)
    reserve(project, items, annotators)
    before = {t: updates_of(t) for t in ("annotation_projectanswercounts", "annotation_item")}
    annotator_rows = updates_of("annotation_annotatoranswercounts")
    moved = Assignment.objects.filter(project=project).update(
        state="submitted", submitted_at=timezone.now()
    )
    assert moved == 180
    # The project's answer counter: once for the submitted count, once for complete items (the
    # items' counts moved in one statement too); row-level it was 180 + 60 rewrites.
    assert (
        updates_of("annotation_projectanswercounts") - before["annotation_projectanswercounts"] == 2
    )
    assert updates_of("annotation_annotatoranswercounts") - annotator_rows <= 3
    assert updates_of("annotation_item") - before["annotation_item"] == 60  # once per item
    assert kept(project) == fresh(project)
    assert kept(project)["complete_items"] == 60 and kept(project)["submitted"] == 180


def test_mixed_bulk_moves_keep_every_counter_exact(project):
    """Runs on SQLite too (row-level there); on PostgreSQL through the statement-level ones."""
    other = factories.ProjectFactory(annotators_per_item=1)
    items = factories.make_items(project, 10)
    a, b, c = add_annotators(project, 3)
    reserve(project, items[:8], [a, b])
    Assignment.objects.filter(project=project, item__in=items[:6]).update(state="submitted")
    Annotation.objects.bulk_create(
        Annotation(assignment=x, item_id=x.item_id, annotator_id=x.annotator_id, answer=ANSWER)
        for x in Assignment.objects.filter(project=project, state="submitted")
    )
    assert kept(project) == fresh(project) and kept(project)["complete_items"] == 6
    # One statement: some back to reserved, some to another annotator, some unchanged.
    Assignment.objects.filter(project=project, item__in=items[:2], annotator=a).update(
        state="reserved"
    )
    Assignment.objects.filter(project=project, item__in=items[2:4], annotator=b).update(annotator=c)
    assert kept(project) == fresh(project) and kept(project)["complete_items"] == 4
    # Submitted assignments moved to other items in one statement.
    Assignment.objects.filter(project=project, annotator=c).update(
        item_id=Case(
            When(item_id=items[2].pk, then=Value(items[6].pk)),
            When(item_id=items[3].pk, then=Value(items[7].pk)),
        )
    )
    assert kept(project) == fresh(project)
    # Items: kinds changed and items moved to another project, each in one statement.
    Item.objects.filter(pk__in=[i.pk for i in items[2:5]]).update(kind="control")
    assert kept(project) == fresh(project)
    Item.objects.filter(pk__in=[items[8].pk, items[9].pk]).update(project=other)
    assert kept(project) == fresh(project) and kept(other) == fresh(other)
    # An update that moves nothing a counter reads changes no counter.
    counters = kept(project)
    Assignment.objects.filter(project=project).update(expires_at=timezone.now())
    Item.objects.filter(project=project).update(assigned_count=0)
    assert kept(project)["submitted"] == counters["submitted"]
    Project.objects.filter(pk=project.pk).update(annotators_per_item=1)
    assert kept(project) == fresh(project)


@pytest.mark.parametrize("statement", ["submit", "release"])
def test_a_one_row_submit_or_release_still_counts_exactly(project, statement):
    items = factories.make_items(project, 2)
    (a,) = add_annotators(project, 1)
    (assignment, _) = reserve(project, items, [a])
    Assignment.objects.filter(pk=assignment.pk).update(state="submitted")
    if statement == "release":
        Assignment.objects.filter(pk=assignment.pk).update(state="reserved")
    assert kept(project) == fresh(project)
