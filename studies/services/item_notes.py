"""Flags, skips, send-backs and comments as one table (the "item notes" export, and the
bundle's ``item_notes``): one row per flag (``kind`` flag, or skip when the annotator skipped
the item), per answer sent back and per comment, with the item's external id and who by
pseudonym (annotators, and the researchers and reviewers who comment or send back: members all
have one), never an account name.

Streamed in constant memory: one query for the project's pseudonyms, then one query per kind of
note read in chunks from a server-side cursor (no query per row).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypedDict

from annotation.models import ItemComment, ItemFlag, SendBack
from core.spreadsheet import spreadsheet_safe
from projects.audit import AuditKind, audit_record
from projects.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

NOTE_COLUMNS = (
    "kind",
    "item",
    "by",
    "reason",
    "text",
    "state",
    "response",
    "version",
    "answered_version",
    "created_at",
    "resolved_at",
)
NOTE_FORMATS = ("csv", "jsonl")
_CHUNK = 2000


def _when(value) -> str | None:
    return value.isoformat() if value is not None else None


class NoteRow(TypedDict):
    """One note (``NOTE_COLUMNS``, in order); None where the kind of note has no such value."""

    kind: str
    item: str
    by: str | None
    reason: str | None
    text: str | None
    state: str | None
    response: str | None
    version: int | None
    answered_version: int | None
    created_at: str | None
    resolved_at: str | None


def _row(
    *,
    kind: str,
    item: str,
    by: str | None,
    reason: str | None = None,
    text: str | None = None,
    state: str | None = None,
    response: str | None = None,
    version: int | None = None,
    answered_version: int | None = None,
    created_at: str | None = None,
    resolved_at: str | None = None,
) -> NoteRow:
    return NoteRow(
        kind=kind,
        item=item,
        by=by,
        reason=reason,
        text=text,
        state=state,
        response=response,
        version=version,
        answered_version=answered_version,
        created_at=created_at,
        resolved_at=resolved_at,
    )


def note_rows(*, project: Project) -> Iterator[NoteRow]:
    """Every note of the project: flags and skips, then send-backs, then comments, each in the
    order they were made."""
    names = dict(Membership.objects.filter(project=project).values_list("user_id", "pseudonym"))
    flags = (
        ItemFlag.objects.filter(project=project)
        .order_by("created_at", "id")
        .values_list(
            "skipped",
            "item__external_id",
            "raised_by_id",
            "reason",
            "text",
            "state",
            "response",
            "created_at",
            "resolved_at",
        )
    )
    for skipped, item, by, reason, text, state, response, created, resolved in flags.iterator(
        chunk_size=_CHUNK
    ):
        yield _row(
            kind="skip" if skipped else "flag",
            item=item,
            by=names.get(by, ""),
            reason=reason,
            text=text,
            state=state,
            response=response,
            created_at=_when(created),
            resolved_at=_when(resolved),
        )
    yield from _send_back_rows(project, names)
    comments = (
        ItemComment.objects.filter(item__project=project)
        .order_by("created_at", "id")
        .values_list("item__external_id", "author_id", "body", "created_at")
    )
    for item, by, body, created in comments.iterator(chunk_size=_CHUNK):
        yield _row(
            kind="comment", item=item, by=names.get(by, ""), text=body, created_at=_when(created)
        )


def _send_back_rows(project: Project, names: dict) -> Iterator[NoteRow]:
    rows = (
        SendBack.objects.filter(assignment__project=project)
        .order_by("created_at", "id")
        .values_list(
            "assignment__item__external_id",
            "reviewer_id",
            "assignment__annotator_id",
            "note",
            "version",
            "answered_version",
            "created_at",
            "answered_at",
        )
    )
    for item, by, annotator, note, version, answered, created, answered_at in rows.iterator(
        chunk_size=_CHUNK
    ):
        yield _row(
            kind="send_back",
            item=item,
            by=names.get(by, ""),
            reason=f"to {names.get(annotator, '')}",
            text=note,
            state="answered" if answered_at else "open",
            version=version,
            answered_version=answered,
            created_at=_when(created),
            resolved_at=_when(answered_at),
        )


def notes_download(*, project: Project, fmt: str, by: AbstractBaseUser | None) -> Iterator[str]:
    """:func:`notes_text`, recorded in the project's audit log as downloaded by ``by`` (as every
    other download is)."""
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.EXPORTED,
        summary=f"Exported the flags, skips, send-backs and comments as {fmt}.",
        changes={"format": fmt, "via": "item notes"},
    )
    return notes_text(project=project, fmt=fmt)


def notes_text(*, project: Project, fmt: str) -> Iterator[str]:
    """The notes as CSV (a header, spreadsheet-safe cells) or JSON Lines, in chunks."""
    rows = note_rows(project=project)
    if fmt == "jsonl":
        batch: list[str] = []
        for row in rows:
            batch.append(json.dumps(row, ensure_ascii=False) + "\n")
            if len(batch) == 500:
                yield "".join(batch)
                batch.clear()
        yield "".join(batch)
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(NOTE_COLUMNS)
    for count, row in enumerate(rows, start=1):
        writer.writerow([spreadsheet_safe(value) for value in row.values()])
        if count % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate(0)
    yield buffer.getvalue()


__all__ = ["NOTE_COLUMNS", "NOTE_FORMATS", "note_rows", "notes_text"]
