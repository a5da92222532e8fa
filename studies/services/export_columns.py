"""The stored export columns of human answers (:class:`studies.models.ReadyExportColumns`): the
key they are stored under, and their writing during an export (issue 34).

An export of a task type with ``export_columns_stored`` reads each answer's stored columns with
the answer (joined into the answers' cursor) and passes them through where the key still
matches: the sha256 of the task type's slug and ``export_columns_version``, the project's
config, the names and JSON texts (as PostgreSQL or SQLite gives them) of the item's exported
fields and the answer's JSON text. An item fixed since, a changed config or a new version makes
the stored text stale; so would an answer changed in place (a new version of an answer is a new
row, but the key covers its text whatever changes it). What an answer's rows show besides (the
annotator, times, the item's majority, qualification) is never stored: it is written at every
export, as before.

Writing while an export runs: the export reads inside one transaction (``exports._one_snapshot``),
and rows it inserts or updates stay locked until it ends. A second export of the same project
writing the same rows would wait for the first to end (PostgreSQL waits on a conflicting
uncommitted insert even with ``ON CONFLICT DO NOTHING``), and two exports each holding rows the
other wants would deadlock. So one export at a time writes a project's columns: it takes the
project's transaction-level advisory lock without waiting (``pg_try_advisory_xact_lock``); an
export that does not get it computes what is missing and writes it out without storing it (the
next export stores it). The same lock decides whether a task type's rows may store what they
store of their own (argument structure's metrics: ``export_writer_lock``), which would make
another export wait the same way. A worker's preparation of the columns
(``exports.export_columns_prepare``) takes it first and returns at once without it. Readers
never wait: PostgreSQL's reads take no row locks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import orjson
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

from annotation.task_types import TaskType
from projects.models import Project
from studies.models import ReadyExportColumns

# The first key of the advisory lock taken while an export writes a project's columns (the
# second is the project's id): an arbitrary constant of this module, "redy" in hex.
WRITER_LOCK = 0x72656479


class ColumnsBasis:
    """The stored key of an export's answers: what the project and the task type give every key,
    then an item's exported fields (:meth:`item`), then the answer's text (:meth:`answer`)."""

    def __init__(self, *, project: Project, task_type: TaskType, fields: Sequence[str]) -> None:
        self.start = orjson.dumps(
            [
                task_type.slug,
                task_type.export_columns_version,
                list(fields),
                project.config or {},
            ],
            option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        )

    def item(self, texts: list[str | None]) -> bytes:
        """What an item gives its answers' keys: its exported fields' JSON texts, their
        lengths first (so that no two lists of texts run together alike; ``-1``: none)."""
        digest = hashlib.sha256(self.start)
        digest.update(
            (
                ",".join(["-1" if text is None else str(len(text)) for text in texts])
                + ":"
                + "".join([text for text in texts if text is not None])
            ).encode()
        )
        return digest.digest()

    def answer(self, item: bytes, answer_text: str) -> str:
        """The key of an answer (its JSON text) on the item :meth:`item` gave ``item`` for."""
        digest = hashlib.sha256(item)
        digest.update(answer_text.encode())
        return digest.hexdigest()


class StoredColumns(NamedTuple):
    """What an export reads of an answer's stored columns (its text in the export's format)."""

    key: str
    rows: int | None
    text: str
    columns_key: str
    agreement: str


def read_columns(
    *, annotation_ids: list[int], fmt: str, on: BaseDatabaseWrapper | None = None
) -> dict[int, StoredColumns]:
    """The stored columns of these answers (those stored), their text in ``fmt`` (``jsonl`` or
    ``csv``): one query per batch of an export. Read apart from the answers' cursor, by primary
    key: joined into it, PostgreSQL planned a nested loop over the table while it was empty
    (new) and then rescanned every row the same export was storing, once per answer. ``on``:
    on PostgreSQL, the connection to read on (an export's reading thread reads on its
    request's connection, shared with it, in its transaction: Django's connections are one
    per thread)."""
    if fmt not in ("jsonl", "csv"):
        raise ValueError(f"Unknown export format {fmt!r}")
    if not annotation_ids:
        return {}
    if connection.vendor == "postgresql":  # one array parameter, not one per id
        with (on or connection).cursor() as cursor:
            cursor.execute(
                f"SELECT annotation_id, key, rows, {fmt}, columns_key, agreement "  # noqa: S608
                f"FROM {ReadyExportColumns._meta.db_table} WHERE annotation_id = ANY(%s)",
                [annotation_ids],
            )
            return {row[0]: StoredColumns(*row[1:]) for row in cursor.fetchall()}
    stored = ReadyExportColumns.objects.filter(annotation_id__in=annotation_ids).values_list(
        "annotation_id", "key", "rows", fmt, "columns_key", "agreement"
    )
    return {row[0]: StoredColumns(*row[1:]) for row in stored}


@dataclass(frozen=True, slots=True)
class Columns:
    """One answer's columns to store (see :class:`ReadyExportColumns`)."""

    annotation_id: int
    key: str
    rows: int | None
    jsonl: str
    csv: str
    columns: str
    columns_key: str
    agreement: str


class ColumnsWriter:
    """Stores the columns an export made, a batch at a time, if this export is the project's
    writer (see the module docstring); decided at its first batch with something to store."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.writes: bool | None = None  # not decided yet
        self.stored = 0  # rows stored by this export (for tests and the command's figures)

    def claim(self) -> bool:
        """Decide now, not at the first batch with something to store, whether this export
        writes the project's columns (a preparation does nothing when it may not)."""
        if self.writes is None:
            self.writes = self._writer_lock()
        return self.writes

    def write(self, columns: Sequence[Columns]) -> None:
        if not columns or not self.claim():
            return
        ReadyExportColumns.objects.bulk_create(
            [
                ReadyExportColumns(
                    annotation_id=c.annotation_id,
                    key=c.key,
                    rows=c.rows,
                    jsonl=c.jsonl,
                    csv=c.csv,
                    columns=c.columns,
                    columns_key=c.columns_key,
                    agreement=c.agreement,
                )
                # in one order, so that writers other than exports (none yet) cannot deadlock
                for c in sorted(columns, key=lambda c: c.annotation_id)
            ],
            batch_size=500,
            update_conflicts=True,
            unique_fields=["annotation"],
            update_fields=["key", "rows", "jsonl", "csv", "columns", "columns_key", "agreement"],
        )
        self.stored += len(columns)

    def _writer_lock(self) -> bool:
        return export_writer_lock(project_id=self.project.pk)


def export_writer_lock(*, project_id: int) -> bool:
    """Whether this export may write what exports store of the project: its columns, and what a
    task type's rows store of their own (argument structure's metrics), which would make
    another export wait the same way. On PostgreSQL, whether this transaction got the project's
    advisory lock (held to its end) without waiting: again true for the transaction that holds
    it; elsewhere always (SQLite writes one transaction at a time anyway)."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s, %s)", [WRITER_LOCK, project_id % 2**31]
        )
        return bool(cursor.fetchone()[0])
