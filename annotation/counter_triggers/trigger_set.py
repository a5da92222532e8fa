"""One trigger-kept counter's SQL in both dialects, and what its migration and ``manage.py
recount`` do with it: create, drop, install (create and fill from the rows), rebuild.

Used by the counters kept row by row on one table with a statement-level PostgreSQL function
per event and SQLite row triggers (``annotation.counter_triggers.external_answers``,
``llm_judges.counter_triggers``, whose SQL ``annotation.counter_triggers.per_project`` writes);
this keeps the plumbing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection as default_connection


@dataclass(frozen=True)
class CounterTriggers:
    """The triggers ``triggers`` on ``table``: PostgreSQL's ``postgresql`` (functions named as
    their triggers), SQLite's ``sqlite`` statements, and ``rebuild``: the counts computed afresh
    from the rows."""

    counter: str  # what they keep, for an error message
    table: str
    triggers: tuple[str, ...]
    postgresql: str
    sqlite: tuple[str, ...]
    rebuild: tuple[str, ...]

    def create(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(self.postgresql)
            elif connection.vendor == "sqlite":
                for statement in self.sqlite:
                    cursor.execute(statement)
            else:  # pragma: no cover - Concord runs on PostgreSQL, SQLite for development
                raise RuntimeError(f"No {self.counter} triggers for {connection.vendor}.")

    def drop(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            for name in self.triggers:
                if connection.vendor == "postgresql":
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {self.table}")
                    cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")
                else:
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")

    def install(self, apps: Any, schema_editor: Any) -> None:
        """A migration's ``RunPython``: the triggers, then the counts of the rows there are."""
        self.create(schema_editor.connection)
        self.counts_rebuild(connection=schema_editor.connection)

    def uninstall(self, apps: Any, schema_editor: Any) -> None:
        self.drop(schema_editor.connection)

    def counts_rebuild(self, *, connection: Any = default_connection) -> None:
        """Recompute every project's counts from the rows, moving the revision."""
        with connection.cursor() as cursor:
            for statement in self.rebuild:
                cursor.execute(statement)
