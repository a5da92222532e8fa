"""The counter triggers that were still row-level become statement-level on PostgreSQL (issue 34).

Bulk writes of answers in one statement (a replay, a bundle, an ``UPDATE … SET state =
'submitted'`` over thousands of assignments) stalled for minutes: the row-level triggers of 0007
and 0009 on an assignment's or an item's UPDATE rewrote the project's single counter row once
per row, and every rewrite of one row in one transaction walks the versions left by the ones
before it. Now one trigger per table and statement (transition tables) adds up what the
statement moved and updates each counter row once:

- ``annotation_assignment_counts_moved`` (replaces 0007's ``annotation_assignment_counts_update``
  and 0009's ``annotation_assignment_submitted_update``): for the assignments whose state,
  project, annotator or item changed, -1 where a submitted one was, +1 where a submitted one is:
  the project's ``submitted``, then each annotator's, then each item's ``submitted_count`` (the
  lock order of a submit is unchanged: project counter, annotator counter, item).
- ``annotation_item_counts_moved`` (replaces 0007's ``annotation_item_counts_update`` and 0009's
  ``annotation_item_complete_update``): for the items whose submitted count, kind or project
  changed, the project's ``complete_items``, then for those whose kind or project changed, the
  project's ``items`` and ``regular_items``.

Transition tables cannot go with a column list, so both fire on every UPDATE of their table and
find the moved rows by comparing old and new (as 0009's ``annotation_item_revision_update``
does); a statement that moves nothing changes no counter. The old functions stay (the reverse
migration puts their triggers back). SQLite, the embedded development database, keeps its
row-level triggers: its writes are one at a time anyway.
"""

POSTGRESQL = """
CREATE OR REPLACE FUNCTION annotation_assignment_counts_moved() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c SET submitted = c.submitted + d.n
    FROM (
        SELECT project_id, sum(n) AS n FROM (
            SELECT o.project_id, -1 AS n FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE o.state = 'submitted'
              AND (r.state IS DISTINCT FROM o.state OR r.project_id IS DISTINCT FROM o.project_id)
            UNION ALL
            SELECT r.project_id, 1 FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE r.state = 'submitted'
              AND (r.state IS DISTINCT FROM o.state OR r.project_id IS DISTINCT FROM o.project_id)
        ) AS moved GROUP BY project_id HAVING sum(n) <> 0
    ) AS d
    WHERE c.project_id = d.project_id;

    INSERT INTO annotation_annotatoranswercounts (project_id, annotator_id, submitted)
    SELECT project_id, annotator_id, sum(n) FROM (
        SELECT o.project_id, o.annotator_id, -1 AS n
        FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
        WHERE o.state = 'submitted' AND (
            r.state IS DISTINCT FROM o.state OR r.project_id IS DISTINCT FROM o.project_id
            OR r.annotator_id IS DISTINCT FROM o.annotator_id)
        UNION ALL
        SELECT r.project_id, r.annotator_id, 1
        FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
        WHERE r.state = 'submitted' AND (
            r.state IS DISTINCT FROM o.state OR r.project_id IS DISTINCT FROM o.project_id
            OR r.annotator_id IS DISTINCT FROM o.annotator_id)
    ) AS moved
    GROUP BY project_id, annotator_id HAVING sum(n) <> 0
    ON CONFLICT (project_id, annotator_id)
    DO UPDATE SET submitted = annotation_annotatoranswercounts.submitted + EXCLUDED.submitted;

    UPDATE annotation_item AS i SET submitted_count = i.submitted_count + d.n
    FROM (
        SELECT item_id, sum(n) AS n FROM (
            SELECT o.item_id, -1 AS n FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE o.state = 'submitted'
              AND (r.state IS DISTINCT FROM o.state OR r.item_id IS DISTINCT FROM o.item_id)
            UNION ALL
            SELECT r.item_id, 1 FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE r.state = 'submitted'
              AND (r.state IS DISTINCT FROM o.state OR r.item_id IS DISTINCT FROM o.item_id)
        ) AS moved GROUP BY item_id HAVING sum(n) <> 0
    ) AS d
    WHERE i.id = d.item_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS annotation_assignment_counts_update ON annotation_assignment;
DROP TRIGGER IF EXISTS annotation_assignment_submitted_update ON annotation_assignment;
CREATE TRIGGER annotation_assignment_counts_moved AFTER UPDATE ON annotation_assignment
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_assignment_counts_moved();

CREATE OR REPLACE FUNCTION annotation_item_counts_moved() RETURNS trigger AS $$
BEGIN
    UPDATE annotation_projectanswercounts AS c SET complete_items = c.complete_items + d.n
    FROM (
        SELECT project_id, sum(n) AS n FROM (
            SELECT o.project_id, -1 AS n
            FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            JOIN projects_project AS p ON p.id = o.project_id
            WHERE o.kind = 'regular' AND o.submitted_count >= p.annotators_per_item
              AND (r.submitted_count IS DISTINCT FROM o.submitted_count
                   OR r.kind IS DISTINCT FROM o.kind OR r.project_id IS DISTINCT FROM o.project_id)
            UNION ALL
            SELECT r.project_id, 1
            FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            JOIN projects_project AS p ON p.id = r.project_id
            WHERE r.kind = 'regular' AND r.submitted_count >= p.annotators_per_item
              AND (r.submitted_count IS DISTINCT FROM o.submitted_count
                   OR r.kind IS DISTINCT FROM o.kind OR r.project_id IS DISTINCT FROM o.project_id)
        ) AS moved GROUP BY project_id HAVING sum(n) <> 0
    ) AS d
    WHERE c.project_id = d.project_id;

    UPDATE annotation_projectitemcounts AS c
    SET items = c.items + d.items, regular_items = c.regular_items + d.regular_items
    FROM (
        SELECT project_id, sum(items) AS items, sum(regular_items) AS regular_items FROM (
            SELECT o.project_id, -1 AS items, -(o.kind = 'regular')::int AS regular_items
            FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE r.kind IS DISTINCT FROM o.kind OR r.project_id IS DISTINCT FROM o.project_id
            UNION ALL
            SELECT r.project_id, 1, (r.kind = 'regular')::int
            FROM old_rows AS o JOIN new_rows AS r ON r.id = o.id
            WHERE r.kind IS DISTINCT FROM o.kind OR r.project_id IS DISTINCT FROM o.project_id
        ) AS moved GROUP BY project_id
        HAVING sum(items) <> 0 OR sum(regular_items) <> 0
    ) AS d
    WHERE c.project_id = d.project_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS annotation_item_complete_update ON annotation_item;
DROP TRIGGER IF EXISTS annotation_item_counts_update ON annotation_item;
CREATE TRIGGER annotation_item_counts_moved AFTER UPDATE ON annotation_item
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_item_counts_moved();
"""

