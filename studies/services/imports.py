"""Importing items: file → records → task type's payload serializer → ``prepare()`` → bulk insert
(one ``COPY`` per chunk on PostgreSQL, ``bulk_create`` elsewhere).

The whole import is one transaction: the first invalid record aborts it with a message naming its
line (or claim id) and field, and nothing is half-imported. Records are processed in chunks so
memory stays flat in the file size (only the set of seen external ids grows).
"""

from __future__ import annotations

import csv
import functools
import inspect
import io
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, cast

import orjson
from django.conf import settings
from django.db import connection, reset_queries, transaction
from django.db.models import Max
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotation import services as annotation_services
from annotation import task_types
from annotation.models import Assignment, Item, new_shuffle_key
from annotation.task_types import PayloadError, PreparedItem, TaskType
from annotation.task_types.base import jsonl_records
from core.errors import Refusal, first_error
from core.heap import older_objects_set_aside
from core.wording import counted
from llm_judges.models import JudgeResult
from projects.audit import AuditKind, audit_record
from projects.models import Project
from studies.services.format_detection import (
    Detection,
    Reader,
    formats_matching,
    looks_like,
    sample_of,
    semicolon_hint,
    semicolon_problem,
    sentences,
    shape_hint,
    starts_as_json,
)

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

CHUNK_SIZE = 1000
# Long explanations or evidence lists fit in one CSV cell (the csv module's default is 128 KiB),
# up to a whole record's limit.
csv.field_size_limit(settings.CONCORD_MAX_RECORD_CHARS)
GENERIC_FORMATS = ("jsonl", "csv")
DETECT = "detect"  # the import form's default: the format is judged from the file's beginning


class ImportFailed(Refusal):
    """The import was refused; nothing was written. The message names the line and field."""


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    records: int = 0
    skipped: list[str] = field(
        default_factory=list
    )  # locations of records with nothing to annotate
    skip_reason: str = "nothing to annotate"  # the task type's ``skip_reason``
    # What the researcher should know about how items were made: note -> record locations.
    notes: dict[str, list[str]] = field(default_factory=dict)
    fmt: str = ""  # the format the file was read in
    detected: bool = False  # whether that format was detected rather than chosen

    def summary(self) -> str:
        text = (
            f"{counted(self.records, 'record')} read, {counted(self.created, 'item')} created, "
            f"{self.updated} updated"
        )
        if self.detected:
            text = f"Read as {self.fmt} (detected): {text}"
        if self.skipped:
            text += f", {len(self.skipped)} skipped ({self.skip_reason}: {_first(self.skipped)})"
        for note, locations in self.notes.items():
            count = counted(len(locations), "record")
            text += f". Note for {count} ({_first(locations)}): {note}"
        return text


def _first(locations: list[str], shown: int = 5) -> str:
    return ", ".join(locations[:shown]) + (", …" if len(locations) > shown else "")


def available_formats(*, task_type: TaskType) -> list[str]:
    return [*GENERIC_FORMATS, *task_type.readers]


def _detectable_readers(
    task_type: TaskType, options: Mapping[str, Any] | None = None
) -> dict[str, Reader]:
    """The readers detection tries, the task type's own formats first (they are the more
    specific: a Transparent-FCExp file is also one JSON object, a ReproHum CSV also a CSV).
    With ``options`` (a mapping file), only the formats that take them, given them."""
    formats = [*task_type.readers, *GENERIC_FORMATS]
    if options:
        formats = [
            fmt
            for fmt in formats
            if fmt in task_type.readers
            and set(options) <= set(inspect.signature(task_type.readers[fmt]).parameters)
        ]
    return {fmt: _reader_for(task_type, fmt, options) for fmt in formats}


def formats_taking(*, task_type: TaskType, option: str) -> list[str]:
    """The task type's import formats whose reader takes ``option`` (e.g. a ``mapping`` file)."""
    return [
        fmt
        for fmt, reader in task_type.readers.items()
        if option in inspect.signature(reader).parameters
    ]


