"""The database triggers that keep :class:`llm_judges.models.JudgeResultCounts` (issue 31).

The pages' data version (``agreement.reports.gather.judges_version``) counted every judge result
of a project on every request of the items list, the item browser and the dashboard (0.8-1.3 s
at 100k items). It now reads one counter row, kept here in the same transaction as the write,
whatever path writes (runs' ``INSERT … ON CONFLICT DO NOTHING``, a run claiming results,
retries deleting failed ones, item fixes and re-imports, bundles, the admin, cascade deletes):

- ``results``: the project's judge results;
- ``revision``: moves with every insert, change or delete of one (never back), so a result
  deleted and another written leave a different pair.

A result's project is its item's; a delete whose item is already gone (not Django's order, which
deletes the results first) falls back to its judge's project. The counter row is created by the
first insert (an upsert); deletes and updates only update it, so a project being deleted (its row
going first or last) never gets a new row.

PostgreSQL: statement-level triggers with transition tables (one counter update per statement,
as :mod:`annotation.counter_triggers.statement_level`), written once for this counter and the
external answers' (``annotation.counter_triggers.per_project``). SQLite (the embedded development
database): row-level triggers, same effect. Their bodies name ``annotation_item``: a migration
that rebuilds that table on SQLite wraps its operations in
``annotation.counter_triggers.around_sqlite_table_rebuild``, which drops and recreates every
trigger that names a counted table, these included; one that rebuilds
``llm_judges_judgeresult`` on SQLite wraps its operations in :func:`around_sqlite_table_rebuild`.

The SQL is never edited in place: a change is a new module and a new migration.
:func:`counts_rebuild` recomputes every project's counts from the rows (the migration's
backfill); ``manage.py recount`` calls :func:`results_recount` for each project it recounts
(registered in ``annotation.hooks.counter_rebuilds`` by this app's ``ready()``).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from annotation.counter_triggers.per_project import per_project_counter, project_recount

TABLE = "llm_judges_judgeresult"
COUNTER = per_project_counter(
    counter="judge result counter",
    table=TABLE,
    counts_table="llm_judges_judgeresultcounts",
    counted="results",
    owner_table="llm_judges_judge",
    owner_column="judge_id",
)
TRIGGERS = COUNTER.triggers
install, uninstall, counts_rebuild = COUNTER.install, COUNTER.uninstall, COUNTER.counts_rebuild


def _sqlite_drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        COUNTER.drop(schema_editor.connection)


def _sqlite_create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        COUNTER.create(schema_editor.connection)


def around_sqlite_table_rebuild(operations: list[Any]) -> list[Any]:
    """A migration's operations on ``llm_judges_judgeresult``, with these triggers dropped before
    and created again after on SQLite (which rebuilds the table and would lose them)."""
    return [
        migrations.RunPython(_sqlite_drop, _sqlite_create),
        *operations,
        migrations.RunPython(_sqlite_create, _sqlite_drop),
    ]


def results_recount(*, project_id: int) -> None:
    """Recompute one project's judge result count from the rows, moving its revision (a cached
    report is computed again once)."""
    from llm_judges.models import JudgeResult, JudgeResultCounts

    project_recount(
        rows=JudgeResult.objects.filter(item__project_id=project_id),
        counts=JudgeResultCounts,
        counted="results",
        project_id=project_id,
    )
