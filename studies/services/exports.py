"""Exporting annotations as JSONL or CSV, streamed in constant memory.

One row per current annotation version: item external id, group, kind, pseudonymous annotator id,
the task type's answer columns (with gold and scores), time spent, timestamps and provenance;
then the annotator's qualification state (``excluded`` when disqualified), the item's majority
answer (by the task type's agreement key), its adjudicated answer, and the judge whose
pre-selection the annotator was shown (empty when none); the settings version the answer was
made under (``settings_version``, empty for answers stored before versions were recorded), the
item's revision it was made on (``item_revision``: a researcher's fix of the item's record moves
it; empty for answers stored before items had revisions), the item's place in the annotator's order (``sequence``, 1-based) and how it was laid out for them
(``presentation``: which side first, the outputs' order; JSON, empty where nothing is
counterbalanced). Task
types may write several rows per annotation (``export_rows``: claim review, ranking), each
repeating those common columns.

``coders`` chooses whose answers: ``humans`` (the default; the rows above, unchanged),
``external`` (the external coders': annotations collected elsewhere and imported), ``judges`` or
``all`` (humans, external coders and judges). Outside ``humans``, every row gains ``coder_kind``
(human / external / judge), ``coder`` (the annotator's pseudonym, ``ext:<name>`` or the judge's
name) and ``coder_source`` (where the answer was made: ``concord`` for annotators and judges on
this platform, the source label given at import for an external coder, e.g. the file name), and
with ``all`` the judge columns (:data:`JUDGE_COLUMNS`, empty on the others' rows), so one CSV
holds them all. An external coder's row has the same columns as a human's: ``annotator`` is
``ext:<name>``, ``submitted_at`` the time the source recorded, ``time_spent_s`` the source's (or
empty); what only Concord knows of an annotator (reservation, reported time, qualification,
pre-selection) is empty, and the review's ``majority`` and ``adjudicated`` (human answers only)
are empty too. A judge row has the task type's columns for the
judge's answer (built by the same ``export_rows`` hook) and one judge row per stored result
(every judge, prompt version and setting). The judge columns all start with ``judge_`` so
that none collides with a task type's column (argument structure has an ``outcome``). An
unparseable or failed result has its message in ``judge_message`` and empty answer columns,
never an answer. The human-only columns
(annotator, times, verdicts, pre-selection) are empty on judge rows. The judge's raw reply is
in JSONL only (``judge_raw_reply``), never in CSV.

Rows are read from server-side cursors (PostgreSQL) as plain values, never model instances
(issue 16): the human answers in one query joining each answer's item, assignment, the item's
current adjudication and the pre-selection shown, ordered by item, so an item's majority comes
from the rows at hand; the item's own JSON from a second cursor in the same order (a merge
join: once per item, not per answer; walked along ``item_export_order_idx``, not sorted with
its JSON), only the fields the task type names in
``export_item_fields``, decoded with orjson. A thread fetches each cursor's next chunk while
the current one is written; that changes nothing in what is read: when a cursor fails mid-way,
the rows it produced before the failure are handed on, then its error ends the export, on every
database and however the threads are timed (text goes out in chunks of ``TEXT_CHUNK`` rows, so
the command's file or a download ends at the last whole chunk, and the command exits with the
error). Memory stays flat in rows. JSONL is written by orjson (compact: no
space after ``,`` and ``:``; the same values as before); CSV text is unchanged, its lines made in
Python (:func:`_csv_cells`: the bytes ``csv.writer`` wrote, faster). An answer's several rows
(claims, questions, criteria and systems) share its columns, written once per answer and joined
to each row's own (the same bytes). While an export runs, the objects that existed before it are
left out of the garbage collector's passes (``core.heap.older_objects_set_aside``, as imports
are). On PostgreSQL the export reads in one transaction of its own (cursors without ``WITH HOLD``). Downloads and
the command take text in chunks of many rows (``export_chunks``); ``export_stream``,
``export_jsonl`` and ``export_csv`` hand out one row per chunk. What downloads and the command
write (``export_download``) ends with a trailer line, row count and sha256 of the bytes before
it, that ``studies.export_check`` checks (issue 34: a cut-off download looked complete).

A task type whose rows cost far more to make than to write (``export_columns_stored``: argument
structure) has each human answer's own columns stored as this export writes them, JSONL and
CSV text with the answer's agreement key (``studies.models.ReadyExportColumns``, keyed by what
they depend on: ``studies.services.export_columns``), read a batch at a time and passed through
undecoded while current (:func:`_stored_human_answers`); the same bytes as making them.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import queue
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby, islice
from operator import itemgetter
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import FilteredRelation, Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from annotation import task_types
from annotation.models import Annotation, ExternalAnnotation, Item, readable_isoformat
from annotation.review import majority_key
from annotation.task_types import ExtraExport, TaskType
from core import liveness
from core.errors import Refusal
from core.heap import collections_spaced, older_objects_set_aside
from core.spreadsheet import FORMULA_START
from llm_judges.models import Judge, JudgeResult
from llm_judges.selectors import judge_result_rows
from projects.audit import AuditKind, audit_record
from projects.models import Membership, Project
from studies.export_check import with_end_line
from studies.models import ExportColumnsState, ReadyExportColumns
from studies.selectors.export_columns import project_columns_version
from studies.services.export_columns import (
    Columns,
    ColumnsBasis,
    ColumnsWriter,
    StoredColumns,
    read_columns,
)

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

FORMATS = ("jsonl", "csv")
CODERS = ("humans", "external", "judges", "all")
HERE = "concord"  # coder_source of answers made on this platform
CHUNK = 2000  # rows per fetch from a server-side cursor
TEXT_CHUNK = 500  # rows per text chunk handed to a streaming response
BATCH_ITEMS = 500  # items per call of a task type's prepare_rows hook (``_prepared_in_batches``)
SORT_MEMORY = "64MB"  # PostgreSQL work_mem of an export's transaction (300k rows sort in ~25 MB)

JUDGE_COLUMNS = (
    "judge",
    "judge_kind",  # llm / nli / embedding
    "judge_model",
    "judge_prompt_name",
    "judge_prompt_version",
    "judge_prompt_fingerprint",  # LLM judges only: embedding and NLI judges use no prompt
    "judge_settings",  # what decided the answers: kind, model, threshold / label map / sampling
    "judge_settings_fingerprint",  # sha256 of judge_settings
    "judge_setting",
    "judge_presentation",  # blank: as annotators see it; "reversed": ranking position bias
    "judge_run_id",  # the run that produced the result (a later run may have claimed it)
    "judge_outcome",  # ok / unparseable / failed / not_run (the run's budget was reached)
    "judge_message",  # a server's error: its status and error class, never its body
    "judge_error_class",  # unreachable, timeout, server_error…, unparseable, truncated, budget…
    "judge_attempts",
    "judge_latency_ms",
    "judge_input_tokens",
    "judge_output_tokens",
    "judge_finish_reason",  # LLM: stop, length (cut at max_tokens)…
    "judge_seed",  # LLM: the sampling seed sent
    "judge_schema_valid",  # LLM: the reply was exactly JSON matching the prompt's schema
    "judge_removed_nul",  # NUL characters removed from the reply and answer to store them
)
HUMAN_ONLY = (
    "annotator",
    "version",
    "time_spent_s",
    "reported_time_s",
    "reserved_at",
    "submitted_at",
    "annotator_qualification",
    "excluded",
    "majority",
    "adjudicated",
    "preselection_shown",
    "settings_version",
    "item_revision",
    "sequence",
    "presentation",
)


def extra_formats(*, project: Project) -> Mapping[str, ExtraExport]:
    """The project's task type's own export formats (another tool's files), by name."""
    return task_types.get(project.task_type).export_formats


def extra_export_download(
    *, project: Project, fmt: str, by: AbstractBaseUser | None = None, via: str = "download"
) -> Iterator[str]:
    """The text of the task type's own export format ``fmt`` (another tool's file), recorded in
    the project's audit log as asked for, like :func:`export_download`."""
    extra = extra_formats(project=project)[fmt]
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.EXPORTED,
        summary=f"Exported the project as {extra.title} ({via}).",
        changes={"format": fmt, "via": via},
    )
    return iter(extra.stream(project))