def _csv_reader(task_type: TaskType) -> Reader:
    def read(stream: IO[str]) -> Iterator[tuple[str, dict]]:
        header = stream.readline()
        problem = semicolon_problem(header=header)
        if problem:
            raise PayloadError(problem, location="line 1")
        # Bad quoting is an error, not merged rows.
        reader = csv.DictReader(itertools.chain([header], stream), strict=True)
        rows = iter(reader)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except csv.Error as exc:  # e.g. an unterminated quote, a cell over the limit
                # The reader counts the lines of the rows it finished: the bad row starts on
                # the next one.
                location = f"line {reader.line_num + 1}"
                if "field larger than field limit" in str(exc):
                    most = csv.field_size_limit()
                    raise PayloadError(
                        f"a cell has more than {most:,} characters; a record may have at most "
                        f"{settings.CONCORD_MAX_RECORD_CHARS:,} (setting CONCORD_MAX_RECORD_CHARS)",
                        location=location,
                    ) from None
                raise PayloadError(f"not valid CSV: {exc}", location=location) from None
            # Line numbers count the header, as a spreadsheet shows them.
            location = f"line {reader.line_num}"
            if None in row:
                raise PayloadError("more cells than header columns", location=location)
            try:
                payload = task_type.csv_to_payload(row)
            except PayloadError as exc:  # a cell named by the task type's decoding
                exc.location = exc.location or location
                raise
            except (ValueError, TypeError, RecursionError) as exc:
                raise PayloadError(f"cannot read the row: {exc}", location=location) from None
            yield location, payload

    return read


def _reader_for(task_type: TaskType, fmt: str, options: Mapping[str, Any] | None = None) -> Reader:
    reader: Reader
    if fmt == "jsonl":
        reader = jsonl_records
    elif fmt == "csv":
        reader = _csv_reader(task_type)
    elif fmt in task_type.readers:
        reader = task_type.readers[fmt]
    else:
        raise ImportFailed(
            f"Unknown format {fmt!r} for {task_type.name}; choose one of {', '.join(available_formats(task_type=task_type))}."
        )
    if not options:
        return reader
    accepted = inspect.signature(reader).parameters
    for name in options:
        if name not in accepted or name == "stream":
            raise ImportFailed(f"Nothing imported. The {fmt} format takes no {name} option.")
    return functools.partial(reader, **options)


def _prepared_records(
    records: Iterable[tuple[str, dict]], task_type: TaskType, config: dict, report: ImportReport
) -> Iterator[tuple[str, PreparedItem]]:
    """Validate record by record (so the first bad one stops the import at once), then prepare
    in chunks so task types can batch expensive work such as sentence splitting."""
    # The locations already listed under each note: a note may concern every record of the
    # file (citation recovery's seeded choice), and a list membership test made the import
    # quadratic in the file size.
    noted: dict[str, set[str]] = {note: set(locations) for note, locations in report.notes.items()}
    for chunk in _chunks(_validated(records, task_type, report), CHUNK_SIZE):
        results = task_type.prepare_batch([payload for _, payload in chunk], config=config)
        for (location, _), result in zip(chunk, results, strict=True):
            if isinstance(result, PayloadError):
                result.location = result.location or location
                raise result
            if not result:
                report.skipped.append(location)
            for item in result:
                _check_fits(item, location)
                for note in item.notes:
                    seen = noted.setdefault(note, set())
                    if location not in seen:
                        seen.add(location)
                        report.notes.setdefault(note, []).append(location)
                yield location, item


def prepare_record(
    *, task_type: TaskType, config: dict, record: dict[str, Any]
) -> list[PreparedItem]:
    """The items one record makes, checked exactly as an import checks it (a fix of one item's
    record: ``studies.services.item_fixes``). Raises ``PayloadError`` naming the field."""
    report = ImportReport(skip_reason=task_type.skip_reason, fmt="record")
    return [
        item for _, item in _prepared_records([("the record", record)], task_type, config, report)
    ]


