"""The database triggers that keep ``Item.is_full`` and the counters researcher pages read.

Triggers, not Python: every writer keeps the counters right whatever path it takes (the
workflow's reservations and releases, imports' bulk inserts, bundles, an admin changing
``annotators_per_item``, a cascade delete), in the same transaction as the write. Pages then
read one counter row instead of counting a project's items or answers.

=====================================  ==========================================================
kept                                   by (module: migration that installed it)
=====================================  ==========================================================
``Item.is_full``                       :mod:`.open_queue` (0007): an item's reservations against
                                       the project's ``annotators_per_item``; all of a project's
                                       items when N changes
``ProjectItemCounts`` items, regular   :mod:`.open_queue` (0007), statement-level on PostgreSQL
``ProjectAnswerCounts.submitted``      :mod:`.open_queue` (0007)
``Item.submitted_count``               :mod:`.dashboard` (0009)
``AnnotatorAnswerCounts``              :mod:`.dashboard` (0009)
``ProjectAnswerCounts`` complete       :mod:`.dashboard` (0009)
items, annotations, revision
``ProjectItemCounts.items_revision``   :mod:`.dashboard` (0009): moves when what a report reads
                                       of an item changes, never with a reservation
``ExternalAnswerCounts``               :mod:`.external_answers` (0018): external coders' answers
                                       and a revision, statement-level on PostgreSQL
=====================================  ==========================================================

:mod:`.statement_level` (0010) replaced the row-level UPDATE triggers of the assignment and item
tables on PostgreSQL with one trigger per statement (transition tables), so a bulk write moves
each counter row once. SQLite, the embedded development database, keeps row-level triggers.

The migrations name these modules; a migration's SQL is never edited afterwards (a change is a
new module and a new migration, as 0010 did). ``manage.py recount`` recomputes every counter
from the rows (``annotation.services.counts_rebuild``); tests compare counters with counts after
every kind of write (``tests/annotation/test_counters*.py``, ``test_bulk_counter_triggers.py``).

Adding a column to ``annotation_item``, ``annotation_assignment``, ``annotation_annotation``,
``annotation_externalannotation`` or ``projects_project`` in a migration: SQLite rebuilds the table, which breaks the triggers that
name it, so wrap the migration's operations in :func:`around_sqlite_table_rebuild`.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from annotation.counter_triggers import dashboard, open_queue

SQLITE_TRIGGERS: list[str] = [*dashboard.TRIGGERS, *open_queue.SQLITE_TRIGGERS]


COUNTED_TABLES = (
    "annotation_item",
    "annotation_assignment",
    "annotation_annotation",
    "annotation_externalannotation",
    "projects_project",
)
# Other SQLite triggers that name a counted table (llm_judges' judge result counter and
# .external_answers read annotation_item), dropped by sqlite_triggers_drop and created again by sqlite_triggers_create
# as they were: SQLite refuses to rename a rebuilt table while a trigger names a missing one.
_set_aside: dict[str, list[tuple[str, str]]] = {}


def _other_triggers(cursor: Any) -> list[tuple[str, str]]:
    cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
    return [
        (name, sql)
        for name, sql in cursor.fetchall()
        if name not in SQLITE_TRIGGERS and any(table in sql for table in COUNTED_TABLES)
    ]


def sqlite_triggers_drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            for name in SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            others = _other_triggers(cursor)
            for name, _ in others:
                cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            _set_aside[schema_editor.connection.alias] = others


def sqlite_triggers_create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            for statement in open_queue.SQLITE + dashboard.SQLITE:
                cursor.execute(statement)
            for _, sql in _set_aside.pop(schema_editor.connection.alias, []):
                cursor.execute(sql)


def around_sqlite_table_rebuild(operations: list[Any]) -> list[Any]:
    """The operations, with the SQLite triggers dropped before and created again after (both
    directions); PostgreSQL alters tables in place and keeps its triggers."""
    return [
        migrations.RunPython(sqlite_triggers_drop, sqlite_triggers_create),
        *operations,
        migrations.RunPython(sqlite_triggers_create, sqlite_triggers_drop),
    ]