def items_export_record(
    *, project: Project, fmt: str, query: Mapping[str, str], by: AbstractBaseUser | None = None
) -> None:
    """Record in the project's audit log that ``by`` downloaded the item browser's rows of the
    filter ``query`` (its non-empty parameters) as ``fmt``."""
    used = {name: value for name, value in sorted(query.items()) if value}
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.EXPORTED,
        summary=f"Exported the item browser's rows as {fmt}"
        + (f" (filter: {', '.join(f'{k}={v}' for k, v in used.items())})." if used else "."),
        changes={"format": fmt, "via": "item browser", "filter": used},
    )


def export_options(*, fmt: str, coders: str, project: Project | None = None) -> None:
    """Refuse an unknown format or coder choice, naming the field (with ``project``, its task
    type's own formats are known too)."""
    known = [*FORMATS, *(extra_formats(project=project) if project is not None else ())]
    if fmt not in known:
        raise Refusal(
            f"Unknown export format {fmt!r}; choose one of {', '.join(known)}.", field="format"
        )
    if coders not in CODERS:
        raise Refusal(
            f"Unknown coders {coders!r}; choose one of {', '.join(CODERS)}.", field="coders"
        )


class ExportItem:
    """What a task type's export hooks see of an item: plain values, no model instance. Only the
    JSON fields named in the task type's ``export_item_fields`` are set (reading another raises
    ``AttributeError``), and ``project`` (for its config)."""

    __slots__ = ("gold", "payload", "prepared", "project")

    def __init__(self, project: Project, fields: Iterable[str], values: Iterable[Any]) -> None:
        self.project = project
        for field, value in zip(fields, values, strict=True):
            setattr(self, field, value)


