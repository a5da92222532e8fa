"""Database triggers for the dashboard's counters (issue 16), beside those of 0007.

What they keep, in the same transaction as the write, whatever path writes:

- ``Item.submitted_count``: the item's submitted assignments.
- ``AnnotatorAnswerCounts``: each annotator's submitted assignments in a project.
- ``ProjectAnswerCounts.complete_items``: regular items with ``annotators_per_item`` submitted
  assignments (kept by a trigger on the item's count, recomputed when N changes);
  ``annotations``: answer versions; ``annotations_revision``: moves with every insert, change
  or delete of an answer version.
- ``ProjectItemCounts.items_revision``: moves with every insert or delete of an item and every
  change of what a report reads of it (payload, prepared, gold, kind, group, external id,
  project, ``updated_at``), never with a reservation (``assigned_count``, ``is_full``).

Lock order on a submit stays: the assignment row, the project's answer counter (taken first by
the answer's insert), the annotator's counter, then the item. A reservation locks the item only
and touches none of these counters, so the two paths cannot wait on each other in a cycle.

PostgreSQL: PL/pgSQL functions, statement-level with transition tables for inserts, deletes
and the item and answer updates (one counter update per statement), row-level where a row moves
between states. SQLite (the embedded development database): row-level triggers, same effect.
"""

from annotation.counter_triggers import open_queue

# 0008 dropped these on SQLite (its table rebuilds would have broken them); created again by
# 0009 with its own.

