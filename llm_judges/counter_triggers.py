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
as :mod:`annotation.counter_triggers.statement_level`). SQLite (the embedded development
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

from annotation.counter_triggers.trigger_set import CounterTriggers

TABLE = "llm_judges_judgeresult"
TRIGGERS = (
    "llm_judges_judgeresult_counts_insert",
    "llm_judges_judgeresult_counts_delete",
    "llm_judges_judgeresult_counts_update",
)

POSTGRESQL = """
CREATE OR REPLACE FUNCTION llm_judges_judgeresult_counts_insert() RETURNS trigger AS $$
BEGIN
    INSERT INTO llm_judges_judgeresultcounts AS c (project_id, results, revision)
    SELECT i.project_id, count(*), count(*) FROM new_rows AS r
    JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET results = c.results + EXCLUDED.results, revision = c.revision + EXCLUDED.revision;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER llm_judges_judgeresult_counts_insert AFTER INSERT ON llm_judges_judgeresult
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION llm_judges_judgeresult_counts_insert();

CREATE OR REPLACE FUNCTION llm_judges_judgeresult_counts_delete() RETURNS trigger AS $$
BEGIN
    UPDATE llm_judges_judgeresultcounts AS c
    SET results = c.results - d.n, revision = c.revision + d.n
    FROM (
        SELECT COALESCE(i.project_id, j.project_id) AS project_id, count(*) AS n
        FROM old_rows AS r
        LEFT JOIN annotation_item AS i ON i.id = r.item_id
        LEFT JOIN llm_judges_judge AS j ON j.id = r.judge_id
        GROUP BY 1
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER llm_judges_judgeresult_counts_delete AFTER DELETE ON llm_judges_judgeresult
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION llm_judges_judgeresult_counts_delete();

CREATE OR REPLACE FUNCTION llm_judges_judgeresult_counts_update() RETURNS trigger AS $$
BEGIN
    UPDATE llm_judges_judgeresultcounts AS c SET revision = c.revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM new_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER llm_judges_judgeresult_counts_update AFTER UPDATE ON llm_judges_judgeresult
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION llm_judges_judgeresult_counts_update();
"""

_ITEM_PROJECT = "(SELECT project_id FROM annotation_item WHERE id = {row}.item_id)"
_JUDGE_PROJECT = "(SELECT project_id FROM llm_judges_judge WHERE id = {row}.judge_id)"

SQLITE = [
    f"""CREATE TRIGGER llm_judges_judgeresult_counts_insert AFTER INSERT ON {TABLE}
    BEGIN
    INSERT INTO llm_judges_judgeresultcounts (project_id, results, revision)
    VALUES ({_ITEM_PROJECT.format(row="NEW")}, 1, 1)
    ON CONFLICT (project_id) DO UPDATE SET results = results + 1, revision = revision + 1;
    END""",
    f"""CREATE TRIGGER llm_judges_judgeresult_counts_delete AFTER DELETE ON {TABLE}
    BEGIN
    UPDATE llm_judges_judgeresultcounts SET results = results - 1, revision = revision + 1
    WHERE project_id = COALESCE(
        {_ITEM_PROJECT.format(row="OLD")}, {_JUDGE_PROJECT.format(row="OLD")}
    );
    END""",
    f"""CREATE TRIGGER llm_judges_judgeresult_counts_update AFTER UPDATE ON {TABLE}
    BEGIN
    UPDATE llm_judges_judgeresultcounts SET revision = revision + 1
    WHERE project_id IN ({_ITEM_PROJECT.format(row="OLD")}, {_ITEM_PROJECT.format(row="NEW")});
    END""",
]

# The counts computed afresh from the rows (the migration's backfill and ``manage.py recount``);
# the revision starts at the count and only ever grows.
REBUILD = [
    """INSERT INTO llm_judges_judgeresultcounts (project_id, results, revision)
    SELECT i.project_id, count(*), count(*) FROM llm_judges_judgeresult AS r
    JOIN annotation_item AS i ON i.id = r.item_id WHERE true GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET results = EXCLUDED.results,
        revision = llm_judges_judgeresultcounts.revision + EXCLUDED.results + 1""",
    """UPDATE llm_judges_judgeresultcounts SET results = 0, revision = revision + 1
    WHERE results <> 0 AND NOT EXISTS (
        SELECT 1 FROM llm_judges_judgeresult AS r JOIN annotation_item AS i ON i.id = r.item_id
        WHERE i.project_id = llm_judges_judgeresultcounts.project_id
    )""",
]


COUNTER = CounterTriggers(
    counter="judge result counter",
    table=TABLE,
    triggers=TRIGGERS,
    postgresql=POSTGRESQL,
    sqlite=tuple(SQLITE),
    rebuild=tuple(REBUILD),
)
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
    from django.db.models import F

    from llm_judges.models import JudgeResult, JudgeResultCounts

    results = JudgeResult.objects.filter(item__project_id=project_id).count()
    moved = JudgeResultCounts.objects.filter(project_id=project_id).update(
        results=results, revision=F("revision") + 1
    )
    if not moved and results:
        JudgeResultCounts.objects.create(project_id=project_id, results=results, revision=results)