def _json(text: str | None) -> Any:
    """A jsonb column read as text, decoded with orjson (``json`` for what orjson refuses: an
    integer beyond 64 bits, a number beyond float range)."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


@contextmanager
def _one_snapshot() -> Iterator[None]:
    """On PostgreSQL outside a transaction, read the whole export in one: ``iterator()`` then
    uses a plain server-side cursor (outside one, Django declares it ``WITH HOLD``, which makes
    PostgreSQL materialise the whole result first), and the sorts may use ``SORT_MEMORY``."""
    if connection.vendor == "postgresql" and connection.get_autocommit():
        with transaction.atomic():
            with connection.cursor() as cursor:  # sort the rows in memory, not in temp files
                cursor.execute("SET LOCAL work_mem = %s", [SORT_MEMORY])
            yield
    else:
        yield


def _take(rows: Iterator[Any], size: int) -> tuple[list[Any], BaseException | None]:
    """The next ``size`` rows of ``rows`` (fewer at its end), and the error that stopped the
    cursor within them, if any: the rows read before a failure are kept, not lost with it."""
    chunk: list[tuple] = []
    try:
        chunk.extend(islice(rows, size))
    except BaseException as error:  # handed out after the rows before it
        return chunk, error
    return chunk, None


_READ_TO_THE_END = object()  # the reading thread's last hand-over


def _read_ahead(
    rows: Iterator[tuple],
    size: int,
    *,
    on_thread: bool | None = None,
    handoff: queue.Queue | None = None,
) -> Iterator[tuple]:
    """``rows`` (a server-side cursor's iterator) with the next ``size`` rows fetched by a
    thread while these are written, so that PostgreSQL produces a chunk while Python formats
    the one before (the wall time is about the larger of the two, not their sum). The cursor
    is opened here, in the caller's thread and transaction; the thread only goes on reading it.
    At most two chunks wait beside the one being written.

    What it promises is what ``rows`` itself gives, on every database and whatever the threads'
    timing: the same rows in the same order, and when the cursor fails mid-way, every row it
    produced before the failure, then its error (never a row after it, never a lost one). When
    the reader stops early (a download cancelled), the thread finishes the fetch it is in and
    ends before this generator closes, so the cursor is never read outside its transaction.

    ``on_thread`` defaults to reading ahead on PostgreSQL only (SQLite has no server-side
    cursor to overlap with); ``handoff`` is the one-slot queue between the threads (tests give
    one that records when each side arrives)."""
    if on_thread is None:
        on_thread = connection.vendor == "postgresql"
    first, error = _take(rows, size)
    if error is not None or len(first) < size or not on_thread:
        yield from first
        if error is not None:
            raise error
        if len(first) == size:
            yield from rows
        return
    chunks = handoff if handoff is not None else queue.Queue(maxsize=1)
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                chunk, failure = _take(rows, size)
                chunks.put((chunk, failure))
                if failure is not None or len(chunk) < size:
                    return
        finally:
            chunks.put(_READ_TO_THE_END)

    reader = threading.Thread(target=read, name="export-read-ahead", daemon=True)
    reader.start()
    try:
        yield from first
        while True:
            chunk, failure = chunks.get()
            yield from chunk
            if failure is not None:
                raise failure
            if len(chunk) < size:
                return
    finally:  # also when the download stops early: let the thread finish its fetch, then end
        stop.set()
        while chunks.get() is not _READ_TO_THE_END:
            pass
        reader.join()


class ReadyRows:
    """An answer's own columns as stored (``studies.models.ReadyExportColumns``), in the
    export's format: ``text`` is the JSONL lines or the CSV cells of its ``rows`` rows, put
    after the shared columns as they are. ``columns``: the rows' column names, set on the
    export's first row only (a CSV's header)."""

    __slots__ = ("columns", "columns_key", "rows", "text")

    def __init__(self, rows: int, text: str, columns_key: str) -> None:
        self.rows, self.text, self.columns_key = rows, text, columns_key
        self.columns: tuple[str, ...] | None = None


AnswerRows = tuple[dict[str, Any], list[dict[str, Any]] | ReadyRows]
# ^ one answer's rows: the columns they share (item, coder, times, verdicts), then the task type's
#   columns of each row (``export_rows``: several for claim review, ranking, questionnaire). A
#   row is ``{**shared, **part}``; the writers put them together without building that dict
#   where they can (the shared columns are written once per answer, not once per row). A human
#   answer's own columns may come stored instead (:class:`ReadyRows`, ``_ColumnsMaker``).


def _answers(
    project: Project,
    coders: str = "humans",
    *,
    raw: bool = False,
    ready: str | None = None,
    writer: ColumnsWriter | None = None,
) -> Iterator[AnswerRows]:
    """Every answer's rows; with ``ready`` (the writer's format, ``jsonl`` or ``csv``), a human
    answer's own columns may come as :class:`ReadyRows` (stored text) instead of dicts, and
    those made are stored by ``writer`` (default: a new one)."""
    task_type = task_types.get(project.task_type)
    # The task type's rows for this export: what they read of the project (a questionnaire's
    # config, validated) is prepared once here, not once per row.
    export_rows = task_type.exporter(project)
    with_judges = coders == "all"
    with _one_snapshot(), older_objects_set_aside(), collections_spaced():
        if coders in ("humans", "all"):
            yield from _human_answers(
                project,
                task_type,
                export_rows,
                with_coder=coders != "humans",
                with_judges=with_judges,
                raw=raw,
                ready=ready,
                writer=writer,
            )
        if coders in ("external", "all"):
            yield from _external_answers(
                project, task_type, export_rows, with_judges=with_judges, raw=raw
            )
        if coders in ("judges", "all"):
            yield from _judge_answers(project, task_type, export_rows, raw=raw)


def _judge_columns(raw: bool) -> dict[str, Any]:
    empty: dict[str, Any] = dict.fromkeys(JUDGE_COLUMNS)
    if raw:
        empty["judge_raw_reply"] = None
    return empty


def _item_fields(task_type: TaskType) -> tuple[str, ...]:
    return tuple(sorted(task_type.export_item_fields))


def _current_answers(project: Project) -> Iterator[tuple]:
    """The project's current answers as tuples, in export order, from one server-side cursor:
    item position, item id, external id, kind, group, annotator id, version, time spent,
    reported time, reserved at, submitted at, answer (JSON text), the item's current
    adjudication (JSON text), the judge whose pre-selection was shown, the settings version the
    answer was made under, the assignment's sequence, its presentation (JSON text), the item's
    revision it was made on and the answer's id. The item's own JSON
    comes from :class:`_ItemsInOrder` (once per item, not once per answer)."""
    answers = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .annotate(
            current_adjudication=FilteredRelation(
                "item__adjudications", condition=Q(item__adjudications__is_current=True)
            ),
            answer_json=Cast("answer", TextField()),
            adjudicated_json=Cast("current_adjudication__answer", TextField()),
            presentation_json=Cast("presentation", TextField()),
        )
        .order_by("item__position", "item_id", "assignment__sequence", "id")
        .values_list(
            "item__position",
            "item_id",
            "item__external_id",
            "item__kind",
            "item__group",
            "annotator_id",
            "version",
            "time_spent_ms",
            "reported_time_ms",
            "assignment__reserved_at",
            "created_at",
            "answer_json",
            "adjudicated_json",
            "assignment__judge_preselection_shown__judge__name",
            "settings_version",
            "assignment__sequence",
            "presentation_json",
            "item_revision",
            "id",
        )
    )
    return _read_ahead(answers.iterator(chunk_size=CHUNK), CHUNK)


class _ItemsInOrder:
    """The JSON fields ``fields`` of the project's answered items, read from a second
    server-side cursor in the answers' order (position, id) and matched to them as they come
    (a merge join: one item at a time in memory)."""

    def __init__(self, project: Project, fields: tuple[str, ...]) -> None:
        self.fields = fields
        self.json = {f"item_{field}": Cast(field, TextField()) for field in fields}
        # Answered items by their maintained count of submitted assignments, not by a probe of
        # the answers table: PostgreSQL planned that probe as a hash semi-join over every
        # project's answers (430 ms before the first row on a shared database). An item whose
        # count lags its answers is read alone below, as one answered after the snapshot is.
        self.rows = _read_ahead(
            Item.objects.filter(project=project, submitted_count__gt=0)
            .annotate(**self.json)
            .order_by("position", "id")
            .values_list("position", "id", *self.json)
            .iterator(chunk_size=CHUNK),
            CHUNK,
        )
        self.current: tuple | None = None

    def values(self, position: int, item_id: int) -> list[Any]:
        """The decoded fields of item ``item_id``, at ``position``; the items before it that
        have no current answer any more are passed over."""
        return [_json(text) for text in self.texts(position, item_id)]

    def texts(self, position: int, item_id: int) -> list[str | None]:
        """The fields of item ``item_id`` as JSON texts (as :meth:`values`, not decoded)."""
        if not self.fields:
            return []
        while True:
            if self.current is None:
                self.current = next(self.rows, None)
            row = self.current
            if row is None or (row[0], row[1]) > (position, item_id):
                # Answered after this cursor's snapshot (another transaction): read it alone.
                row = (
                    Item.objects.filter(pk=item_id)
                    .annotate(**self.json)
                    .values_list("position", "id", *self.json)
                    .get()
                )
                return list(row[2:])
            self.current = None
            if row[1] == item_id:
                return list(row[2:])


def _agreement_text(task_type: TaskType) -> Callable[[Any], str]:
    """Canonical text of an answer's agreement key, for the majority vote: the task type's
    ``answer_key``, or the same key (sorted, compact JSON) written by orjson when the task
    type keeps the default."""
    if type(task_type).answer_key is not TaskType.answer_key:
        return task_type.answer_key
    agreement_key = task_type.agreement_key
    option = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS

    def key(answer: Any) -> str:
        return orjson.dumps(agreement_key(answer), option=option).decode()

    return key


ExportRows = Callable[[Any, Any], list[dict]]


class _Members:
    """The project's annotators: pseudonym and qualification by user id, and those excluded
    (disqualified); an annotator no longer a member is ``ann-removed-<id>``."""

    def __init__(self, project: Project) -> None:
        self.by_user = {
            user_id: (pseudonym, qualification)
            for user_id, pseudonym, qualification in Membership.objects.filter(
                project=project
            ).values_list("user_id", "pseudonym", "qualification")
        }
        self.excluded = {
            user_id
            for user_id, (_, qualification) in self.by_user.items()
            if qualification == Membership.Qualification.DISQUALIFIED
        }

    def of(self, user_id: int) -> tuple[str, str]:
        found = self.by_user.get(user_id)
        return found if found is not None else (f"ann-removed-{user_id}", "")


def _human_template(
    project: Project, *, with_coder: bool, with_judges: bool, raw: bool
) -> dict[str, Any]:
    """The columns of a human answer's rows, in order, with what is the same on every row
    (each answer's row starts as a copy: its values are then set, not its keys)."""
    return {
        "project": project.slug,
        "task_type": project.task_type,
        "item_id": None,
        "item_kind": None,
        "group": None,
        **({"coder_kind": "human", "coder": None, "coder_source": HERE} if with_coder else {}),
        "annotator": None,
        "version": None,
        # Active time as the server bounds it, and as the annotator's browser reported it.
        "time_spent_s": None,
        "reported_time_s": None,
        "reserved_at": None,
        "submitted_at": None,
        "annotator_qualification": None,
        "excluded": None,
        "majority": None,
        "adjudicated": None,
        # Which judge's pre-selection the annotator was shown (anchoring must show).
        "preselection_shown": None,
        # The guidelines and settings in force (projects.ProjectSettingsVersion), the item's
        # revision the answer was made on, the place of the item in the annotator's order and
        # how it was laid out.
        "settings_version": None,
        "item_revision": None,
        "sequence": None,
        "presentation": None,
        **(_judge_columns(raw) if with_judges else {}),
    }


def _human_answers(
    project: Project,
    task_type: TaskType,
    export_rows: ExportRows,
    *,
    with_coder: bool,
    with_judges: bool,
    raw: bool,
    ready: str | None = None,
    writer: ColumnsWriter | None = None,
) -> Iterator[AnswerRows]:
    members = _Members(project)
    excluded = members.excluded
    fields = _item_fields(task_type)
    template = _human_template(project, with_coder=with_coder, with_judges=with_judges, raw=raw)
    if ready is not None and task_type.export_columns_stored:
        yield from _stored_human_answers(
            project,
            task_type,
            export_rows,
            template,
            members,
            with_coder=with_coder,
            fmt=ready,
            writer=writer or ColumnsWriter(project),
        )
        return
    answer_key = _agreement_text(task_type)
    answered = _answered_items(project, _ItemsInOrder(project, fields), fields)
    for item, answers, decoded in _prepared_in_batches(answered, export_rows):
        # The item's columns, its majority (by the task type's agreement key) and final answer.
        key = majority_key(
            [
                answer_key(d.answer)
                for a, d in zip(answers, decoded, strict=True)
                if a[5] not in excluded
            ]
        )
        of_item = _item_columns(template, answers[0], key)
        for a, answer in zip(answers, decoded, strict=True):
            parts = export_rows(item, answer)  # several: claims…
            if parts:  # none: no row (claim review: no claim)
                yield _human_columns(of_item, a, members, with_coder=with_coder), parts


def _item_columns(template: dict[str, Any], first: tuple, majority: str | None) -> dict[str, Any]:
    """The columns of an item's answers' rows that are the item's (its first answer ``first``):
    its ids, its ``majority`` (an agreement key's text) and its adjudicated answer."""
    of_item = template.copy()
    of_item["item_id"], of_item["item_kind"], of_item["group"] = first[2], first[3], first[4]
    of_item["majority"], of_item["adjudicated"] = _json(majority), _json(first[12])
    return of_item


def _stored_human_answers(
    project: Project,
    task_type: TaskType,
    export_rows: ExportRows,
    template: dict[str, Any],
    members: _Members,
    *,
    with_coder: bool,
    fmt: str,
    writer: ColumnsWriter,
) -> Iterator[AnswerRows]:
    """:func:`_human_answers` of a task type that stores its answers' columns: a batch of
    ``BATCH_ITEMS`` items at a time, each answer's own columns and agreement key served as
    stored where current, made (and stored) where not (``_ColumnsMaker``). An item whose
    answers are all current has no JSON decoded (but its adjudicated answer and majority)."""
    fields = _item_fields(task_type)
    maker = _ColumnsMaker(project, task_type, export_rows, fields, fmt, writer)
    items = _ItemsInOrder(project, fields)
    answered = (
        (answers, items.texts(answers[0][0], answers[0][1]))
        for answers in (
            list(group) for _, group in groupby(_current_answers(project), key=itemgetter(1))
        )
    )
    excluded = members.excluded
    # a cursor's failure mid-batch: the batch's items before it, then the error
    for batch, stored, error in _batches_with_columns(answered, fmt):
        for answers, agreements, rows in maker.batch(batch, stored):
            key = majority_key(
                [k for a, k in zip(answers, agreements, strict=True) if a[5] not in excluded]
            )
            of_item = _item_columns(template, answers[0], key)
            for a, parts in zip(answers, rows, strict=True):
                if parts:  # none: no row
                    yield _human_columns(of_item, a, members, with_coder=with_coder), parts
        if error is not None:
            raise error


_Batch = list[tuple[list[tuple], list[str | None]]]  # items: their answers, their fields' texts


def _batches_with_columns(
    answered: Iterator[tuple[list[tuple], list[str | None]]], fmt: str
) -> Iterator[tuple[_Batch, dict[int, StoredColumns], BaseException | None]]:
    """The answered items in batches of ``BATCH_ITEMS``, each with its answers' stored columns
    and the error that ended the cursors within it (if any: the last batch). On PostgreSQL a
    thread reads the next batch's columns, on this request's connection and transaction,
    while this one is written (the read is ~1/3 of a stored export's wall time, spent waiting
    on the 2-3 kB rows); when the reader stops early, it waits for that read to end."""

    def ids(batch: _Batch) -> list[int]:
        return [a[18] for answers, _ in batch for a in answers]

    batch, error = _take(answered, BATCH_ITEMS)
    if connection.vendor != "postgresql":
        while True:
            yield batch, read_columns(annotation_ids=ids(batch), fmt=fmt), error
            if error is not None or len(batch) < BATCH_ITEMS:
                return
            batch, error = _take(answered, BATCH_ITEMS)
    shared = connections[DEFAULT_DB_ALIAS]  # this thread's connection: the reader shares it
    shared.inc_thread_sharing()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="export-columns") as reader:

            def read(batch: _Batch) -> Future[dict[int, StoredColumns]]:
                return reader.submit(read_columns, annotation_ids=ids(batch), fmt=fmt, on=shared)

            pending = read(batch)
            while True:
                last = error is not None or len(batch) < BATCH_ITEMS
                if not last:
                    after, after_error = _take(answered, BATCH_ITEMS)
                    following = read(after)
                yield batch, pending.result(), error
                if last:
                    return
                batch, error, pending = after, after_error, following
    finally:
        shared.dec_thread_sharing()