POSTGRESQL = """
CREATE OR REPLACE FUNCTION annotation_assignment_submitted_insert() RETURNS trigger AS $$
BEGIN
    INSERT INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
    SELECT project_id, annotator_id, count(*) FROM new_rows WHERE state = 'submitted'
    GROUP BY project_id, annotator_id
    ON CONFLICT (project_id, annotator_id)
    DO UPDATE SET submitted = annotation_annotatoranswercounts.submitted + EXCLUDED.submitted;
    UPDATE annotation_item AS i SET submitted_count = i.submitted_count + d.n
    FROM (SELECT item_id, count(*) AS n FROM new_rows WHERE state = 'submitted' GROUP BY item_id) AS d
    WHERE i.id = d.item_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_submitted_insert AFTER INSERT ON annotation_assignment
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_assignment_submitted_insert();

CREATE OR REPLACE FUNCTION annotation_assignment_submitted_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_annotatoranswercounts AS c SET submitted = c.submitted - d.n
    FROM (
        SELECT project_id, annotator_id, count(*) AS n FROM old_rows WHERE state = 'submitted'
        GROUP BY project_id, annotator_id
    ) AS d
    WHERE c.project_id = d.project_id AND c.annotator_id = d.annotator_id;
    UPDATE annotation_item AS i SET submitted_count = i.submitted_count - d.n
    FROM (SELECT item_id, count(*) AS n FROM old_rows WHERE state = 'submitted' GROUP BY item_id) AS d
    WHERE i.id = d.item_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_submitted_delete AFTER DELETE ON annotation_assignment
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_assignment_submitted_delete();

CREATE OR REPLACE FUNCTION annotation_assignment_submitted_update() RETURNS trigger AS $$
BEGIN
    IF OLD.state = 'submitted' THEN
        UPDATE annotation_annotatoranswercounts SET submitted = submitted - 1
        WHERE project_id = OLD.project_id AND annotator_id = OLD.annotator_id;
    END IF;
    IF NEW.state = 'submitted' THEN
        INSERT INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
        VALUES (NEW.project_id, NEW.annotator_id, 1)
        ON CONFLICT (project_id, annotator_id)
        DO UPDATE SET submitted = annotation_annotatoranswercounts.submitted + 1;
    END IF;
    IF OLD.state = 'submitted' THEN
        UPDATE annotation_item SET submitted_count = submitted_count - 1 WHERE id = OLD.item_id;
    END IF;
    IF NEW.state = 'submitted' THEN
        UPDATE annotation_item SET submitted_count = submitted_count + 1 WHERE id = NEW.item_id;
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_submitted_update
    AFTER UPDATE OF state, project_id, annotator_id, item_id ON annotation_assignment
    FOR EACH ROW WHEN (
        (OLD.state IS DISTINCT FROM NEW.state OR OLD.project_id IS DISTINCT FROM NEW.project_id
         OR OLD.annotator_id IS DISTINCT FROM NEW.annotator_id
         OR OLD.item_id IS DISTINCT FROM NEW.item_id)
        AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    )
    EXECUTE FUNCTION annotation_assignment_submitted_update();

CREATE OR REPLACE FUNCTION annotation_item_is_complete(item annotation_item) RETURNS boolean AS $$
    SELECT item.kind = 'regular' AND item.submitted_count >= (
        SELECT annotators_per_item FROM projects_project WHERE id = item.project_id
    )
$$ LANGUAGE sql STABLE;

CREATE OR REPLACE FUNCTION annotation_item_complete_update() RETURNS trigger AS $$
DECLARE
    was boolean := annotation_item_is_complete(OLD);
    is_now boolean := annotation_item_is_complete(NEW);
BEGIN
    IF was AND (NOT is_now OR OLD.project_id <> NEW.project_id) THEN
        UPDATE annotation_projectanswercounts SET complete_items = complete_items - 1
        WHERE project_id = OLD.project_id;
    END IF;
    IF is_now AND (NOT was OR OLD.project_id <> NEW.project_id) THEN
        UPDATE annotation_projectanswercounts SET complete_items = complete_items + 1
        WHERE project_id = NEW.project_id;
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_complete_update
    AFTER UPDATE OF submitted_count, kind, project_id ON annotation_item
    FOR EACH ROW WHEN (
        OLD.submitted_count IS DISTINCT FROM NEW.submitted_count
        OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.project_id IS DISTINCT FROM NEW.project_id
    )
    EXECUTE FUNCTION annotation_item_complete_update();

CREATE OR REPLACE FUNCTION annotation_item_revision_insert() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts AS c SET items_revision = c.items_revision + d.n
    FROM (SELECT project_id, count(*) AS n FROM new_rows GROUP BY project_id) AS d
    WHERE c.project_id = d.project_id;
    UPDATE annotation_projectanswercounts AS c SET complete_items = c.complete_items + d.n
    FROM (
        SELECT r.project_id, count(*) AS n FROM new_rows AS r
        JOIN projects_project AS p ON p.id = r.project_id
        WHERE r.kind = 'regular' AND r.submitted_count >= p.annotators_per_item
        GROUP BY r.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_revision_insert AFTER INSERT ON annotation_item
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_revision_insert();

CREATE OR REPLACE FUNCTION annotation_item_revision_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts AS c SET items_revision = c.items_revision + d.n
    FROM (SELECT project_id, count(*) AS n FROM old_rows GROUP BY project_id) AS d
    WHERE c.project_id = d.project_id;
    UPDATE annotation_projectanswercounts AS c SET complete_items = c.complete_items - d.n
    FROM (
        SELECT r.project_id, count(*) AS n FROM old_rows AS r
        JOIN projects_project AS p ON p.id = r.project_id
        WHERE r.kind = 'regular' AND r.submitted_count >= p.annotators_per_item
        GROUP BY r.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_revision_delete AFTER DELETE ON annotation_item
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_revision_delete();

-- Transition tables cannot go with a column list, so this one sees every item update and
-- moves the revision only for rows whose report-relevant columns changed.
CREATE OR REPLACE FUNCTION annotation_item_revision_update() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts AS c SET items_revision = c.items_revision + d.n
    FROM (
        SELECT project_id, sum(n) AS n FROM (
            SELECT unnest(ARRAY[o.project_id, n.project_id]) AS project_id, 1 AS n
            FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
            WHERE n.updated_at IS DISTINCT FROM o.updated_at
               OR n.kind IS DISTINCT FROM o.kind OR n.project_id IS DISTINCT FROM o.project_id
               OR n.external_id IS DISTINCT FROM o.external_id OR n."group" IS DISTINCT FROM o."group"
               OR n.payload IS DISTINCT FROM o.payload OR n.prepared IS DISTINCT FROM o.prepared
               OR n.gold IS DISTINCT FROM o.gold
        ) AS changed GROUP BY project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_revision_update AFTER UPDATE ON annotation_item
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_revision_update();

CREATE OR REPLACE FUNCTION annotation_project_recomplete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts SET complete_items = (
        SELECT count(*) FROM annotation_item
        WHERE project_id = NEW.id AND kind = 'regular'
          AND submitted_count >= NEW.annotators_per_item
    ) WHERE project_id = NEW.id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_project_recomplete AFTER UPDATE OF annotators_per_item ON projects_project
    FOR EACH ROW WHEN (OLD.annotators_per_item IS DISTINCT FROM NEW.annotators_per_item)
    EXECUTE FUNCTION annotation_project_recomplete();

CREATE OR REPLACE FUNCTION annotation_annotation_counts_insert() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c
    SET annotations = c.annotations + d.n, annotations_revision = c.annotations_revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM new_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_annotation_counts_insert AFTER INSERT ON annotation_annotation
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_annotation_counts_insert();

CREATE OR REPLACE FUNCTION annotation_annotation_counts_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c
    SET annotations = c.annotations - d.n, annotations_revision = c.annotations_revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM old_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_annotation_counts_delete AFTER DELETE ON annotation_annotation
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_annotation_counts_delete();

CREATE OR REPLACE FUNCTION annotation_annotation_counts_update() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c
    SET annotations_revision = c.annotations_revision + d.n
    FROM (
        SELECT i.project_id, count(*) AS n FROM new_rows AS r
        JOIN annotation_item AS i ON i.id = r.item_id GROUP BY i.project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_annotation_counts_update AFTER UPDATE ON annotation_annotation
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_annotation_counts_update();
"""

