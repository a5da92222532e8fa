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
database): row-level triggers, same effect. The SQLite bodies name ``annotation_item``, and the
table itself is a counted table (``annotation.counter_triggers.COUNTED_TABLES``): a migration
that rebuilds either on SQLite wraps its operations in ``around_sqlite_table_rebuild``.

The SQL is never edited in place: a change is a new module and a new migration.
:func:`counts_rebuild` recomputes every project's counts from the rows (the migration's
backfill); ``manage.py recount`` calls :func:`answers_recount` for each project it recounts.
"""

from __future__ import annotations

from annotation.counter_triggers.trigger_set import CounterTriggers

TABLE = "annotation_externalannotation"
TRIGGERS = (
    "annotation_externalannotation_counts_insert",
    "annotation_externalannotation_counts_delete",
    "annotation_externalannotation_counts_update",
)

POSTGRESQL = """
CREATE OR REPLACE FUNCTION annotation_externalannotation_counts_insert() RETURNS trigger AS $$
BEGIN
    INSERT INTO annotation_externalanswercounts AS c (project_id, answers, revision)
    SELECT i.project_id, count(*), count(*) FROM new_rows AS r
    JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET answers = c.answers + EXCLUDED.answers, revision = c.revision + EXCLUDED.revision;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_externalannotation_counts_insert
    AFTER INSERT ON annotation_externalannotation
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_externalannotation_counts_insert();

CREATE OR REPLACE FUNCTION annotation_externalannotation_counts_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_externalanswercounts AS c
    SET answers = c.answers - d.n, revision = c.revision + d.n
    FROM (
        SELECT COALESCE(i.project_id, k.project_id) AS project_id, count(*) AS n
        FROM old_rows AS r
        LEFT JOIN annotation_item AS i ON i.id = r.item_id
        LEFT JOIN annotation_externalcoder AS k ON k.id = r.coder_id
        GROUP BY 1
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_externalannotation_counts_delete
    AFTER DELETE ON annotation_externalannotation
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_externalannotation_counts_delete();

CREATE OR REPLACE FUNCTION annotation_externalannotation_counts_update() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_externalanswercounts AS c SET revision = c.revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM new_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_externalannotation_counts_update
    AFTER UPDATE ON annotation_externalannotation
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_externalannotation_counts_update();
"""

_ITEM_PROJECT = "(SELECT project_id FROM annotation_item WHERE id = {row}.item_id)"
_CODER_PROJECT = "(SELECT project_id FROM annotation_externalcoder WHERE id = {row}.coder_id)"

SQLITE = [
    f"""CREATE TRIGGER annotation_externalannotation_counts_insert AFTER INSERT ON {TABLE}
    BEGIN
    INSERT INTO annotation_externalanswercounts (project_id, answers, revision)
    VALUES ({_ITEM_PROJECT.format(row="NEW")}, 1, 1)
    ON CONFLICT (project_id) DO UPDATE SET answers = answers + 1, revision = revision + 1;
    END""",
    f"""CREATE TRIGGER annotation_externalannotation_counts_delete AFTER DELETE ON {TABLE}
    BEGIN
    UPDATE annotation_externalanswercounts SET answers = answers - 1, revision = revision + 1
    WHERE project_id = COALESCE(
        {_ITEM_PROJECT.format(row="OLD")}, {_CODER_PROJECT.format(row="OLD")}
    );
    END""",
    f"""CREATE TRIGGER annotation_externalannotation_counts_update AFTER UPDATE ON {TABLE}
    BEGIN
    UPDATE annotation_externalanswercounts SET revision = revision + 1
    WHERE project_id IN ({_ITEM_PROJECT.format(row="OLD")}, {_ITEM_PROJECT.format(row="NEW")});
    END""",
]

# The counts computed afresh from the rows (the migration's backfill); the revision starts at
# the count and only ever grows.
REBUILD = [
    """INSERT INTO annotation_externalanswercounts (project_id, answers, revision)
    SELECT i.project_id, count(*), count(*) FROM annotation_externalannotation AS r
    JOIN annotation_item AS i ON i.id = r.item_id WHERE true GROUP BY i.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET answers = EXCLUDED.answers,
        revision = annotation_externalanswercounts.revision + EXCLUDED.answers + 1""",
    """UPDATE annotation_externalanswercounts SET answers = 0, revision = revision + 1
    WHERE answers <> 0 AND NOT EXISTS (
        SELECT 1 FROM annotation_externalannotation AS r
        JOIN annotation_item AS i ON i.id = r.item_id
        WHERE i.project_id = annotation_externalanswercounts.project_id
    )""",
]


COUNTER = CounterTriggers(
    counter="external answer counter",
    table=TABLE,
    triggers=TRIGGERS,
    postgresql=POSTGRESQL,
    sqlite=tuple(SQLITE),
    rebuild=tuple(REBUILD),
)
install, uninstall, counts_rebuild = COUNTER.install, COUNTER.uninstall, COUNTER.counts_rebuild


def answers_recount(*, project_id: int) -> None:
    """Recompute one project's external answer count from the rows, moving its revision (a
    cached report is computed again once)."""
    from django.db.models import F

    from annotation.models import ExternalAnnotation, ExternalAnswerCounts

    answers = ExternalAnnotation.objects.filter(item__project_id=project_id).count()
    moved = ExternalAnswerCounts.objects.filter(project_id=project_id).update(
        answers=answers, revision=F("revision") + 1
    )
    if not moved and answers:
        ExternalAnswerCounts.objects.create(
            project_id=project_id, answers=answers, revision=answers
        )