# The row-level triggers of 0007 and 0009 as they were (their functions were kept).
POSTGRESQL_REVERSE = """
DROP TRIGGER IF EXISTS annotation_assignment_counts_moved ON annotation_assignment;
DROP TRIGGER IF EXISTS annotation_item_counts_moved ON annotation_item;
DROP FUNCTION IF EXISTS annotation_assignment_counts_moved();
DROP FUNCTION IF EXISTS annotation_item_counts_moved();

CREATE TRIGGER annotation_assignment_counts_update
    AFTER UPDATE OF state, project_id ON annotation_assignment
    FOR EACH ROW WHEN (
        (OLD.state IS DISTINCT FROM NEW.state OR OLD.project_id IS DISTINCT FROM NEW.project_id)
        AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    )
    EXECUTE FUNCTION annotation_assignment_counts_update();

CREATE TRIGGER annotation_assignment_submitted_update
    AFTER UPDATE OF state, project_id, annotator_id, item_id ON annotation_assignment
    FOR EACH ROW WHEN (
        (OLD.state IS DISTINCT FROM NEW.state OR OLD.project_id IS DISTINCT FROM NEW.project_id
         OR OLD.annotator_id IS DISTINCT FROM NEW.annotator_id
         OR OLD.item_id IS DISTINCT FROM NEW.item_id)
        AND (OLD.state = 'submitted' OR NEW.state = 'submitted')
    )
    EXECUTE FUNCTION annotation_assignment_submitted_update();

CREATE TRIGGER annotation_item_complete_update
    AFTER UPDATE OF submitted_count, kind, project_id ON annotation_item
    FOR EACH ROW WHEN (
        OLD.submitted_count IS DISTINCT FROM NEW.submitted_count
        OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.project_id IS DISTINCT FROM NEW.project_id
    )
    EXECUTE FUNCTION annotation_item_complete_update();

CREATE TRIGGER annotation_item_counts_update AFTER UPDATE OF kind, project_id ON annotation_item
    FOR EACH ROW WHEN (OLD.kind IS DISTINCT FROM NEW.kind OR OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION annotation_item_counts_update();
"""


def install(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(POSTGRESQL)


def uninstall(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(POSTGRESQL_REVERSE)