TRIGGERS = {
    "annotation_assignment_submitted_insert": "annotation_assignment",
    "annotation_assignment_submitted_delete": "annotation_assignment",
    "annotation_assignment_submitted_update": "annotation_assignment",
    "annotation_item_complete_update": "annotation_item",
    "annotation_item_revision_insert": "annotation_item",
    "annotation_item_revision_delete": "annotation_item",
    "annotation_item_revision_update": "annotation_item",
    "annotation_project_recomplete": "projects_project",
    "annotation_annotation_counts_insert": "annotation_annotation",
    "annotation_annotation_counts_delete": "annotation_annotation",
    "annotation_annotation_counts_update": "annotation_annotation",
}

POSTGRESQL_DROP = "\n".join(
    [f"DROP TRIGGER IF EXISTS {name} ON {table};" for name, table in TRIGGERS.items()]
    + [f"DROP FUNCTION IF EXISTS {name}();" for name in TRIGGERS]
    + ["DROP FUNCTION IF EXISTS annotation_item_is_complete(annotation_item);"]
)


def _complete(row: str) -> str:
    return (
        f"({row}.kind = 'regular' AND {row}.submitted_count >= "
        f"(SELECT annotators_per_item FROM projects_project WHERE id = {row}.project_id))"
    )


ITEM_PROJECT = "(SELECT project_id FROM annotation_item WHERE id = {row}.item_id)"
ITEM_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}"
    for column in (
        "updated_at",
        "kind",
        "project_id",
        "external_id",
        '"group"',
        "payload",
        "prepared",
        "gold",
    )
)

SQLITE = [
    """CREATE TRIGGER annotation_assignment_submitted_insert AFTER INSERT ON annotation_assignment
    WHEN NEW.state = 'submitted'
    BEGIN
    INSERT OR IGNORE INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
        VALUES (NEW.project_id, NEW.annotator_id, 0);
    UPDATE annotation_annotatoranswercounts SET submitted = submitted + 1
    WHERE project_id = NEW.project_id AND annotator_id = NEW.annotator_id;
    UPDATE annotation_item SET submitted_count = submitted_count + 1 WHERE id = NEW.item_id;
    END""",
    """CREATE TRIGGER annotation_assignment_submitted_delete AFTER DELETE ON annotation_assignment
    WHEN OLD.state = 'submitted'
    BEGIN
    UPDATE annotation_annotatoranswercounts SET submitted = submitted - 1
    WHERE project_id = OLD.project_id AND annotator_id = OLD.annotator_id;
    UPDATE annotation_item SET submitted_count = submitted_count - 1 WHERE id = OLD.item_id;
    END""",
    """CREATE TRIGGER annotation_assignment_submitted_update
    AFTER UPDATE OF state, project_id, annotator_id, item_id ON annotation_assignment
    WHEN (OLD.state IS NOT NEW.state OR OLD.project_id IS NOT NEW.project_id
          OR OLD.annotator_id IS NOT NEW.annotator_id OR OLD.item_id IS NOT NEW.item_id)
      AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    BEGIN
    UPDATE annotation_annotatoranswercounts SET submitted = submitted - 1
    WHERE project_id = OLD.project_id AND annotator_id = OLD.annotator_id
      AND OLD.state = 'submitted';
    INSERT OR IGNORE INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
        SELECT NEW.project_id, NEW.annotator_id, 0 WHERE NEW.state = 'submitted';
    UPDATE annotation_annotatoranswercounts SET submitted = submitted + 1
    WHERE project_id = NEW.project_id AND annotator_id = NEW.annotator_id
      AND NEW.state = 'submitted';
    UPDATE annotation_item SET submitted_count = submitted_count - 1
    WHERE id = OLD.item_id AND OLD.state = 'submitted';
    UPDATE annotation_item SET submitted_count = submitted_count + 1
    WHERE id = NEW.item_id AND NEW.state = 'submitted';
    END""",
    f"""CREATE TRIGGER annotation_item_complete_update
    AFTER UPDATE OF submitted_count, kind, project_id ON annotation_item
    WHEN OLD.submitted_count IS NOT NEW.submitted_count OR OLD.kind IS NOT NEW.kind
      OR OLD.project_id IS NOT NEW.project_id
    BEGIN
    UPDATE annotation_projectanswercounts SET complete_items = complete_items - 1
    WHERE project_id = OLD.project_id AND {_complete("OLD")};
    UPDATE annotation_projectanswercounts SET complete_items = complete_items + 1
    WHERE project_id = NEW.project_id AND {_complete("NEW")};
    END""",
    f"""CREATE TRIGGER annotation_item_revision_insert AFTER INSERT ON annotation_item
    BEGIN
    UPDATE annotation_projectitemcounts SET items_revision = items_revision + 1
    WHERE project_id = NEW.project_id;
    UPDATE annotation_projectanswercounts SET complete_items = complete_items + 1
    WHERE project_id = NEW.project_id AND {_complete("NEW")};
    END""",
    f"""CREATE TRIGGER annotation_item_revision_delete AFTER DELETE ON annotation_item
    BEGIN
    UPDATE annotation_projectitemcounts SET items_revision = items_revision + 1
    WHERE project_id = OLD.project_id;
    UPDATE annotation_projectanswercounts SET complete_items = complete_items - 1
    WHERE project_id = OLD.project_id AND {_complete("OLD")};
    END""",
    f"""CREATE TRIGGER annotation_item_revision_update AFTER UPDATE ON annotation_item
    WHEN {ITEM_CHANGED}
    BEGIN
    UPDATE annotation_projectitemcounts SET items_revision = items_revision + 1
    WHERE project_id IN (OLD.project_id, NEW.project_id);
    END""",
    """CREATE TRIGGER annotation_project_recomplete
    AFTER UPDATE OF annotators_per_item ON projects_project
    WHEN OLD.annotators_per_item IS NOT NEW.annotators_per_item
    BEGIN
    UPDATE annotation_projectanswercounts SET complete_items = (
        SELECT count(*) FROM annotation_item
        WHERE project_id = NEW.id AND kind = 'regular'
          AND submitted_count >= NEW.annotators_per_item
    ) WHERE project_id = NEW.id;
    END""",
    f"""CREATE TRIGGER annotation_annotation_counts_insert AFTER INSERT ON annotation_annotation
    BEGIN
    UPDATE annotation_projectanswercounts
    SET annotations = annotations + 1, annotations_revision = annotations_revision + 1
    WHERE project_id = {ITEM_PROJECT.format(row="NEW")};
    END""",
    f"""CREATE TRIGGER annotation_annotation_counts_delete AFTER DELETE ON annotation_annotation
    BEGIN
    UPDATE annotation_projectanswercounts
    SET annotations = annotations - 1, annotations_revision = annotations_revision + 1
    WHERE project_id = {ITEM_PROJECT.format(row="OLD")};
    END""",
    f"""CREATE TRIGGER annotation_annotation_counts_update AFTER UPDATE ON annotation_annotation
    BEGIN
    UPDATE annotation_projectanswercounts SET annotations_revision = annotations_revision + 1
    WHERE project_id = {ITEM_PROJECT.format(row="NEW")};
    END""",
]

