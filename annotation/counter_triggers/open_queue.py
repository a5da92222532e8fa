"""Database triggers that keep ``Item.is_full`` and the project counters (issue 16).

Triggers, not Python: every writer keeps them right, whatever path it takes (the workflow's
reservations and releases, imports' bulk inserts, bundles setting ``assigned_count``, an admin
changing ``annotators_per_item``, a cascade delete), in the same transaction as the write.

- ``is_full``: recomputed on an item whenever its count, kind or project is written, and on all
  of a project's items when its ``annotators_per_item`` changes.
- ``ProjectItemCounts``: statement-level on insert and delete (one counter update per bulk
  statement, not per row), row-level on a change of kind or project.
- ``ProjectAnswerCounts``: the same on assignments, counting those in state ``submitted``.
- A new project gets both counter rows; a counter update for a project being deleted finds no row
  and changes nothing.

PostgreSQL uses PL/pgSQL functions and transition tables; SQLite (the embedded development
database) row-level triggers with the same effect.
"""

POSTGRESQL = """
CREATE OR REPLACE FUNCTION annotation_item_set_full() RETURNS trigger AS $$
BEGIN
    NEW.is_full := NEW.kind = 'regular' AND NEW.assigned_count >= (
        SELECT annotators_per_item FROM projects_project WHERE id = NEW.project_id
    );
    RETURN NEW;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_full_insert BEFORE INSERT ON annotation_item
    FOR EACH ROW WHEN (NEW.assigned_count > 0 OR NEW.is_full)
    EXECUTE FUNCTION annotation_item_set_full();
CREATE TRIGGER annotation_item_full_update
    BEFORE UPDATE OF assigned_count, kind, project_id, is_full ON annotation_item
    FOR EACH ROW EXECUTE FUNCTION annotation_item_set_full();

CREATE OR REPLACE FUNCTION annotation_project_refill() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_item SET is_full = (assigned_count >= NEW.annotators_per_item)
    WHERE project_id = NEW.id AND kind = 'regular'
      AND is_full <> (assigned_count >= NEW.annotators_per_item);
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_project_refill AFTER UPDATE OF annotators_per_item ON projects_project
    FOR EACH ROW WHEN (OLD.annotators_per_item IS DISTINCT FROM NEW.annotators_per_item)
    EXECUTE FUNCTION annotation_project_refill();

CREATE OR REPLACE FUNCTION annotation_project_counts_create() RETURNS trigger AS $$
BEGIN
    INSERT INTO annotation_projectitemcounts (project_id, items, regular_items)
        VALUES (NEW.id, 0, 0) ON CONFLICT DO NOTHING;
    INSERT INTO annotation_projectanswercounts (project_id, submitted)
        VALUES (NEW.id, 0) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_project_counts_create AFTER INSERT ON projects_project
    FOR EACH ROW EXECUTE FUNCTION annotation_project_counts_create();

CREATE OR REPLACE FUNCTION annotation_item_counts_insert() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts AS c
    SET items = c.items + d.items, regular_items = c.regular_items + d.regular_items
    FROM (
        SELECT project_id, count(*) AS items, count(*) FILTER (WHERE kind = 'regular') AS regular_items
        FROM new_rows GROUP BY project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_counts_insert AFTER INSERT ON annotation_item
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_counts_insert();

CREATE OR REPLACE FUNCTION annotation_item_counts_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts AS c
    SET items = c.items - d.items, regular_items = c.regular_items - d.regular_items
    FROM (
        SELECT project_id, count(*) AS items, count(*) FILTER (WHERE kind = 'regular') AS regular_items
        FROM old_rows GROUP BY project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_counts_delete AFTER DELETE ON annotation_item
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_counts_delete();

CREATE OR REPLACE FUNCTION annotation_item_counts_update() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectitemcounts
    SET items = items - 1, regular_items = regular_items - (OLD.kind = 'regular')::int
    WHERE project_id = OLD.project_id;
    UPDATE annotation_projectitemcounts
    SET items = items + 1, regular_items = regular_items + (NEW.kind = 'regular')::int
    WHERE project_id = NEW.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_item_counts_update AFTER UPDATE OF kind, project_id ON annotation_item
    FOR EACH ROW WHEN (OLD.kind IS DISTINCT FROM NEW.kind OR OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION annotation_item_counts_update();

CREATE OR REPLACE FUNCTION annotation_assignment_counts_insert() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c SET submitted = c.submitted + d.submitted
    FROM (
        SELECT project_id, count(*) AS submitted FROM new_rows
        WHERE state = 'submitted' GROUP BY project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_counts_insert AFTER INSERT ON annotation_assignment
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_assignment_counts_insert();

CREATE OR REPLACE FUNCTION annotation_assignment_counts_delete() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c SET submitted = c.submitted - d.submitted
    FROM (
        SELECT project_id, count(*) AS submitted FROM old_rows
        WHERE state = 'submitted' GROUP BY project_id
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_counts_delete AFTER DELETE ON annotation_assignment
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_assignment_counts_delete();

CREATE OR REPLACE FUNCTION annotation_assignment_counts_update() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts SET submitted = submitted - 1
    WHERE project_id = OLD.project_id AND OLD.state = 'submitted';
    UPDATE annotation_projectanswercounts SET submitted = submitted + 1
    WHERE project_id = NEW.project_id AND NEW.state = 'submitted';
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_assignment_counts_update
    AFTER UPDATE OF state, project_id ON annotation_assignment
    FOR EACH ROW WHEN (
        (OLD.state IS DISTINCT FROM NEW.state OR OLD.project_id IS DISTINCT FROM NEW.project_id)
        AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    )
    EXECUTE FUNCTION annotation_assignment_counts_update();
"""