_Made = tuple[list[tuple], list[str], list[list[dict[str, Any]] | ReadyRows]]
# ^ an item's answers (``_current_answers`` tuples), their agreement keys' texts, their rows


class _ColumnsMaker:
    """The stored columns of an export's human answers, a batch of items at a time: served
    where their key is current, made by the task type's rows and stored where not
    (``studies.services.export_columns``). A row is served stored only where the export would
    have written the same bytes: its columns share no name with any shared column, it is not
    empty, an answer's rows have the same columns, and (CSV) they are the header's own."""

    def __init__(
        self,
        project: Project,
        task_type: TaskType,
        export_rows: ExportRows,
        fields: tuple[str, ...],
        fmt: str,
        writer: ColumnsWriter,
    ) -> None:
        self.project, self.export_rows, self.fields, self.fmt = project, export_rows, fields, fmt
        self.basis = ColumnsBasis(project=project, task_type=task_type, fields=fields)
        self.answer_key = _agreement_text(task_type)
        self.writer = writer
        self.encode = _json_encoder()
        self.shared = frozenset(  # every column the rows' shared part may have
            _human_template(project, with_coder=True, with_judges=True, raw=True)
        )
        self.columns_key: str | None = None  # the first row's own columns (CSV's header)

    def batch(self, batch: _Batch, stored: dict[int, StoredColumns]) -> list[_Made]:
        """Each item's answers (with their item's fields' texts) as ``_Made``, given their
        ``stored`` columns (``read_columns``)."""
        made: list[_Made] = []
        todo: list[tuple[_Made, list[str | None], list[tuple[int, str, bool]]]] = []
        for answers, texts in batch:
            digest = self.basis.item(texts)
            agreements: list[Any] = []
            rows: list[Any] = []
            missing = []  # (the answer's place, its key, whether to store it)
            for n, a in enumerate(answers):
                key = self.basis.answer(digest, a[11])
                found = stored.get(a[18])
                if found is None or found.key != key:  # missing or stale: made and stored
                    agreements.append(None)
                    rows.append(None)
                    missing.append((n, key, True))
                    continue
                agreements.append(found.agreement)
                if found.rows is not None and self._fits(found):
                    rows.append(
                        ReadyRows(found.rows, found.text, found.columns_key) if found.rows else []
                    )
                else:  # current, but not to be passed through: made, not stored again
                    rows.append(None)
                    missing.append((n, key, False))
            made.append((answers, agreements, rows))
            if missing:
                todo.append((made[-1], texts, missing))
        if todo:
            self._make(todo)
        if self.columns_key is None and self.fmt == "csv":
            self._first_columns(made, [texts for _, texts in batch])
        return made

    def _fits(self, found: StoredColumns) -> bool:
        """Whether stored rows (current) can be passed through: in a CSV, rows with the header's
        own columns (before the first row, any: :meth:`_first_columns` checks them)."""
        return self.fmt != "csv" or self.columns_key in (None, found.columns_key) or not found.rows

    def _make(
        self, todo: list[tuple[_Made, list[str | None], list[tuple[int, str, bool]]]]
    ) -> None:
        """Make the rows and agreement keys of the answers ``todo`` names (an item's made
        answers, its fields' texts, and which answers: place, key, whether to store), the
        task type's ``prepare_rows`` called once for them all; store those to store."""
        prepared = []
        for (answers, _, _), texts, missing in todo:
            item = ExportItem(self.project, self.fields, [_json(text) for text in texts])
            decoded = [
                SimpleNamespace(id=answers[n][18], answer=_json(answers[n][11]))
                for n, _, _ in missing
            ]
            prepared.append((item, decoded))
        prepare = getattr(self.export_rows, "prepare_rows", None)
        if prepare is not None:
            prepare(prepared)
        new: list[Columns] = []
        for ((_, agreements, rows), _, missing), (item, decoded) in zip(
            todo, prepared, strict=True
        ):
            for (n, key, store), answer in zip(missing, decoded, strict=True):
                rows[n] = parts = self.export_rows(item, answer)
                agreements[n] = agreement = self.answer_key(answer.answer)
                if store:
                    new.append(self._columns(answer.id, key, parts, agreement))
        self.writer.write(new)

    def _columns(
        self, annotation_id: int, key: str, parts: list[dict[str, Any]], agreement: str
    ) -> Columns:
        """What is stored of an answer's rows ``parts``: ``rows`` empty where they cannot be
        served as stored (see the class)."""
        names = list(parts[0]) if parts else []
        rows: int | None = None if parts else 0
        jsonl = csv = ""
        if parts and self.shared.isdisjoint(names) and all(p and list(p) == names for p in parts):
            try:
                jsonl = b"".join(orjson.dumps(p, option=_JSONL) for p in parts).decode()
                cells = [_csv_cells(p.values(), self.encode) for p in parts]
            except (TypeError, ValueError):  # what the export would refuse or write otherwise
                jsonl = ""
            else:
                csv = cells[0] if len(cells) == 1 else orjson.dumps(cells).decode()
                if "\x00" in csv:  # a text column holds no NUL
                    jsonl = csv = ""
                else:
                    rows = len(parts)
        columns = orjson.dumps(names).decode()
        return Columns(
            annotation_id=annotation_id,
            key=key,
            rows=rows,
            jsonl=jsonl,
            csv=csv,
            columns=columns,
            columns_key=hashlib.sha256(columns.encode()).hexdigest(),
            agreement=agreement,
        )

    def _first_columns(self, made: list[_Made], texts: list[list[str | None]]) -> None:
        """A CSV's first row's own columns (its header's): a stored row's names read once (for
        the header); then the batch's stored rows with other columns are made as dicts."""
        while self.columns_key is None:
            first = next(
                (
                    (m, n)
                    for m, (_, _, rows) in enumerate(made)
                    for n, parts in enumerate(rows)
                    if parts
                ),
                None,
            )
            if first is None:  # no row yet
                return
            m, n = first
            answers, _, rows = made[m]
            ready = rows[n]
            if not isinstance(ready, ReadyRows):
                names = orjson.dumps(list(ready[0])).decode()
                self.columns_key = hashlib.sha256(names.encode()).hexdigest()
                break
            stored = (
                ReadyExportColumns.objects.filter(pk=answers[n][18])
                .values_list("columns", flat=True)
                .first()
            )
            if stored is None:  # gone since this export's cursor read it: made instead
                self._make([(made[m], texts[m], [(n, "", False)])])
            else:
                ready.columns = tuple(orjson.loads(stored))
                self.columns_key = ready.columns_key
        others = []
        for entry, item_texts in zip(made, texts, strict=True):
            other = [
                (k, "", False)
                for k, parts in enumerate(entry[2])
                if isinstance(parts, ReadyRows) and parts.columns_key != self.columns_key
            ]
            if other:
                others.append((entry, item_texts, other))
        if others:
            self._make(others)


