"""The database triggers that keep :class:`annotation.models.ExternalAnswerCounts` (issue 31).

The pages' data version (``agreement.reports.gather.data_version``) counted a project's external
coders' answers and read their latest ``updated_at`` on every request of the items list, the
item browser and the dashboard (130-180 ms with 600k of them). It now reads one counter row,
kept here in the same transaction as the write, whatever path writes (annotation imports'
upserts, Label Studio imports, bundles, the admin, cascade deletes of items, coders, projects):

- ``answers``: the project's external answers;
- ``revision``: moves with every insert, change or delete of one (never back), so an answer
  replaced by a re-import, or one deleted and another written, leaves a different pair.

An answer's project is its item's; a delete whose item is already gone falls back to its
coder's project. The counter row is created by the first insert (an upsert); deletes and updates
only update it, so a project being deleted never gets a new row.

PostgreSQL: statement-level triggers with transition tables (an import's upsert of 2,000 rows
moves the row once; ``INSERT … ON CONFLICT DO UPDATE`` fires the insert trigger with the rows it
inserted and the update trigger with those it replaced). SQLite (the embedded development
database): row-level triggers, same effect. The SQL is the judge result counter's, for another
table (``annotation.counter_triggers.per_project``). The SQLite bodies name ``annotation_item``, and the
table itself is a counted table (``annotation.counter_triggers.COUNTED_TABLES``): a migration
that rebuilds either on SQLite wraps its operations in ``around_sqlite_table_rebuild``.

The SQL is never edited in place: a change is a new module and a new migration.
:func:`counts_rebuild` recomputes every project's counts from the rows (the migration's
backfill); ``manage.py recount`` calls :func:`answers_recount` for each project it recounts.
"""

from __future__ import annotations

from annotation.counter_triggers.per_project import per_project_counter, project_recount

TABLE = "annotation_externalannotation"
COUNTER = per_project_counter(
    counter="external answer counter",
    table=TABLE,
    counts_table="annotation_externalanswercounts",
    counted="answers",
    owner_table="annotation_externalcoder",
    owner_column="coder_id",
)
TRIGGERS = COUNTER.triggers
install, uninstall, counts_rebuild = COUNTER.install, COUNTER.uninstall, COUNTER.counts_rebuild


def answers_recount(*, project_id: int) -> None:
    """Recompute one project's external answer count from the rows, moving its revision (a
    cached report is computed again once)."""
    from annotation.models import ExternalAnnotation, ExternalAnswerCounts

    project_recount(
        rows=ExternalAnnotation.objects.filter(item__project_id=project_id),
        counts=ExternalAnswerCounts,
        counted="answers",
        project_id=project_id,
    )