# An item handed out is fixed one at a time, with its revision recorded (item_fixes).
FIX_HINT = "; fix it on its item page, which records a new revision of the item"


# Item columns a task type fills from the record, with the record field to name in an error.
_ITEM_LIMITS: tuple[tuple[str, str, int], ...] = tuple(
    (attribute, field_name, Item._meta.get_field(attribute).max_length or 0)  # type: ignore[union-attr]
    for attribute, field_name in (("external_id", "id"), ("group", "group"))
)


def _check_fits(item: PreparedItem, location: str) -> None:
    """An item's external id and group fit their columns (a task type may build them from
    several fields, e.g. ``id#evidence`` in the full masking setting)."""
    for attribute, field_name, limit in _ITEM_LIMITS:
        value = getattr(item, attribute)
        if len(value) > limit:
            raise PayloadError(
                f"the item's {attribute.replace('_', ' ')} built from this record "
                f"({value[:60]!r}…) is {len(value)} characters; at most {limit}",
                field=field_name,
                location=location,
            )


def _validated(
    records: Iterable[tuple[str, dict]], task_type: TaskType, report: ImportReport
) -> Iterator[tuple[str, dict]]:
    for location, record in records:
        report.records += 1
        try:
            # Keep fields the task type does not know (provenance such as article ids) next to
            # the validated ones.
            validated = task_type.validate_payload(record)
            _check_storable({k: v for k, v in record.items() if k not in validated})
        except PayloadError as exc:
            exc.location = exc.location or location
            raise
        except (ValueError, TypeError, RecursionError) as exc:  # e.g. a number too long to convert
            raise PayloadError(f"cannot read the record: {exc}", location=location) from None
        yield location, {**record, **validated}


# The text a record may carry in fields the task type does not use (kept as provenance): the
# task type's own fields have their own limits, these had none (found by the outside probe: a
# 40 MB field was stored).
MAX_KEPT_CHARACTERS = 1_000_000