def _human_columns(
    of_item: dict[str, Any], a: tuple, members: _Members, *, with_coder: bool
) -> dict[str, Any]:
    """The shared columns of the rows of the answer ``a`` (a :func:`_current_answers` tuple),
    on the item's columns ``of_item``."""
    annotator_id = a[5]
    pseudonym, qualification = members.of(annotator_id)
    row = of_item.copy()
    if with_coder:
        row["coder"] = pseudonym
    row["annotator"] = pseudonym
    row["version"] = a[6]
    row["time_spent_s"] = round(a[7] / 1000, 1)
    row["reported_time_s"] = round(a[8] / 1000, 1)
    row["reserved_at"] = a[9].isoformat()
    row["submitted_at"] = a[10].isoformat()
    row["annotator_qualification"] = qualification
    row["excluded"] = annotator_id in members.excluded
    row["preselection_shown"] = a[13] or ""
    row["settings_version"] = a[14]
    row["item_revision"] = a[17]
    row["sequence"] = a[15]
    row["presentation"] = None if a[16] is None else (_json(a[16]) or None)
    return row


def _answered_items(
    project: Project, items: _ItemsInOrder, fields: tuple[str, ...]
) -> Iterator[tuple[ExportItem, list[tuple]]]:
    """Each answered item (its fields from ``items``) with its current answers' rows."""
    for item_id, group in groupby(_current_answers(project), key=itemgetter(1)):
        answers = list(group)  # one item's current answers (a handful)
        yield ExportItem(project, fields, items.values(answers[0][0], item_id)), answers