POSTGRESQL_DROP = """
DROP TRIGGER IF EXISTS annotation_item_full_insert ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_full_update ON annotation_item;
DROP TRIGGER IF EXISTS annotation_project_refill ON projects_project;
DROP TRIGGER IF EXISTS annotation_project_counts_create ON projects_project;
DROP TRIGGER IF EXISTS annotation_item_counts_insert ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_counts_delete ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_counts_update ON annotation_item;
DROP TRIGGER IF EXISTS annotation_assignment_counts_insert ON annotation_assignment;
DROP TRIGGER IF EXISTS annotation_assignment_counts_delete ON annotation_assignment;
DROP TRIGGER IF EXISTS annotation_assignment_counts_update ON annotation_assignment;
DROP FUNCTION IF EXISTS annotation_item_set_full();
DROP FUNCTION IF EXISTS annotation_project_refill();
DROP FUNCTION IF EXISTS annotation_project_counts_create();
DROP FUNCTION IF EXISTS annotation_item_counts_insert();
DROP FUNCTION IF EXISTS annotation_item_counts_delete();
DROP FUNCTION IF EXISTS annotation_item_counts_update();
DROP FUNCTION IF EXISTS annotation_assignment_counts_insert();
DROP FUNCTION IF EXISTS annotation_assignment_counts_delete();
DROP FUNCTION IF EXISTS annotation_assignment_counts_update();
"""

FULL = (
    "(NEW.kind = 'regular' AND NEW.assigned_count >= "
    "(SELECT annotators_per_item FROM projects_project WHERE id = NEW.project_id))"
)