def _check_storable(extra: dict) -> None:
    """Fields kept as they came (provenance) must be storable: PostgreSQL's jsonb refuses NUL and
    lone surrogates, and would otherwise fail the whole import with a bare database error; and
    they are bounded (``MAX_KEPT_CHARACTERS`` of text per record)."""
    kept = 0
    for key, value in extra.items():
        for text in _strings(value):
            if "\x00" in text:
                raise PayloadError("contains a NUL character", field=str(key))
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise PayloadError(
                    "contains an invalid (surrogate) character", field=str(key)
                ) from None
            kept += len(text)
            if kept > MAX_KEPT_CHARACTERS:
                raise PayloadError(
                    f"the record's fields that the task type does not use hold more than "
                    f"{MAX_KEPT_CHARACTERS:,} characters of text (they are kept as provenance); "
                    "leave large fields out of the import",
                    field=str(key),
                )


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def _chunks(iterable: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for element in iterable:
        chunk.append(element)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def import_items(
    *,
    project: Project,
    stream: IO[str] | IO[bytes],
    fmt: str,
    update: bool = False,
    progress: Callable[[ImportReport], None] | None = None,
    options: Mapping[str, Any] | None = None,
    by: AbstractBaseUser | None = None,
    source: str = "",
) -> ImportReport:
    """Import a file into ``project``. Raises ``ImportFailed`` (and writes nothing) on the first
    bad record, on an external id that already exists (unless ``update``), on an update of an
    item that already has annotations, or on an invalid project configuration. ``options`` go to
    a task-specific reader as keyword arguments (e.g. a ``mapping`` file; see ``formats_taking``).
    ``by`` and ``source`` (the file's name): for the project's audit log, whose entry (with the
    counts) is written in the import's transaction."""
    task_type = task_types.get(project.task_type)
    try:
        config = task_type.validate_config(project.config)
    except ValidationError as exc:
        field_name, message = first_error(exc.detail)
        raise ImportFailed(
            f"Nothing imported. The project configuration is invalid: {field_name or 'config'}: {message}"
        ) from None
    text: IO[str] = (
        io.TextIOWrapper(cast("IO[bytes]", stream), encoding="utf-8-sig", newline="")
        if isinstance(stream.read(0), bytes)
        else cast("IO[str]", stream)
    )
    try:
        sample, complete, sampled = sample_of(stream=text)
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from None
    # The formats whose reader takes a first record from the file's beginning (asked only when
    # the format is to be detected, or to name the likely one when the chosen one reads nothing).
    matching = functools.cache(
        lambda: formats_matching(
            task_type=task_type, readers=_detectable_readers(task_type, options), sample=sample
        )
    )
    report = ImportReport(skip_reason=task_type.skip_reason, fmt=fmt)
    if fmt == DETECT:
        report.fmt, report.detected = _detected(task_type, matching(), sample, complete), True
    reader = _reader_for(task_type, report.fmt, options)
    try:
        _import_records(
            project,
            task_type,
            config,
            reader(cast(IO[str], sampled)),
            update,
            report,
            progress,
            audit=functools.partial(_audit_import, project, report, by, source),
        )
    except PayloadError as exc:
        read_as = f"Read as {report.fmt} (detected): " if report.detected else ""
        hint = _hint(matching().valid, report.fmt, sample) if report.records <= 1 else ""
        message = f"Nothing imported. {read_as}{exc}"
        raise ImportFailed(sentences(message, hint) if hint else message) from None
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from None
    if not report.records:
        empty = " (it is empty)" if not sample.strip() else ""
        raise ImportFailed(
            sentences(
                f"Nothing imported. The file holds no records in the {report.fmt} format{empty}",
                _hint(matching().valid, report.fmt, sample),
            )
        )
    # Fresh planner statistics for the free-item lookup after a bulk import (PostgreSQL only).
    # An import writes items only: the assignment and answer tables keep their statistics.
    annotation_services.statistics_refresh(
        rows=report.created + report.updated, model_classes=(Item,)
    )
    return report


def _import_records(
    project: Project,
    task_type: TaskType,
    config: dict,
    records: Iterable[tuple[str, dict]],
    update: bool,
    report: ImportReport,
    progress: Callable[[ImportReport], None] | None,
    *,
    audit: Callable[[], None],
) -> None:
    """Validate, prepare and write the records, all in one transaction (nothing is written if
    one of them is refused); ``audit`` writes the audit entry at its end."""
    seen: set[str] = set()
    # The collector's full passes walk only the import's own objects (core.heap).
    with older_objects_set_aside(), transaction.atomic(), _BackgroundCopy() as copier:
        _take_turn(project)
        last = Item.objects.filter(project=project).aggregate(p=Max("position"))["p"]
        writer = _ChunkWriter(
            project=project,
            seen=seen,
            position=(last or 0) + 1,
            update=update,
            report=report,
            had_items=last is not None,
            copier=copier,
        )
        for chunk in _chunks(_prepared_records(records, task_type, config, report), CHUNK_SIZE):
            writer.write(chunk)
            # With DEBUG on, Django keeps every SQL statement of the request or task; the bulk
            # inserts of a large file would pile up there (memory must stay flat).
            reset_queries()
            if progress:
                progress(report)
        if report.records:  # a file of no records is refused (nothing written, nothing logged)
            audit()


def _audit_import(
    project: Project, report: ImportReport, by: AbstractBaseUser | None, source: str
) -> None:
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.ITEMS_IMPORTED,
        summary=f"Imported {source or 'a file'}: {report.summary()}",
        changes={
            "source": source,
            "format": report.fmt,
            "records": report.records,
            "created": report.created,
            "updated": report.updated,
            "skipped": len(report.skipped),
        },
    )