def _prepared_in_batches(
    answered: Iterator[tuple[ExportItem, list[tuple]]], export_rows: ExportRows
) -> Iterator[tuple[ExportItem, list[tuple], list[Any]]]:
    """Each item with its answers' rows and their answers as the task type's rows see them
    (``id`` and decoded ``answer``). When the task type's rows have a ``prepare_rows`` hook
    (argument structure: its stored structure metrics, and the sentences embedded for missing
    ones), it is called with ``BATCH_ITEMS`` items' ``(item, answers)`` before their rows are
    made, so that such work is done once per batch, not once per row."""
    prepare = getattr(export_rows, "prepare_rows", None)
    decoded = (
        (item, answers, [SimpleNamespace(id=a[18], answer=_json(a[11])) for a in answers])
        for item, answers in answered
    )
    if prepare is None:
        yield from decoded
        return
    while True:  # a cursor's failure mid-batch: the batch's items before it, then the error
        batch, error = _take(decoded, BATCH_ITEMS)
        if batch:
            prepare([(item, answers) for item, _, answers in batch])
            yield from batch
        if error is not None:
            raise error
        if len(batch) < BATCH_ITEMS:
            return


def _external_answers(
    project: Project, task_type: TaskType, export_rows: ExportRows, *, with_judges: bool, raw: bool
) -> Iterator[AnswerRows]:
    """One row per external coder's answer (several where the task type writes several), with
    the human rows' columns (one query, streamed)."""
    blank_answer: dict[str, None] | None = None
    answers = (
        ExternalAnnotation.objects.filter(item__project=project)
        .with_readable_time()
        .select_related("item", "coder")
        .order_by("item__position", "item_id", "coder__name")
    )
    for external in answers.iterator(chunk_size=CHUNK):
        item, coder = external.item, external.coder
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": item.external_id,
            "item_kind": item.kind,
            "group": item.group,
            "coder_kind": "external",
            "coder": coder.coder_id,
            "coder_source": external.source or coder.source,
            "annotator": coder.coder_id,
            "version": 1,
            "time_spent_s": None
            if external.time_spent_ms is None
            else round(external.time_spent_ms / 1000, 1),
            "reported_time_s": None,
            "reserved_at": None,
            "submitted_at": readable_isoformat(external.annotated_at_text),
            "annotator_qualification": None,
            "excluded": False,
            "majority": None,
            "adjudicated": None,
            "preselection_shown": None,
            "settings_version": None,
            "item_revision": None,
            "sequence": None,
            "presentation": None,
            **(_judge_columns(raw) if with_judges else {}),
        }
        parts = export_rows(item, SimpleNamespace(answer=external.answer))
        if not parts:
            if blank_answer is None:
                blank_answer = _blank_answer_columns(project, task_type, export_rows)
            parts = [blank_answer]
        yield row, parts


def _judge_answers(
    project: Project, task_type: TaskType, export_rows: ExportRows, *, raw: bool
) -> Iterator[AnswerRows]:
    """One row per judge answer (several where the task type writes several per answer), or one
    row with empty answer columns for an unparseable or failed result."""
    blank_answer: dict[str, None] | None = None  # the task type's columns, all empty
    fields = _item_fields(task_type)
    for result in judge_result_rows(
        project=project, item_fields=fields, with_raw=raw, chunk_size=CHUNK
    ):
        run_id = result["produced_by_id"] or result["run_id"]
        llm = result["judge__kind"] == Judge.Kind.LLM
        cleaned = result["detail__raw_cleaned"] or {}
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": result["item__external_id"],
            "item_kind": result["item__kind"],
            "group": result["item__group"],
            "coder_kind": "judge",
            "coder": result["judge__name"],
            "coder_source": HERE,
            **dict.fromkeys(HUMAN_ONLY),
            "judge": result["judge__name"],
            "judge_kind": result["judge__kind"],
            "judge_model": result["judge__model"],
            # the run's prompt template (the task type's shipped one is named after it); an
            # embedding or NLI judge uses none: its settings and their fingerprint say what it
            # did (issue 27)
            "judge_prompt_name": (result["run__prompt__name"] or project.task_type)
            if llm
            else None,
            "judge_prompt_version": result["prompt_version"],
            "judge_prompt_fingerprint": result["run__prompt_fingerprint"]
            if run_id and llm
            else None,
            "judge_settings": result["run__judge_settings"] or None,
            "judge_settings_fingerprint": result["run__settings_fingerprint"] or None,
            "judge_setting": result["setting"],
            "judge_presentation": result["presentation"],
            "judge_run_id": run_id,
            "judge_outcome": result["status"],
            "judge_message": result["error"],
            "judge_error_class": result["error_class"],
            "judge_attempts": result["attempts"],
            "judge_latency_ms": result["latency_ms"],
            "judge_input_tokens": result["prompt_tokens"],
            "judge_output_tokens": result["completion_tokens"],
            "judge_finish_reason": result["finish_reason"],
            "judge_seed": result["seed"],
            "judge_schema_valid": result["schema_valid"],
            "judge_removed_nul": cleaned.get("nul", 0) + cleaned.get("answer_nul", 0),
            **({"judge_raw_reply": result["raw"]} if raw else {}),
        }
        parts = []
        if result["status"] == JudgeResult.Status.OK and result["answer"] is not None:
            item = ExportItem(project, fields, (result[f"item__{f}"] for f in fields))
            parts = export_rows(item, SimpleNamespace(answer=result["answer"]))
        if not parts:  # no answer, or one with no rows (claim review: no claim judged)
            if blank_answer is None:
                blank_answer = _blank_answer_columns(project, task_type, export_rows)
            parts = [blank_answer]
        yield row, parts


def _blank_answer_columns(
    project: Project, task_type: TaskType, export_rows: ExportRows
) -> dict[str, None]:
    """The task type's export columns, all empty (every row of a task type has the same keys):
    taken from one stored answer, a human's, an external coder's or a judge's. No answer
    anywhere: no columns."""
    fields = _item_fields(task_type)
    stored = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .order_by("id")
        .values("answer", *(f"item__{f}" for f in fields))
        .first()
    )
    if stored is None:
        stored = (
            ExternalAnnotation.objects.filter(item__project=project)
            .order_by("id")
            .values("answer", *(f"item__{f}" for f in fields))
            .first()
        )
    if stored is None:
        stored = (
            JudgeResult.objects.filter(
                item__project=project, status=JudgeResult.Status.OK, answer__isnull=False
            )
            .order_by("id")
            .values("answer", *(f"item__{f}" for f in fields))
            .first()
        )
    if stored is None:
        return {}
    item = ExportItem(project, fields, (stored[f"item__{f}"] for f in fields))
    parts = export_rows(item, SimpleNamespace(answer=stored["answer"]))
    return dict.fromkeys(parts[0]) if parts else {}


class _Tally:
    """Rows written so far (for the export's trailer line)."""

    rows = 0


def _jsonl_text(
    project: Project, coders: str, *, rows: int, tally: _Tally | None = None
) -> Iterator[str]:
    """JSON Lines (compact, by orjson) in chunks of ``rows`` lines."""
    for chunk in _jsonl_bytes(project, coders, rows=rows, tally=tally or _Tally()):
        yield chunk.decode()


_JSONL = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


def _jsonl_lines(shared: dict[str, Any], parts: list[dict[str, Any]]) -> list[bytes]:
    """The lines of one answer's rows, as orjson writes each ``{**shared, **part}``. Of several
    rows, the shared columns are written once and each row's own joined to them (the same
    bytes: orjson writes a dict's items in order, each the same wherever it stands), unless a
    row's columns repeat a shared one (then the dict is built, as ``{**shared, **part}``
    keeps the shared column's place)."""
    dumps, option = orjson.dumps, _JSONL
    if len(parts) == 1:
        shared.update(parts[0])
        return [dumps(shared, option=option)]
    start = dumps(shared, option=option)[:-2] + b","  # without its closing "}\n"
    keys = shared.keys()
    return [
        start + dumps(part, option=option)[1:]
        if part and keys.isdisjoint(part)
        else dumps({**shared, **part}, option=option)
        for part in parts
    ]


