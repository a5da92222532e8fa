"""Annotations collected elsewhere (the original study of a reproduction, an MTurk batch result,
another tool), imported as the answers of *external coders*: not accounts, never able to log in,
counted on every dashboard beside the annotators as ``ext:<name>`` (``agreement.reports.gather``).

Formats: ``jsonl`` — one object per line, ``{"item": external id, "coder": name, "answer": {…}
[, "time_spent_ms", "annotated_at" (ISO 8601, from 1990 to tomorrow), "source"]}``;
``csv`` — columns ``item``,
``coder``, optional ``time_spent_ms``, ``annotated_at``, ``source``, and one column per answer
field (a cell that reads as JSON — a number, a list — is taken as such; an empty cell leaves the
field out); and each task type's ``annotation_readers`` (e.g. citation recovery's
``utility-ratings``, the Transparent-FCExp helpfulness ratings; ranking's ``reprohum-ranks``, the
original study's rank columns, which takes a ``mapping`` file).

A source may name parts of an item differently from the stored answer (the original rankings
name systems; Concord stores opaque output keys): the task type's ``external_answer`` hook turns
each checked answer into the stored one, and refuses it naming the field.

Answers are checked field by field against the task type's answer serializer (a source may
record only some fields: the helpfulness ratings have no sentence selection, and reports count
only the fields an answer has). All or nothing: the first bad row is named with its line and
field and nothing is written. Importing the same coder and item again replaces that answer.
"""

from __future__ import annotations

import codecs
import csv
import inspect
import io
import itertools
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from rest_framework import serializers

from annotation import task_types
from annotation.models import ExternalAnnotation, ExternalCoder, Item
from annotation.task_types import PayloadError
from annotation.task_types.base import jsonl_records
from core.errors import first_error
from core.json_safety import json_problem
from core.json_safety import loads as safe_json_loads
from projects.audit import AuditKind, audit_record
from projects.models import Project
from studies.services.format_detection import semicolon_problem
from studies.services.import_jobs import upload_size_check
from studies.services.imports import ImportFailed

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

GENERIC = ("jsonl", "csv")
META = ("item", "coder", "time_spent_ms", "annotated_at", "source")


def annotation_formats(*, project: Project) -> list[str]:
    return [*GENERIC, *task_types.get(project.task_type).annotation_readers]


def _cell(value: str) -> Any:
    """A cell that reads as storable JSON (a number, a list), else its text, which the answer
    field or the time check then refuses by name (a number of thousands of digits included)."""
    try:
        return safe_json_loads(value)
    except ValueError:  # not JSON, or JSON that cannot be stored (UnsafeJSON)
        return value