def _detected(task_type: TaskType, detection: Detection, sample: str, complete: bool) -> str:
    """The first format whose first record the task type accepts; else the first that reads a
    record at all, so that the import names the line and field at fault in it."""
    if detection.valid or detection.readable:
        return (detection.valid or detection.readable)[0]
    if not sample.strip():
        raise ImportFailed("Nothing imported. The file is empty: it holds no records.")
    formats = ", ".join(available_formats(task_type=task_type))
    unsure = (
        ""
        if complete or not starts_as_json(sample=sample)
        else "Only the file's first 4 MiB are looked at, so a format that is one JSON document "
        "larger than that is not detected: choose it"
    )
    semicolons = semicolon_hint(sample=sample)
    first_line = _first_json_line_problem(sample)
    raise ImportFailed(
        sentences(
            f"Nothing imported. None of the formats of {task_type.name} ({formats}) reads a "
            "first record from this file",
            first_line,
            shape_hint(sample=sample),
            semicolons,
            unsure,
            "" if semicolons or first_line else "Choose the format to see what is wrong in it",
        ),
        field="format",
    )


def _first_json_line_problem(sample: str) -> str:
    """For a file whose first record is one JSON object on its line (JSON Lines' shape), what is
    wrong with it, as the JSON Lines reader would say it: a probe's finding was that a huge
    number, NaN, NUL or deep nesting in line 1 was only reported as "no format reads it"."""
    from core.json_safety import UnsafeJSON, loads

    lines = sample.splitlines()
    number, line = next(((n, text) for n, text in enumerate(lines, 1) if text.strip()), (0, ""))
    if not line.lstrip().startswith("{") or not line.rstrip().endswith("}"):
        return ""
    try:
        loads(line)
    except UnsafeJSON as exc:
        where = f", field {exc.field!r}" if exc.field else ""
        return f"Read as JSON Lines, line {number}{where}: {exc.message}"
    except ValueError as exc:
        return f"Read as JSON Lines, line {number} is not JSON: {exc}"
    return ""


def _hint(valid: list[str], chosen: str, sample: str) -> str:
    """The format the file looks like; else, for a JSON document read as JSON Lines, what it
    is."""
    return looks_like(formats=valid, chosen=chosen) or (
        shape_hint(sample=sample) if chosen == "jsonl" else ""
    )


def _not_utf8(exc: UnicodeDecodeError) -> ImportFailed:
    utf16 = isinstance(exc.object, bytes) and exc.object[:2] in (b"\xff\xfe", b"\xfe\xff")
    hint = "; it looks like UTF-16: save it as UTF-8" if utf16 else ""
    return ImportFailed(f"Nothing imported. The file is not UTF-8 text ({exc.reason}{hint}).")


# The first key of the transaction-level advisory lock that imports into one project take.
_IMPORT_LOCK = 0x436F6E63  # "Conc"