# What the triggers keep, computed afresh for the rows that exist now (``manage.py recount``
# does the same through ``annotation.services.counts_rebuild``). The items' counts first, before
# the item triggers exist.
BACKFILL_ITEMS = """UPDATE annotation_item SET submitted_count = (
    SELECT count(*) FROM annotation_assignment AS a
    WHERE a.item_id = annotation_item.id AND a.state = 'submitted'
) WHERE EXISTS (
    SELECT 1 FROM annotation_assignment AS a
    WHERE a.item_id = annotation_item.id AND a.state = 'submitted'
)"""
BACKFILL = [
    """INSERT INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
    SELECT project_id, annotator_id, count(*) FROM annotation_assignment
    WHERE state = 'submitted' GROUP BY project_id, annotator_id""",
    """UPDATE annotation_projectanswercounts SET
    complete_items = (
        SELECT count(*) FROM annotation_item AS i JOIN projects_project AS p ON p.id = i.project_id
        WHERE i.project_id = annotation_projectanswercounts.project_id AND i.kind = 'regular'
          AND i.submitted_count >= p.annotators_per_item
    ),
    annotations = (
        SELECT count(*) FROM annotation_annotation AS a JOIN annotation_item AS i ON i.id = a.item_id
        WHERE i.project_id = annotation_projectanswercounts.project_id
    )""",
    "UPDATE annotation_projectanswercounts SET annotations_revision = annotations",
    "UPDATE annotation_projectitemcounts SET items_revision = items",
]


def install(apps, schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(BACKFILL_ITEMS)
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL)
        elif connection.vendor == "sqlite":
            for statement in open_queue.SQLITE + SQLITE:
                cursor.execute(statement)
        else:  # pragma: no cover - Concord runs on PostgreSQL, SQLite for development
            raise RuntimeError(f"No dashboard counter triggers for {connection.vendor}.")
        for statement in BACKFILL:
            cursor.execute(statement)


def uninstall(apps, schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL_DROP)
        else:
            for name in [*TRIGGERS, *open_queue.SQLITE_TRIGGERS]:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute("DELETE FROM annotation_annotatoranswercounts")
