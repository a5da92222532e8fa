"""The SQL of a per-project count of one table's rows and its revision, kept by triggers: the
external answers (``annotation.counter_triggers.external_answers``) and the judge results
(``llm_judges.counter_triggers``) are counted alike, so their SQL is written here once.

A row's project is its item's (``item_id``); a delete whose item is already gone falls back to
the project of its owner (``owner_column`` into ``owner_table``: the external coder, the judge).
The counter row (``counts_table``: ``project_id``, the count ``counted``, ``revision``) is
created by the first insert (an upsert); deletes and updates only update it, so a project being
deleted never gets a new row. The revision moves with every insert, change or delete (never
back). PostgreSQL: statement-level triggers with transition tables; SQLite: row-level
triggers, same effect. Triggers and their functions are named ``<table>_counts_<event>``.

What a module generates here is what its migration installs: the text must not change for an
existing counter (a change is a new module and a new migration)."""

from __future__ import annotations

from typing import Any

from annotation.counter_triggers.trigger_set import CounterTriggers


def per_project_counter(
    *,
    counter: str,
    table: str,
    counts_table: str,
    counted: str,
    owner_table: str,
    owner_column: str,
) -> CounterTriggers:
    """The triggers keeping ``counts_table`` for the rows of ``table`` (see the module)."""
    names = _Names(table, counts_table, counted, owner_table, owner_column)
    return CounterTriggers(
        counter=counter,
        table=table,
        triggers=(names.insert, names.delete, names.update),
        postgresql=_postgresql(names),
        sqlite=_sqlite(names),
        rebuild=_rebuild(names),
    )


class _Names:
    """The tables and columns a counter's SQL names, and its triggers' names."""

    def __init__(
        self, table: str, counts_table: str, counted: str, owner_table: str, owner_column: str
    ) -> None:
        self.table, self.counts_table, self.counted = table, counts_table, counted
        self.owner_table, self.owner_column = owner_table, owner_column
        self.insert, self.delete, self.update = (
            f"{table}_counts_{event}" for event in ("insert", "delete", "update")
        )


def _postgresql(n: _Names) -> str:
    table, counts_table, counted = n.table, n.counts_table, n.counted
    return f"""
CREATE OR REPLACE FUNCTION {n.insert}() RETURNS trigger AS $$
BEGIN
    INSERT INTO {counts_table} AS c (project_id, {counted}, revision)
    SELECT i.project_id, count(*), count(*) FROM new_rows AS r
    JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET {counted} = c.{counted} + EXCLUDED.{counted}, revision = c.revision + EXCLUDED.revision;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER {n.insert}
    AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {n.insert}();

CREATE OR REPLACE FUNCTION {n.delete}() RETURNS trigger AS $$
BEGIN
    UPDATE {counts_table} AS c
    SET {counted} = c.{counted} - d.n, revision = c.revision + d.n
    FROM (
        SELECT COALESCE(i.project_id, k.project_id) AS project_id, count(*) AS n
        FROM old_rows AS r
        LEFT JOIN annotation_item AS i ON i.id = r.item_id
        LEFT JOIN {n.owner_table} AS k ON k.id = r.{n.owner_column}
        GROUP BY 1
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER {n.delete}
    AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {n.delete}();

CREATE OR REPLACE FUNCTION {n.update}() RETURNS trigger AS $$
BEGIN
    UPDATE {counts_table} AS c SET revision = c.revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM new_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER {n.update}
    AFTER UPDATE ON {table}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {n.update}();
"""


def _sqlite(n: _Names) -> tuple[str, ...]:
    table, counts_table, counted = n.table, n.counts_table, n.counted
    item_project = "(SELECT project_id FROM annotation_item WHERE id = {row}.item_id)"
    owner_project = f"(SELECT project_id FROM {n.owner_table} WHERE id = {{row}}.{n.owner_column})"
    return (
        f"""CREATE TRIGGER {n.insert} AFTER INSERT ON {table}
    BEGIN
    INSERT INTO {counts_table} (project_id, {counted}, revision)
    VALUES ({item_project.format(row="NEW")}, 1, 1)
    ON CONFLICT (project_id) DO UPDATE SET {counted} = {counted} + 1, revision = revision + 1;
    END""",
        f"""CREATE TRIGGER {n.delete} AFTER DELETE ON {table}
    BEGIN
    UPDATE {counts_table} SET {counted} = {counted} - 1, revision = revision + 1
    WHERE project_id = COALESCE(
        {item_project.format(row="OLD")}, {owner_project.format(row="OLD")}
    );
    END""",
        f"""CREATE TRIGGER {n.update} AFTER UPDATE ON {table}
    BEGIN
    UPDATE {counts_table} SET revision = revision + 1
    WHERE project_id IN ({item_project.format(row="OLD")}, {item_project.format(row="NEW")});
    END""",
    )


def _rebuild(n: _Names) -> tuple[str, ...]:
    """The counts computed afresh from the rows (the migration's backfill); the revision starts
    at the count and only ever grows."""
    table, counts_table, counted = n.table, n.counts_table, n.counted
    return (
        f"""INSERT INTO {counts_table} (project_id, {counted}, revision)
    SELECT i.project_id, count(*), count(*) FROM {table} AS r
    JOIN annotation_item AS i ON i.id = r.item_id WHERE true GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET {counted} = EXCLUDED.{counted},
        revision = {counts_table}.revision + EXCLUDED.{counted} + 1""",
        f"""UPDATE {counts_table} SET {counted} = 0, revision = revision + 1
    WHERE {counted} <> 0 AND NOT EXISTS (
        SELECT 1 FROM {table} AS r
        JOIN annotation_item AS i ON i.id = r.item_id
        WHERE i.project_id = {counts_table}.project_id
    )""",
    )


def project_recount(*, rows: Any, counts: Any, counted: str, project_id: int) -> None:
    """Recompute one project's count from its rows (``rows``: a queryset of them), moving the
    revision of its counter row (``counts``: the counter model) so that a cached report is
    computed again once; the row is created where there is none and rows to count."""
    from django.db.models import F

    found = rows.count()
    moved = counts.objects.filter(project_id=project_id).update(
        **{counted: found, "revision": F("revision") + 1}
    )
    if not moved and found:
        counts.objects.create(project_id=project_id, **{counted: found, "revision": found})