def _take_turn(project: Project) -> None:
    """Imports into one project take turns (until the transaction ends): a second import of the
    same file then finds the first one's items and is refused with the usual message, not a
    unique-key error from inside COPY. Annotators are not held up (no row is locked); SQLite
    serialises writing transactions anyway."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_IMPORT_LOCK, project.pk])


@dataclass
class _ChunkWriter:
    """Writes the chunks of one import: checks their external ids, inserts the new items (in
    queue order) and replaces the changed ones."""

    project: Project
    seen: set[str]  # external ids of the file so far
    position: int  # the next new item's queue position
    update: bool
    report: ImportReport
    had_items: bool  # whether the project had items before this import
    copier: _BackgroundCopy

    def write(self, chunk: list[tuple[str, PreparedItem]]) -> None:
        self._refuse_repeats(chunk)
        existing = self._replaceable(chunk)
        new_items: list[tuple[int, PreparedItem]] = []
        changed = []
        now = timezone.now()
        for _, item in chunk:
            if item.external_id in existing:
                # bulk_update skips auto_now: set it, so cached agreement reports see the change.
                changed.append(
                    Item(
                        id=existing[item.external_id],
                        updated_at=now,
                        payload=item.payload,
                        prepared=item.prepared,
                        gold=item.gold,
                        group=item.group,
                        kind=item.kind,
                    )
                )
            else:
                new_items.append((self.position, item))
                self.position += 1
        _insert_items(self.project, new_items, now=now, copier=self.copier)
        if changed:
            Item.objects.bulk_update(
                changed,
                ["payload", "prepared", "gold", "group", "kind", "updated_at"],
                batch_size=CHUNK_SIZE,
            )
        self.report.created += len(new_items)
        self.report.updated += len(changed)

    def _refuse_repeats(self, chunk: list[tuple[str, PreparedItem]]) -> None:
        """An external id the file has given already is refused, naming where."""
        for location, item in chunk:
            if item.external_id in self.seen:
                raise PayloadError(
                    f"external id {item.external_id!r} appears twice in the file",
                    field="id",
                    location=location,
                )
            self.seen.add(item.external_id)

    def _replaceable(self, chunk: list[tuple[str, PreparedItem]]) -> dict[str, int]:
        """The chunk's items the project has already (external id -> item id), locked, their
        judge answers dropped: refused unless the import updates, or once handed out."""
        ids = [item.external_id for _, item in chunk]
        # Into a project without items, only the file itself can repeat an id (checked above);
        # the query would cost more with every chunk (the items just copied in have no planner
        # statistics yet).
        if not self.had_items:
            return {}
        existing = dict(
            Item.objects.filter(project=self.project, external_id__in=ids).values_list(
                "external_id", "id"
            )
        )
        if existing and not self.update:
            location = next(loc for loc, item in chunk if item.external_id in existing)
            external_id = next(i for i in ids if i in existing)
            raise PayloadError(
                f"an item with external id {external_id!r} already exists in this project "
                "(use update to replace it)",
                field="id",
                location=location,
            )
        if existing:
            # Lock the rows first so no annotator is handed an item while it changes under them.
            list(
                Item.objects.select_for_update().filter(id__in=existing.values()).values_list("id")
            )
            handed_out = set(
                Assignment.objects.filter(item_id__in=existing.values()).values_list(
                    "item__external_id", flat=True
                )
            )
            if handed_out:
                raise PayloadError(
                    f"item {sorted(handed_out)[0]!r} has already been given to annotators and cannot "
                    f"be updated by an import (their answers refer to the text they saw){FIX_HINT}",
                    field="id",
                    location=next(loc for loc, item in chunk if item.external_id in handed_out),
                )
            # Judge answers were computed on the old text and gold: they go, a re-run recomputes them.
            JudgeResult.objects.filter(item_id__in=existing.values()).delete()
        return existing


# The columns an import writes, in COPY order; the others keep their database defaults.
_COPY_COLUMNS = (
    "project_id",
    "external_id",
    "payload",
    "prepared",
    "gold",
    "kind",
    "group",
    "position",
    "shuffle_key",
    "assigned_count",
    "is_full",
    "created_at",
    "updated_at",
)


def _insert_items(
    project: Project, items: list[tuple[int, PreparedItem]], *, now, copier: _BackgroundCopy
) -> None:
    """Insert new items (with their queue positions): one ``COPY`` per chunk on PostgreSQL (no
    model instances, no SQL statement to build and parse for a thousand rows of JSON), run by
    ``copier`` while the next chunk is prepared; ``bulk_create`` elsewhere. COPY fires the same
    insert triggers as an INSERT (the row-level ``is_full`` one, the statement-level counters)."""
    if not items:
        return
    if not _copy_supported():
        Item.objects.bulk_create(
            [
                Item(
                    project=project,
                    external_id=item.external_id,
                    position=position,
                    payload=item.payload,
                    prepared=item.prepared,
                    gold=item.gold,
                    group=item.group,
                    kind=item.kind,
                )
                for position, item in items
            ],
            batch_size=CHUNK_SIZE,
        )
        return
    buffer = io.StringIO()
    # Fixed per row: project, then (after the item's columns) the defaults bulk_create would
    # send: no assignment yet, not full, created and updated now.
    project_id = f"{project.pk}\t"
    defaults = f"\t0\tf\t{now.isoformat()}\t{now.isoformat()}\n"
    for position, item in items:
        buffer.write(project_id)
        buffer.write(
            "\t".join(
                (
                    _copy_text(item.external_id),
                    _copy_json(item.payload),
                    _copy_json(item.prepared),
                    "\\N" if item.gold is None else _copy_json(item.gold),
                    _copy_text(item.kind),
                    _copy_text(item.group),
                    str(position),
                    str(new_shuffle_key()),
                )
            )
        )
        buffer.write(defaults)
    buffer.seek(0)
    columns = ", ".join(connection.ops.quote_name(column) for column in _COPY_COLUMNS)
    copier.submit(
        f"COPY {connection.ops.quote_name(Item._meta.db_table)} ({columns}) FROM STDIN", buffer
    )


class _BackgroundCopy:
    """Runs an import's ``COPY`` statements one at a time on a thread of its own, on the
    import's connection and in its transaction: the database stores one chunk while Python
    prepares the next (psycopg2 releases the GIL while it waits on the server).

    A connection serves one statement at a time, so every other query of the import (through
    Django, including the upload reader's) first waits for the COPY in flight; so does leaving
    the block, before the transaction commits or rolls back. A failed COPY raises there.
    """

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        self._wrapper: AbstractContextManager[None] | None = None

    def __enter__(self) -> _BackgroundCopy:
        if _copy_supported():
            self._wrapper = connection.execute_wrapper(self._after_copy)
            self._wrapper.__enter__()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            self._wait(raise_error=exc_type is None)
        finally:
            if self._wrapper is not None:
                self._wrapper.__exit__(exc_type, exc, traceback)
            if self._executor is not None:
                self._executor.shutdown()

    def submit(self, sql: str, buffer: IO[str]) -> None:
        self._wait(raise_error=True)
        connection.ensure_connection()
        raw = connection.connection  # psycopg2's own connection: no Django thread check
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-copy")
        self._pending = self._executor.submit(_copy, raw, sql, buffer)

    def _after_copy(self, execute, sql, params, many, context):
        self._wait(raise_error=True)
        return execute(sql, params, many, context)

    def _wait(self, *, raise_error: bool) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        error = pending.exception()
        if error is not None and raise_error:
            with connection.wrap_database_errors:  # psycopg2's error as Django's, as elsewhere
                raise error


def _copy(raw_connection, sql: str, buffer: IO[str]) -> None:
    # psycopg2 reads the buffer 8 KiB at a time by default, taking the GIL for each read: a few
    # hundred waits behind the preparing thread per chunk. Reading it at most 4 MiB at a time
    # keeps this thread waiting on the server, not on the GIL.
    with raw_connection.cursor() as cursor:
        cursor.copy_expert(sql, buffer, size=4 * 1024 * 1024)


def _copy_supported() -> bool:
    return connection.vendor == "postgresql"


def _copy_text(value: str) -> str:
    """A value in COPY's text format: backslash, tab, newline and carriage return escaped."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        value = (
            value.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )
    return value


def _copy_json(value) -> str:
    """``value`` in COPY's text format, for a jsonb column: the value bulk_create stores (psycopg2's
    Json adapter sends ``json.dumps``). orjson writes the same JSON, but non-ASCII characters as
    UTF-8 rather than ``\\u`` escapes and floats with the same digits (the same numeric in
    jsonb); both escape control characters, so only backslashes need COPY's escaping.
    ``json.dumps`` writes what orjson refuses (a lone surrogate, an integer beyond 64 bits, a key
    that is not text, a datetime or dataclass, nesting beyond 255) and anything in which orjson
    wrote ``null``, since that may be a NaN or infinity (``json.dumps`` writes ``NaN``, which
    PostgreSQL refuses, as before). Unlike ``json.dumps``, orjson also writes UUIDs and enums; no
    task type puts them in an item."""
    try:
        text = orjson.dumps(
            value, option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
        )
    except orjson.JSONEncodeError:
        text = None
    if text is None or b"null" in text:
        return json.dumps(value).replace("\\", "\\\\")
    return text.decode().replace("\\", "\\\\")