def _ready_jsonl_lines(shared: dict[str, Any], ready: ReadyRows) -> list[bytes]:
    """The lines of an answer whose own columns are stored (:class:`ReadyRows`): the shared
    columns written once and each stored row joined to them, as :func:`_jsonl_lines` joins
    disjoint rows (stored rows are: ``_ColumnsMaker``)."""
    start = orjson.dumps(shared, option=_JSONL)[:-2] + b","
    data = ready.text.encode()
    if ready.rows == 1:
        return [start + data[1:]]
    return [start + line[1:] for line in data.splitlines(keepends=True)]


def _jsonl_bytes(project: Project, coders: str, *, rows: int, tally: _Tally) -> Iterator[bytes]:
    """:func:`_jsonl_text`'s chunks as the UTF-8 bytes orjson writes (a download sends them as
    they are: no decoding to text and encoding back of every byte)."""
    batch: list[bytes] = []
    for shared, parts in _answers(project, coders, raw=True, ready="jsonl"):
        lines = (
            _ready_jsonl_lines(shared, parts)
            if isinstance(parts, ReadyRows)
            else _jsonl_lines(shared, parts)
        )
        for line in lines:
            batch.append(line)
            if len(batch) == rows:
                tally.rows += rows
                yield b"".join(batch)
                batch.clear()
    if batch:
        tally.rows += len(batch)
        yield b"".join(batch)


_ASCII = json.encoder.encode_basestring_ascii
_C_ENCODER = json.encoder.c_make_encoder  # type: ignore[attr-defined]  # None without the C accelerator
_DEFAULT = json.JSONEncoder().default  # refuses what JSON cannot hold, as json.dumps does


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps`` without its per-call set-up (a CSV of 100k rows has hundreds of thousands
    of list and dict cells): the C encoder ``json.dumps`` itself makes, with the same settings
    (ASCII, ``", "`` and ``": "``, circular check, NaN allowed), made once per export. Its
    circular check keeps the containers it is inside of, so one encoder serves one export (one
    thread) at a time. The last value's text is kept: an item's majority (a dict or list for
    many task types) is the same object in each of its answers' rows, written once."""
    if _C_ENCODER is None:
        return json.dumps
    encoder = _C_ENCODER({}, _DEFAULT, _ASCII, None, ": ", ", ", False, False, True)
    last: list[Any] = [None, ""]  # the last value (held: its identity stays its own) and text

    def encode(value: Any) -> str:
        if value is last[0]:
            return last[1]
        text = "".join(encoder(value, 0))
        last[0], last[1] = value, text
        return text

    return encode


def _json_cell(value: list | dict, encode: Callable[[Any], str] | None = None) -> str:
    """``json.dumps(value)``, the same text, by ``encode`` (:func:`_json_encoder`'s). A list of
    plain integers (sentence numbers, indices: most list cells), written directly: ``json.dumps``
    writes an ``int`` as ``int.__repr__`` does (``bool`` is not ``int`` here)."""
    if type(value) is list and all(type(v) is int for v in value):
        return "[" + ", ".join(map(int.__repr__, value)) + "]"
    return (encode or _json_encoder())(value)


def _other_cell(value: Any, encode: Callable[[Any], str]) -> str:
    """The text of a cell that is not plain text, a number, a boolean or empty (see
    :func:`_csv_line`): a list or dict as JSON; a ``str`` subclass as its text (spreadsheet-safe);
    anything else as the csv writer writes it (``repr`` of a float, ``str`` of the rest)."""
    if isinstance(value, list | dict):
        return _json_cell(value, encode)
    if isinstance(value, str):
        text = str.__str__(value)
        return "'" + text if text.startswith(FORMULA_START) else text
    return repr(value) if isinstance(value, float) else str(value)


def _csv_cells(values: Iterable[Any], encode: Callable[[Any], str]) -> str:
    """Cells of a CSV row, joined by ``,``, as ``csv.writer`` (excel dialect) writes the cells
    :func:`core.spreadsheet.spreadsheet_safe` makes: text a spreadsheet would run as a formula
    gets a leading apostrophe, ``None`` is an empty cell, a float is its ``repr``, a list or
    dict its JSON; a cell holding ``"``, ``,``, ``\\r`` or ``\\n`` is quoted with its quotes
    doubled. Written here rather than by the csv module, whose C writer copies every character
    one by one (a stance row of 1.3 kB: 12 us there, 3 us here); the same bytes (tested
    against it)."""
    cells: list[str] = []
    append, formula = cells.append, FORMULA_START
    for value in values:
        kind = type(value)
        if kind is str:
            if value.startswith(formula):
                value = "'" + value
        elif value is None:
            append("")
            continue
        elif kind is int or kind is bool:
            append(str(value))
            continue
        elif kind is float:
            append(repr(value))
            continue
        else:
            value = _other_cell(value, encode)
        if '"' in value or "," in value or "\n" in value or "\r" in value:
            value = '"' + value.replace('"', '""') + '"'
        append(value)
    return ",".join(cells)


def _csv_line(values: Collection[Any], encode: Callable[[Any], str]) -> str:
    """One CSV line (:func:`_csv_cells`, then ``\\r\\n``); a row of one empty cell is ``""``,
    as csv.writer writes it (an empty line would be no row)."""
    text = _csv_cells(values, encode)
    return '""\r\n' if not text and len(values) == 1 else text + "\r\n"


def _csv_header(names: Iterable[str]) -> str:
    """The header line: the column names as ``csv.writer`` writes them (quoted only where
    needed; not spreadsheet-escaped, as before)."""
    quoted = [
        '"' + name.replace('"', '""') + '"'
        if '"' in name or "," in name or "\n" in name or "\r" in name
        else name
        for name in names
    ]
    return '""\r\n' if quoted == [""] else ",".join(quoted) + "\r\n"