SQLITE = [
    f"""CREATE TRIGGER annotation_item_full_insert AFTER INSERT ON annotation_item
    WHEN NEW.assigned_count > 0 OR NEW.is_full
    BEGIN UPDATE annotation_item SET is_full = {FULL} WHERE id = NEW.id; END""",
    f"""CREATE TRIGGER annotation_item_full_update
    AFTER UPDATE OF assigned_count, kind, project_id, is_full ON annotation_item
    BEGIN UPDATE annotation_item SET is_full = {FULL} WHERE id = NEW.id AND is_full IS NOT {FULL};
    END""",
    """CREATE TRIGGER annotation_project_refill AFTER UPDATE OF annotators_per_item ON projects_project
    WHEN OLD.annotators_per_item IS NOT NEW.annotators_per_item
    BEGIN UPDATE annotation_item SET is_full = (assigned_count >= NEW.annotators_per_item)
    WHERE project_id = NEW.id AND kind = 'regular'
      AND is_full IS NOT (assigned_count >= NEW.annotators_per_item); END""",
    """CREATE TRIGGER annotation_project_counts_create AFTER INSERT ON projects_project
    BEGIN
    INSERT OR IGNORE INTO annotation_projectitemcounts (project_id, items, regular_items)
        VALUES (NEW.id, 0, 0);
    INSERT OR IGNORE INTO annotation_projectanswercounts (project_id, submitted) VALUES (NEW.id, 0);
    END""",
    """CREATE TRIGGER annotation_item_counts_insert AFTER INSERT ON annotation_item
    BEGIN UPDATE annotation_projectitemcounts
    SET items = items + 1, regular_items = regular_items + (NEW.kind = 'regular')
    WHERE project_id = NEW.project_id; END""",
    """CREATE TRIGGER annotation_item_counts_delete AFTER DELETE ON annotation_item
    BEGIN UPDATE annotation_projectitemcounts
    SET items = items - 1, regular_items = regular_items - (OLD.kind = 'regular')
    WHERE project_id = OLD.project_id; END""",
    """CREATE TRIGGER annotation_item_counts_update AFTER UPDATE OF kind, project_id ON annotation_item
    WHEN OLD.kind IS NOT NEW.kind OR OLD.project_id IS NOT NEW.project_id
    BEGIN
    UPDATE annotation_projectitemcounts
    SET items = items - 1, regular_items = regular_items - (OLD.kind = 'regular')
    WHERE project_id = OLD.project_id;
    UPDATE annotation_projectitemcounts
    SET items = items + 1, regular_items = regular_items + (NEW.kind = 'regular')
    WHERE project_id = NEW.project_id;
    END""",
    """CREATE TRIGGER annotation_assignment_counts_insert AFTER INSERT ON annotation_assignment
    WHEN NEW.state = 'submitted'
    BEGIN UPDATE annotation_projectanswercounts SET submitted = submitted + 1
    WHERE project_id = NEW.project_id; END""",
    """CREATE TRIGGER annotation_assignment_counts_delete AFTER DELETE ON annotation_assignment
    WHEN OLD.state = 'submitted'
    BEGIN UPDATE annotation_projectanswercounts SET submitted = submitted - 1
    WHERE project_id = OLD.project_id; END""",
    """CREATE TRIGGER annotation_assignment_counts_update
    AFTER UPDATE OF state, project_id ON annotation_assignment
    WHEN (OLD.state IS NOT NEW.state OR OLD.project_id IS NOT NEW.project_id)
      AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    BEGIN
    UPDATE annotation_projectanswercounts SET submitted = submitted - 1
    WHERE project_id = OLD.project_id AND OLD.state = 'submitted';
    UPDATE annotation_projectanswercounts SET submitted = submitted + 1
    WHERE project_id = NEW.project_id AND NEW.state = 'submitted';
    END""",
]

SQLITE_TRIGGERS = [
    "annotation_item_full_insert",
    "annotation_item_full_update",
    "annotation_project_refill",
    "annotation_project_counts_create",
    "annotation_item_counts_insert",
    "annotation_item_counts_delete",
    "annotation_item_counts_update",
    "annotation_assignment_counts_insert",
    "annotation_assignment_counts_delete",
    "annotation_assignment_counts_update",
]

# What the triggers keep, computed afresh for the rows that exist now (``manage.py recount`` runs
# the same through ``annotation.counts``).
BACKFILL = [
    """UPDATE annotation_item SET is_full = (
        kind = 'regular' AND assigned_count >= (
            SELECT annotators_per_item FROM projects_project WHERE id = annotation_item.project_id
        ))""",
    """INSERT INTO annotation_projectitemcounts (project_id, items, regular_items)
    SELECT p.id,
        (SELECT count(*) FROM annotation_item i WHERE i.project_id = p.id),
        (SELECT count(*) FROM annotation_item i WHERE i.project_id = p.id AND i.kind = 'regular')
    FROM projects_project p""",
    """INSERT INTO annotation_projectanswercounts (project_id, submitted)
    SELECT p.id, (SELECT count(*) FROM annotation_assignment a
        WHERE a.project_id = p.id AND a.state = 'submitted')
    FROM projects_project p""",
]


def install(apps, schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL)
        elif connection.vendor == "sqlite":
            for statement in SQLITE:
                cursor.execute(statement)
        else:  # pragma: no cover - Concord runs on PostgreSQL, SQLite for development
            raise RuntimeError(f"No open-queue triggers for {connection.vendor}.")
        for statement in BACKFILL:
            cursor.execute(statement)


def uninstall(apps, schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL_DROP)
        else:
            for name in SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute("DELETE FROM annotation_projectitemcounts")
        cursor.execute("DELETE FROM annotation_projectanswercounts")