def _csv(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    header = stream.readline()
    problem = semicolon_problem(header=header)
    if problem:
        raise PayloadError(problem, location="line 1")
    reader = csv.DictReader(itertools.chain([header], stream))
    for column in ("item", "coder"):
        if column not in (reader.fieldnames or []):
            raise PayloadError(f"the CSV needs an {column!r} column", location="line 1")
    for row in reader:
        location = f"line {reader.line_num}"
        answer = {
            k: _cell(v) for k, v in row.items() if k not in META and k and v not in (None, "")
        }
        record = {k: row[k] for k in META if row.get(k) not in (None, "")}
        if "time_spent_ms" in record:
            record["time_spent_ms"] = _cell(record["time_spent_ms"])
        yield location, {**record, "answer": answer}


def _jsonl(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """The JSON Lines format's records; a key it does not know is refused naming it (a
    ``created_at`` or ``time_spent_s`` meant as ``annotated_at`` or ``time_spent_ms`` was
    dropped without a word, and the answers came out without their times)."""
    known = (*META, "answer")
    for location, record in jsonl_records(stream):
        for key in record:
            if key not in known:
                raise PayloadError(
                    f"not a field of an annotation record (fields: {', '.join(known)})",
                    field=str(key)[:100],
                    location=location,
                )
        yield location, record


def _text(stream: IO) -> IO[str]:
    if isinstance(stream, io.TextIOBase):
        return stream
    # a leading BOM is not data
    return cast(IO[str], codecs.getreader("utf-8-sig")(stream, "strict"))


class CheckedRow(TypedDict):
    """One row of an annotation file, checked: the answer's fields validated, then (once its
    item is found) stored as the task type stores it."""

    coder: str
    answer: dict[str, Any]
    time_spent_ms: int | None
    annotated_at: datetime | None
    source: str
    item_id: NotRequired[int]  # set once the row's item is found


def _checked(
    location: str, record: Mapping, answer_fields: Mapping[str, serializers.Field]
) -> CheckedRow:
    def refuse(message: str, field: str) -> PayloadError:
        return PayloadError(message, field=field, location=location)

    coder = record.get("coder")
    if not isinstance(coder, str) or not coder.strip() or len(coder) > 100 or "\x00" in coder:
        raise refuse("a coder name of 1 to 100 characters is needed", "coder")
    answer = record.get("answer")
    if not isinstance(answer, dict) or not answer:
        raise refuse("an answer object with at least one field is needed", "answer")
    problem = json_problem(answer)
    if problem:
        raise refuse(problem, "answer")
    clean = {}
    for key, value in answer.items():
        field = answer_fields.get(key)
        if field is None:
            raise refuse(
                f"not an answer field here (fields: {', '.join(answer_fields)})", f"answer.{key}"
            )
        try:
            clean[key] = field.to_representation(field.run_validation(value))
        except serializers.ValidationError as exc:
            path, message = first_error(exc.detail, f"answer.{key}")
            raise refuse(message, path) from None
    time_spent = record.get("time_spent_ms")
    if time_spent is not None and (
        isinstance(time_spent, bool)
        or not isinstance(time_spent, int)
        or not 0 <= time_spent < 10**12
    ):
        raise refuse("milliseconds as a whole number from 0", "time_spent_ms")
    when = record.get("annotated_at")
    if when is not None:
        when = annotated_at(value=when, refuse=refuse)
    source = record.get("source") or ""
    if not isinstance(source, str) or len(source) > 200:
        raise refuse("at most 200 characters of text", "source")
    return CheckedRow(
        coder=coder.strip(),
        answer=clean,
        time_spent_ms=time_spent,
        annotated_at=when,
        source=source,
    )


# When an annotation can have been made: after the first annotation tools and before tomorrow
# (a clock a few hours ahead is not refused). Anything else is a typo or a placeholder date
# (9999-12-31), and one past year 9999 in UTC could not even be read back.
EARLIEST_ANNOTATION = datetime(1990, 1, 1, tzinfo=UTC)


def annotated_at(*, value: Any, refuse: Callable[[str, str], Exception]) -> datetime:
    """``value`` as an aware UTC time within the bounds above; ``refuse(expected, field)``
    builds the error to raise otherwise (imports and bundle loading share the rule)."""
    example = "an ISO 8601 date and time, e.g. 2024-05-01T12:00:00Z"
    if not isinstance(value, str) or len(value) > 40:
        raise refuse(example, "annotated_at")
    try:
        when = datetime.fromisoformat(value)
        if timezone.is_naive(when):
            when = timezone.make_aware(when, UTC)
        when = when.astimezone(UTC)
    except (ValueError, OverflowError):
        raise refuse(example, "annotated_at") from None
    latest = timezone.now() + timedelta(days=1)
    if not EARLIEST_ANNOTATION <= when <= latest:
        raise refuse(
            f"a date and time between {EARLIEST_ANNOTATION:%Y-%m-%d} and {latest:%Y-%m-%d}, "
            f"not {value[:40]}",
            "annotated_at",
        )
    return when


# An item as an import reads it: its id, payload and prepared fields (the task type's JSON).
ItemJSON = tuple[int, dict[str, Any], dict[str, Any]]


class UnknownItem(PayloadError):
    """A row names an item this project does not have."""


def _item_for(location: str, record: Mapping, items: Mapping[str, ItemJSON]) -> ItemJSON:
    wanted = record.get("item")
    candidates = wanted if isinstance(wanted, list) else [wanted]
    if not candidates or not all(isinstance(c, str) and c for c in candidates):
        raise PayloadError("the item's external id is needed", field="item", location=location)
    for candidate in cast(list[str], candidates):
        if candidate in items:
            item_id, payload, prepared = items[candidate]
            expect = record.get("expect") or {}
            if not isinstance(expect, dict):
                raise PayloadError(
                    "an object of payload fields and the values the item must have",
                    field="expect",
                    location=location,
                )
            for key, value in expect.items():
                if payload.get(key) != value:
                    raise PayloadError(
                        f"item {candidate!r} has {key} {payload.get(key)!r}, not {value!r}",
                        field="item",
                        location=location,
                    )
            return item_id, payload, prepared
    raise UnknownItem(f"no item {candidates[0]!r} in this project", field="item", location=location)


def annotation_formats_taking(*, project: Project, option: str) -> list[str]:
    """The task type's annotation formats whose reader takes ``option`` (e.g. ``mapping``)."""
    return [
        fmt
        for fmt, reader in task_types.get(project.task_type).annotation_readers.items()
        if option in inspect.signature(reader).parameters
    ]


class ImportCounts(TypedDict):
    annotations: int
    coders: int
    new_coders: int
    skipped: int  # rows naming items the project does not have
    skipped_first: str  # the first such item ("" for none)


def import_annotations(
    *,
    project: Project,
    stream: IO,
    fmt: str,
    source: str = "",
    skip_unknown_items: bool = False,
    options: Mapping[str, Any] | None = None,
    by: AbstractBaseUser | None = None,
) -> ImportCounts:
    """Import annotations collected elsewhere (see the module docstring); returns counts.
    ``by``: who, for the project's audit log (one entry, written with the answers).
    ``skip_unknown_items``: rows naming an item the project does not have (e.g. ratings of
    explanations that were never imported) are left out and counted instead of refused.
    ``options`` go to a task type's reader as keyword arguments (e.g. ranking's
    ``reprohum-ranks`` takes the ``mapping`` file); a reader that does not take one refuses it."""
    task = task_types.get(project.task_type)
    readers = {"jsonl": _jsonl, "csv": _csv, **task.annotation_readers}
    if fmt not in readers:
        raise ImportFailed(
            f"Unknown format {fmt!r}; use one of {', '.join(readers)}.", field="format"
        )
    reader = readers[fmt]
    options = {k: v for k, v in (options or {}).items() if v is not None}
    taken = inspect.signature(reader).parameters
    for option in options:
        if option not in taken:
            raise ImportFailed(f"The {fmt} format takes no {option} file.", field=option)
    rows, unknown = _read_rows(
        project=project,
        task=task,
        rows=reader(_text(stream), **options),
        answer_fields=task.external_answer_fields(project.config or {}),
        source=source,
        skip_unknown_items=skip_unknown_items,
    )
    names = sorted({row["coder"] for row in rows})
    with transaction.atomic():
        counts: ImportCounts = {
            "annotations": len(rows),
            "coders": len(names),
            "new_coders": _store(project=project, rows=rows, names=names, source=source),
            "skipped": len(unknown),
            "skipped_first": unknown[0] if unknown else "",
        }
        audit_record(
            project=project,
            actor=by,
            kind=AuditKind.ANNOTATIONS_IMPORTED,
            summary=f"{import_summary(counts=counts)} Source: {source or fmt}.",
            changes={"source": source, "format": fmt, **counts},
        )
    return counts


def _read_rows(
    *, project, task, rows, answer_fields, source: str, skip_unknown_items: bool
) -> tuple[list[CheckedRow], list[str]]:
    """Every row checked (all or nothing), with its item id and its answer as the task type
    stores it (``external_answer``); the locations of unknown items. Rows are read
    ``ITEMS_PER_READ`` at a time and only the items they name are read (a one-line file on a
    100k-item study read every item's payload: ~1 GB and seconds)."""
    config = project.config or {}
    checked: list[CheckedRow] = []
    seen: dict[tuple, str] = {}
    unknown: list[str] = []
    try:
        for location, record, items in _with_named_items(project, rows):
            row = _checked(location, record, answer_fields)
            try:
                row["item_id"], payload, prepared = _item_for(location, record, items)
            except UnknownItem:
                if not skip_unknown_items:
                    raise
                unknown.append(location)
                continue
            try:
                row["answer"] = task.external_answer(
                    row["answer"], payload=payload, prepared=prepared, config=config
                )
            except PayloadError as exc:
                exc.location = exc.location or location
                raise
            key = (row["coder"], row["item_id"])
            if key in seen:
                raise PayloadError(
                    f"coder {row['coder']!r} answers this item twice (also {seen[key]})",
                    field="coder",
                    location=location,
                )
            seen[key] = location
            row["source"] = row["source"] or source
            checked.append(row)
    except PayloadError as exc:
        raise ImportFailed(f"Nothing imported. {exc}", field=exc.field or "file") from None
    except UnicodeDecodeError as exc:
        raise ImportFailed(
            f"Nothing imported. The file is not UTF-8 (byte {exc.start}).", field="file"
        ) from None
    if not checked:
        raise ImportFailed("Nothing imported: the file has no annotations.", field="file")
    return checked, unknown


ITEMS_PER_READ = 900  # rows whose items are read in one query (under SQLite's 999 parameters)


def _with_named_items(
    project: Project, rows: Iterator[tuple[str, Any]]
) -> Iterator[tuple[str, Any, dict[str, ItemJSON]]]:
    """(location, record, the items its stretch of rows names) for each row, in file order."""
    rows = iter(rows)
    while stretch := list(itertools.islice(rows, ITEMS_PER_READ)):
        wanted: set[str] = set()
        for _, record in stretch:
            named = record.get("item") if isinstance(record, Mapping) else None
            for name in named if isinstance(named, list) else [named]:
                if isinstance(name, str) and name:
                    wanted.add(name)
        items = {
            external_id: (item_id, payload, prepared)
            for external_id, item_id, payload, prepared in Item.objects.filter(
                project=project, external_id__in=wanted
            ).values_list("external_id", "id", "payload", "prepared")
        }
        for location, record in stretch:
            yield location, record, items


def _store(*, project, rows: list[CheckedRow], names: list[str], source: str) -> int:
    """Write the coders and answers in one transaction; returns how many coders are new."""
    now = timezone.now()
    with transaction.atomic():
        existing = set(
            ExternalCoder.objects.filter(project=project, name__in=names).values_list(
                "name", flat=True
            )
        )
        ExternalCoder.objects.bulk_create(
            [
                ExternalCoder(project=project, name=n, source=source)
                for n in names
                if n not in existing
            ]
        )
        coders = dict(
            ExternalCoder.objects.filter(project=project, name__in=names).values_list("name", "id")
        )
        ExternalAnnotation.objects.bulk_create(
            [
                ExternalAnnotation(
                    coder_id=coders[row["coder"]],
                    item_id=row["item_id"],
                    answer=row["answer"],
                    time_spent_ms=row["time_spent_ms"],
                    annotated_at=row["annotated_at"],
                    source=row["source"],
                    updated_at=now,
                )
                for row in rows
            ],
            update_conflicts=True,
            unique_fields=["coder", "item"],
            update_fields=["answer", "time_spent_ms", "annotated_at", "source", "updated_at"],
            batch_size=2000,
        )
    return len(names) - len(existing)


def import_annotations_upload(
    *,
    project: Project,
    uploaded_file: UploadedFile,
    fmt: str,
    source: str = "",
    skip_unknown_items: bool = False,
    mapping_file: UploadedFile | None = None,
    by: AbstractBaseUser | None = None,
) -> ImportCounts:
    """:func:`import_annotations` of an upload (the project page's form and the API), in the
    request: refused (413) above ``CONCORD_MAX_UPLOAD_BYTES``, a mapping file that is not UTF-8
    text refused naming it; the source defaults to the file's name."""
    for field, upload in (("file", uploaded_file), ("mapping", mapping_file)):
        upload_size_check(upload=upload, field=field)
    options = {}
    if mapping_file is not None:
        try:
            options["mapping"] = mapping_file.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ImportFailed(
                f"Nothing imported. The mapping file is not UTF-8 text (byte {exc.start}).",
                field="mapping",
            ) from None
    name = (getattr(uploaded_file, "name", "") or "upload")[:200]
    return import_annotations(
        project=project,
        stream=uploaded_file,
        fmt=fmt,
        source=source or name,
        skip_unknown_items=skip_unknown_items,
        options=options,
        by=by,
    )


def import_summary(*, counts: ImportCounts) -> str:
    """One line for the researcher: what was imported and what was left out."""
    text = (
        f"Imported {counts['annotations']} annotations by {counts['coders']} external coders "
        f"({counts['new_coders']} new)"
    )
    if counts["skipped"]:
        text += (
            f"; left out {counts['skipped']} rows naming items this project does not have "
            f"(first: {counts['skipped_first']})"
        )
    return text + "."