class _CsvRows:
    """The CSV lines of an export's answers, the header (the first row's columns) first. Every
    row has the header's columns (a task type's rows have the same keys); one that has not is
    written as csv.DictWriter writes it (a missing column empty, an extra one refused). Of an
    answer's several rows, the shared columns are written once and each row's own joined to
    them, where the first answer's rows showed both apart (no column in both)."""

    def __init__(self) -> None:
        self.encode = _json_encoder()
        self.header: tuple[str, ...] = ()
        self.shared: tuple[str, ...] | None = None  # the shared columns, when joined apart
        self.own: tuple[str, ...] = ()  # a row's own columns

    def start(self, shared: dict[str, Any], part: dict[str, Any]) -> str:
        """The header line, from the first row (``{**shared, **part}``)."""
        self.header = tuple({**shared, **part})
        self.own = tuple(part)
        if self.own and tuple(shared) + self.own == self.header:
            self.shared = tuple(shared)
        return _csv_header(self.header)

    def lines(self, shared: dict[str, Any], parts: list[dict[str, Any]] | ReadyRows) -> list[str]:
        if isinstance(parts, ReadyRows):  # its columns are the header's own (``_ColumnsMaker``)
            start = _csv_cells(shared.values(), self.encode) + ","
            if parts.rows == 1:
                return [start + parts.text + "\r\n"]
            return [start + cells + "\r\n" for cells in orjson.loads(parts.text)]
        if len(parts) == 1:
            shared.update(parts[0])
            return [self.line(shared)]
        if self.shared is None or tuple(shared) != self.shared:
            return [self.line({**shared, **part}) for part in parts]
        start, own, encode = _csv_cells(shared.values(), self.encode) + ",", self.own, self.encode
        return [
            start + _csv_cells(part.values(), encode) + "\r\n"
            if tuple(part) == own
            else self.line({**shared, **part})
            for part in parts
        ]

    def line(self, row: dict[str, Any]) -> str:
        header = self.header
        if tuple(row) == header:
            return _csv_line(row.values(), self.encode)
        extra = [key for key in row if key not in header]  # as csv.DictWriter
        if extra:
            raise ValueError(f"dict contains fields not in fieldnames: {extra!r}")
        return _csv_line([row.get(key) for key in header], self.encode)


def _csv_text(
    project: Project, coders: str, *, rows: int, tally: _Tally | None = None
) -> Iterator[str]:
    """CSV in chunks of ``rows`` rows, the header in the first; see :func:`export_csv`."""
    tally = tally or _Tally()
    writer = _CsvRows()
    lines: list[str] = []  # the chunk's (the header too in the first)
    count = 0  # the chunk's rows
    for shared, parts in _answers(project, coders, raw=False, ready="csv"):
        if not writer.header:
            first = dict.fromkeys(parts.columns or ()) if isinstance(parts, ReadyRows) else parts[0]
            lines.append(writer.start(shared, first))
        for line in writer.lines(shared, parts):
            lines.append(line)
            count += 1
            if count == rows:
                tally.rows += rows
                yield "".join(lines)
                lines.clear()
                count = 0
    if lines:
        tally.rows += count
        yield "".join(lines)


def export_jsonl(*, project: Project, coders: str = "humans") -> Iterator[str]:
    """One JSON object per line, one line per chunk. Compact (orjson): no space after ``,`` and
    ``:``; the values are those ``json.dumps`` wrote."""
    return _jsonl_text(project, coders, rows=1)


def export_csv(*, project: Project, coders: str = "humans") -> Iterator[str]:
    """CSV with list and dict cells as JSON. The header comes from the first row (every row of a
    task type has the same keys). Text that a spreadsheet would run as a formula gets a leading
    apostrophe (annotators' free text reaches this file); JSONL keeps the exact text. Judges'
    raw replies are never in CSV. One row per chunk, the header in the first."""
    return _csv_text(project, coders, rows=1)


def export_stream(*, project: Project, fmt: str, coders: str = "humans") -> Iterator[str]:
    """The export as text, one row per chunk; an unknown ``fmt`` or ``coders`` is refused
    before anything is read (``Refusal`` naming the field)."""
    return export_chunks(project=project, fmt=fmt, coders=coders, rows=1)


def export_chunks(
    *, project: Project, fmt: str, coders: str = "humans", rows: int = TEXT_CHUNK
) -> Iterator[str]:
    """The export as text chunks of ``rows`` rows each (what downloads and the command
    stream: a few writes per thousand rows instead of one per row); refused as
    :func:`export_stream`."""
    export_options(fmt=fmt, coders=coders)
    return _text(project, fmt, coders, rows=rows)


def _text(
    project: Project, fmt: str, coders: str, *, rows: int, tally: _Tally | None = None
) -> Iterator[str]:
    if fmt == "jsonl":
        return _jsonl_text(project, coders, rows=rows, tally=tally)
    return _csv_text(project, coders, rows=rows, tally=tally)


def export_download(
    *,
    project: Project,
    fmt: str,
    coders: str = "humans",
    by: AbstractBaseUser | None = None,
    via: str = "download",
) -> Iterator[bytes]:
    """The export as it is downloaded and written to a file: the bytes of
    :func:`export_chunks`, then the trailer line of ``studies.export_check`` (row count and
    sha256 of every byte before it), so that a download cut off anywhere is told from a
    complete one. Between chunks it tells the server that the worker is alive
    (``core.liveness``): a long export is never killed as a hung worker. Refused as
    :func:`export_stream`, before anything is read. The project's audit log records who
    (``by``) asked for which export, and where (``via``), when it is asked for."""
    export_options(fmt=fmt, coders=coders)
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.EXPORTED,
        summary=f"Exported the {coders}' annotations as {fmt} ({via}).",
        changes={"format": fmt, "coders": coders, "via": via},
    )
    return _download(project, fmt, coders)


def _download(project: Project, fmt: str, coders: str) -> Iterator[bytes]:
    tally = _Tally()
    chunks = (
        _jsonl_bytes(project, coders, rows=TEXT_CHUNK, tally=tally)
        if fmt == "jsonl"
        else (text.encode() for text in _csv_text(project, coders, rows=TEXT_CHUNK, tally=tally))
    )
    return with_end_line(_telling_alive(chunks), fmt=fmt, rows=lambda: tally.rows)


def _telling_alive(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks``, telling the server between them that this worker is alive."""
    for data in chunks:
        liveness.alive()
        yield data


@dataclass(frozen=True, slots=True)
class ColumnsPrepared:
    """What :func:`export_columns_prepare` did for one project."""

    answers: int  # current human answers walked (0: the task type stores no columns)
    stored: int  # of them, those whose columns were missing or stale, now stored
    busy: bool  # another export or preparation was writing the project's columns: nothing done


def export_columns_prepare(*, project: Project) -> ColumnsPrepared:
    """Store every current human answer's export columns that are missing or stale (and what
    the task type's rows store of their own: argument structure's metrics), exactly as an
    export stores them and in one transaction like one, so that the next export only reads
    them (issue 34: argument structure's first export of 100k answers ran at ~3k rows/s and
    loaded the scorer's model into the web process). The beat task
    ``studies.prepare_export_columns`` runs it on a worker for each project whose answers,
    items or config changed since its last preparation (``studies.selectors.export_columns``;
    the version this one started from is recorded in
    ``ExportColumnsState``). Nothing is done for a task type that stores no columns, or while
    another export or preparation writes the project's columns (this one does not wait)."""
    if not task_types.get(project.task_type).export_columns_stored:
        return ColumnsPrepared(answers=0, stored=0, busy=False)
    writer = ColumnsWriter(project)
    answers = 0
    with _one_snapshot():
        if not writer.claim():
            return ColumnsPrepared(answers=0, stored=0, busy=True)
        # Read before the walk: what changes after it moves the version past the recorded one.
        version = project_columns_version(project_id=project.pk)
        project.refresh_from_db(fields=["config"])
        for _ in _answers(project, ready="jsonl", writer=writer):
            answers += 1
        ExportColumnsState.objects.update_or_create(
            project_id=project.pk, defaults={"version": version, "prepared_at": timezone.now()}
        )
    return ColumnsPrepared(answers=answers, stored=writer.stored, busy=False)
