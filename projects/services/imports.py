"""Importing items: file → records → task type's payload serializer → ``prepare()`` → bulk insert.

The whole import is one transaction: the first invalid record aborts it with a message naming its
line (or claim id) and field, and nothing is half-imported. Records are processed in chunks so
memory stays flat in the file size (only the set of seen external ids grows).
"""

from __future__ import annotations

import csv
import functools
import inspect
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import reset_queries, transaction
from django.db.models import Max
from rest_framework.exceptions import ValidationError

from annotation import task_types
from annotation.models import Annotation, Item
from annotation.task_types import PayloadError, PreparedItem, TaskType
from annotation.task_types.base import first_error

CHUNK_SIZE = 1000
GENERIC_FORMATS = ("jsonl", "csv")


class ImportFailed(Exception):
    """The import was refused; nothing was written. ``str()`` names the line and field."""


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    records: int = 0
    skipped: list[str] = field(default_factory=list)  # locations of records with nothing to annotate

    def summary(self) -> str:
        text = f"{self.records} records read, {self.created} items created, {self.updated} updated"
        if self.skipped:
            text += f", {len(self.skipped)} skipped (explanation cites no evidence: {', '.join(self.skipped[:5])}"
            text += ", …)" if len(self.skipped) > 5 else ")"
        return text


def available_formats(task_type: TaskType) -> list[str]:
    return [*GENERIC_FORMATS, *task_type.readers]


def _read_jsonl(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        location = f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PayloadError(f"not valid JSON ({exc.msg}, column {exc.colno})", location=location) from None
        if not isinstance(record, dict):
            raise PayloadError("each line must be a JSON object", location=location)
        yield location, record


def _csv_reader(task_type: TaskType) -> Callable[[IO[str]], Iterator[tuple[str, dict]]]:
    def read(stream: IO[str]) -> Iterator[tuple[str, dict]]:
        reader = csv.DictReader(stream)
        for row in reader:
            # Line numbers count the header, as a spreadsheet shows them.
            location = f"line {reader.line_num}"
            if None in row:
                raise PayloadError("more cells than header columns", location=location)
            try:
                yield location, task_type.csv_to_payload(row) if task_type.csv_to_payload else row
            except (ValueError, TypeError) as exc:
                raise PayloadError(f"cannot read the row: {exc}", location=location) from None

    return read


def _reader_for(
    task_type: TaskType, fmt: str, options: Mapping[str, Any] | None = None
) -> Callable[[IO[str]], Iterator[tuple[str, dict]]]:
    if fmt == "jsonl":
        reader = _read_jsonl
    elif fmt == "csv":
        reader = _csv_reader(task_type)
    elif fmt in task_type.readers:
        reader = task_type.readers[fmt]
    else:
        raise ImportFailed(
            f"Unknown format {fmt!r} for {task_type.name}; choose one of {', '.join(available_formats(task_type))}."
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
    for chunk in _chunks(_validated(records, task_type, report), CHUNK_SIZE):
        results = task_type.prepare_batch([payload for _, payload in chunk], config=config)
        for (location, _), result in zip(chunk, results, strict=True):
            if isinstance(result, PayloadError):
                result.location = result.location or location
                raise result
            if not result:
                report.skipped.append(location)
            for item in result:
                yield location, item


def _validated(
    records: Iterable[tuple[str, dict]], task_type: TaskType, report: ImportReport
) -> Iterator[tuple[str, dict]]:
    for location, record in records:
        report.records += 1
        try:
            # Keep fields the task type does not know (provenance such as article ids) next to
            # the validated ones.
            yield location, {**record, **task_type.validate_payload(record)}
        except PayloadError as exc:
            exc.location = exc.location or location
            raise


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
    project,
    stream: IO[str] | IO[bytes],
    fmt: str,
    update: bool = False,
    progress: Callable[[ImportReport], None] | None = None,
    options: Mapping[str, Any] | None = None,
) -> ImportReport:
    """Import a file into ``project``. Raises ``ImportFailed`` (and writes nothing) on the first
    bad record, on an external id that already exists (unless ``update``), on an update of an
    item that already has annotations, or on an invalid project configuration. ``options`` go to
    a task-specific reader as keyword arguments (e.g. ``mapping`` for ranking's ``reprohum``)."""
    task_type = task_types.get(project.task_type)
    try:
        config = task_type.validate_config(project.config)
    except ValidationError as exc:
        field_name, message = first_error(exc.detail)
        raise ImportFailed(
            f"Nothing imported. The project configuration is invalid: {field_name or 'config'}: {message}"
        ) from None
    if isinstance(stream.read(0), bytes):
        stream = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = _reader_for(task_type, fmt, options)
    report = ImportReport()
    seen: set[str] = set()
    try:
        with transaction.atomic():
            position = (Item.objects.filter(project=project).aggregate(p=Max("position"))["p"] or 0) + 1
            records = _prepared_records(reader(stream), task_type, config, report)
            for chunk in _chunks(records, CHUNK_SIZE):
                position = _write_chunk(project, chunk, seen, position, update, report)
                # With DEBUG on, Django keeps every SQL statement of the request or task; the bulk
                # inserts of a large file would pile up there (memory must stay flat).
                reset_queries()
                if progress:
                    progress(report)
    except PayloadError as exc:
        raise ImportFailed(f"Nothing imported. {exc}") from None
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"Nothing imported. The file is not UTF-8 text ({exc.reason}).") from None
    return report


def _write_chunk(project, chunk, seen, position, update, report) -> int:
    ids = [item.external_id for _, item in chunk]
    for location, item in chunk:
        if item.external_id in seen:
            raise PayloadError(f"external id {item.external_id!r} appears twice in the file", field="id", location=location)
        seen.add(item.external_id)
    existing = dict(
        Item.objects.filter(project=project, external_id__in=ids).values_list("external_id", "id")
    )
    if existing and not update:
        location = next(loc for loc, item in chunk if item.external_id in existing)
        external_id = next(i for i in ids if i in existing)
        raise PayloadError(
            f"an item with external id {external_id!r} already exists in this project "
            "(use update to replace it)",
            field="id",
            location=location,
        )
    if existing:
        annotated = set(
            Annotation.objects.filter(item_id__in=existing.values()).values_list("item__external_id", flat=True)
        )
        if annotated:
            raise PayloadError(
                f"item {sorted(annotated)[0]!r} already has annotations and cannot be updated",
                field="id",
                location=next(loc for loc, item in chunk if item.external_id in annotated),
            )
    new_items, changed = [], []
    for _, item in chunk:
        fields = dict(payload=item.payload, prepared=item.prepared, gold=item.gold, group=item.group, kind=item.kind)
        if item.external_id in existing:
            changed.append(Item(id=existing[item.external_id], **fields))
        else:
            new_items.append(Item(project=project, external_id=item.external_id, position=position, **fields))
            position += 1
    Item.objects.bulk_create(new_items, batch_size=CHUNK_SIZE)
    if changed:
        Item.objects.bulk_update(changed, ["payload", "prepared", "gold", "group", "kind"], batch_size=CHUNK_SIZE)
    report.created += len(new_items)
    report.updated += len(changed)
    return position
