"""The task-type contract: everything that differs between annotation task types.

A task type is one package ``task_types/<slug>/`` holding a :class:`TaskType` subclass
(``task.py``) and everything else that is particular to it (formats, judging, report, demo,
template, JS, CSS); see ``docs/architecture.md``. Services call these hooks; they never branch
on the slug.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, ClassVar

from django.conf import settings
from django.utils.translation import gettext_noop
from rest_framework import serializers

from core.errors import first_error
from core.json_safety import UnsafeJSON
from core.json_safety import loads as safe_json_loads


class PayloadError(ValueError):
    """An imported record that cannot become an item; ``field`` names the offending field."""

    def __init__(self, message: str, *, field: str = "", location: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.location = location  # "line 3", "claim 27c2…"; set by readers or the importer

    def __str__(self) -> str:
        where = ", ".join(
            p for p in (self.location, f"field {self.field!r}" if self.field else "") if p
        )
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class ExtraExport:
    """A task type's own export format (beside the generic JSONL and CSV): a file another tool
    reads, streamed as text by ``stream(project)``, offered on the project page and by the
    export API (``?format=<name>``). It carries no end line: the other tool reads the file."""

    title: str  # the page's button: "Download <title>"
    content_type: str
    extension: str
    stream: Callable[[Any], Iterator[str]]


@dataclass(frozen=True)
class PreparedItem:
    """One item derived from one imported record (a record may yield several, e.g. the
    citation-recovery ``full`` setting masks each cited evidence in turn)."""

    external_id: str
    payload: dict
    prepared: dict
    gold: dict | None
    group: str = ""
    kind: str = "regular"
    # What the researcher should know about how this item was made (e.g. the masked evidence was
    # chosen by the seeded generator); the import's result lists each note with its records.
    notes: tuple[str, ...] = ()


Reader = Callable[..., Iterator[tuple[str, dict]]]
"""An import format: ``reader(stream, **options)`` yields ``(location, payload)``; the location
("line 3", "claim 27c2…") names the record in error messages."""


class TaskType:
    """One annotation task type, the way ``ModelAdmin`` is one model's admin: class attributes
    say what it is, methods are the hooks the platform calls; override what differs.

    A task type lives in its own package ``task_types/<slug>/`` (a Django app): ``task.py``
    defines the subclass and registers an instance with :func:`annotation.task_types.register`;
    its template is ``<slug>/annotate.html`` and its JS module ``<slug>/task.js`` in the
    package's ``templates/`` and ``static/``. Services call these hooks and never branch on the
    slug.
    """

    slug: ClassVar[str]
    name: ClassVar[str]
    payload_serializer: ClassVar[type[serializers.Serializer]]
    answer_serializer: ClassVar[type[serializers.Serializer]]
    config_serializer: ClassVar[type[serializers.Serializer]]
    measures: ClassVar[Mapping[str, str]] = {}
    # ^ answer field -> agreement distance name (``metrics.distances``)
    readers: ClassVar[Mapping[str, Reader]] = {}
    # ^ import formats beside the generic ``jsonl`` and ``csv``: name -> reader
    export_formats: ClassVar[Mapping[str, ExtraExport]] = {}
    # ^ the task type's own export formats (another tool's files): name -> ExtraExport
    annotation_readers: ClassVar[Mapping[str, Reader]] = {}
    # ^ formats of annotations collected elsewhere (``studies.services.external_annotations``):
    #   name -> reader of ``(location, {item, coder, answer[, time_spent_ms, annotated_at,
    #   source, expect]})`` rows; ``item`` may be a list of candidate external ids
    label_studio: ClassVar[bool] = False
    # ^ whether :meth:`import_label_studio` reads a Label Studio project in one step (the
    #   project page's Label Studio form is offered only then)
    private_config: ClassVar[frozenset[str]] = frozenset()
    # ^ config keys the annotation page must not carry (e.g. ranking's system names and seed)
    skip_reason: ClassVar[str] = "nothing to annotate"
    # ^ why a record whose ``prepare`` yields no item is skipped, in import summaries
    agreement_basis: ClassVar[str] = gettext_noop("the whole answer")
    # ^ what :meth:`agreement_key` compares, in words, for the review pages
    dataset_task_categories: ClassVar[tuple[str, ...]] = ("text-classification",)
    # ^ the Hugging Face task categories of a replication bundle's dataset card
    export_item_fields: ClassVar[frozenset[str]] = frozenset({"payload", "prepared", "gold"})
    # ^ the item's JSON fields :meth:`export_row`/:meth:`export_rows` read; exports load only
    #   these (and ``item.project``), so a task type that reads less exports faster
    export_columns_stored: ClassVar[bool] = False
    # ^ whether the export stores each human answer's own columns (its :meth:`export_rows`, as
    #   JSONL and CSV text) and agreement key, and passes them through undecoded while current
    #   (``studies.models.ReadyExportColumns``): worth it where making the rows costs far more
    #   than writing them (argument structure). Only for rows that depend on nothing but the
    #   item's ``export_item_fields``, the answer and the project's config.
    export_columns_version: ClassVar[str] = "1"
    # ^ raise it whenever :meth:`export_rows` would write other columns or values for the same
    #   item, answer and config: every stored row is then made anew

    @property
    def template_name(self) -> str:
        return f"{self.slug}/annotate.html"

    @property
    def script(self) -> str:
        """Static path of the task's JS module."""
        return f"{self.slug}/task.js"

    @property
    def preview(self) -> str:
        """Static path of the picture of its annotation page (``tools/task_type_previews.py``)."""
        return f"{self.slug}/preview.png"

    @property
    def description(self) -> str:
        """What the task type is, in one sentence: the first of its package's docstring."""
        package = sys.modules.get(type(self).__module__.rpartition(".")[0])
        text = " ".join((getattr(package, "__doc__", None) or "").split())
        first = (
            re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
            if text
            else ""
        )
        return first or self.name

    def example_records(self) -> list[dict]:
        """Records of an example import file (the demo payload by default)."""
        return [self.demo_payload()]

    def example_files(self) -> dict[str, str]:
        """An example file of every import format, by format: JSON Lines and CSV built from
        :meth:`example_records` (nested fields as JSON text in their cell); a task type with
        formats of its own (:attr:`readers`) adds one for each. A contract test imports each."""
        records = self.example_records()
        columns = list(dict.fromkeys(key for record in records for key in record))
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({key: _csv_text(record.get(key)) for key in columns})
        jsonl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        return {"jsonl": jsonl, "csv": out.getvalue()}

    def import_label_studio(
        self,
        *,
        project: Any,
        export: str | bytes,
        labeling_config: str,
        source: str,
        by: Any = None,
    ) -> Any:
        """Import a Label Studio project (its JSON export and labeling config) into ``project``
        in one step, all or nothing: the project's config from the labeling config when it has
        no items, the tasks as items, the annotations and predictions as external coders'
        answers; ``by`` (a user, or None) for the project's audit log. Returns a result with
        ``summary()`` (one line) and ``not_mapped`` (lines);
        raises ``studies.services.imports.ImportFailed``. Only where :attr:`label_studio`."""
        raise NotImplementedError(f"{self.name} reads no Label Studio projects")

    def config_change_problem(self, *, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
        """Why changing a project's (validated) config from ``before`` to ``after`` would make
        its existing answers wrong ("" when it would not); asked only once answers exist."""
        return ""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.slug!r}>"

    # --- import -------------------------------------------------------------------------------

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """The items derived from one validated payload (usually one)."""
        raise NotImplementedError(f"{type(self).__name__} must define prepare()")

    def prepare_batch(
        self, payloads: list[dict], *, config: dict
    ) -> list[list[PreparedItem] | PayloadError]:
        """``prepare`` over a chunk of validated payloads; a record's ``PayloadError`` is
        returned in its place. Override to batch expensive work (e.g. sentence splitting)."""
        results: list[list[PreparedItem] | PayloadError] = []
        for payload in payloads:
            try:
                results.append(self.prepare(payload, config=config))
            except PayloadError as exc:
                results.append(exc)
        return results

    def csv_to_payload(self, row: dict) -> dict:
        """One CSV row (header -> cell text) as a payload; decode nested JSON cells here."""
        return row

    def fast_payload(self, data: Any) -> dict | None:
        """The validated payload exactly as :attr:`payload_serializer` would return it, for a
        record a task type can check faster by hand; None (the default) lets the serializer
        validate it and word the errors. Return None for anything unusual, never a guess."""
        return None

    def validate_payload(self, data: Any) -> dict:
        validated = self.fast_payload(data)
        if validated is not None:
            return validated
        # One serializer instance per thread, reused: building a DRF serializer deep-copies its
        # fields, which dominated import time (100k records). run_validation keeps no state.
        serializer = _reusable(self.payload_serializer)
        try:
            return serializer.run_validation(data)
        except serializers.ValidationError as exc:
            field_name, message = first_error(exc.detail)
            raise PayloadError(message, field=field_name) from None

    def validate_config(self, data: Any) -> dict:
        serializer = self.config_serializer(data=data or {})
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def external_answer_fields(self, config: Mapping[str, Any]) -> dict[str, serializers.Field]:
        """The fields an answer collected elsewhere may have, each checked on its own (a source
        may record only some): the answer serializer's fields by default. Override where the
        fields depend on the project (the questionnaire: one per configured question)."""
        return dict(self.answer_serializer().fields)

    def external_answer(
        self,
        answer: dict,
        *,
        payload: Mapping[str, Any],
        prepared: Mapping[str, Any],
        config: Mapping[str, Any],
    ) -> dict:
        """An answer collected elsewhere (``studies.services.external_annotations``), already
        checked field by field, as this task type stores it for the item with ``payload`` and
        ``prepared`` in a project with ``config``. Default: as given. Override where a source
        names parts of an item differently from the stored answer (ranking: systems by name,
        stored by opaque key); raise ``PayloadError`` naming the answer field at fault."""
        return answer

    # --- annotation ---------------------------------------------------------------------------

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """What the annotator of ``assignment`` may see of ``item`` (never gold). ``assignment``
        is None for reviewers and judges; a task type whose display depends on who looks (an
        order shuffled per annotator) uses it."""
        raise NotImplementedError(f"{type(self).__name__} must define display()")

    def presentation(self, item: Any, *, config: Mapping[str, Any], flipped: bool) -> dict:
        """How ``item`` is laid out for one assignment where the layout is counterbalanced
        between annotators (which of two compared texts comes first, the outputs' order), as a
        JSON object stored with the assignment and every answer made in it (and exported);
        ``display`` reads it back from ``assignment.presentation``. ``flipped`` is the
        assignment's side (``annotation.ordering.flipped``: balanced within one per annotator).
        {} (the default): nothing is counterbalanced."""
        return {}

    def annotator_config(self, config: Mapping[str, Any]) -> dict:
        """The validated config without the keys annotators must not see."""
        return {k: v for k, v in config.items() if k not in self.private_config}

    def control_quota(self, config: Mapping[str, Any]) -> Mapping[str, int] | None:
        """Control items per crowd batch by category (see ``control_category``), from the
        project's config; None (the default): a batch's ``controls_per_batch`` controls are
        drawn at random."""
        return None

    def control_category(self, gold: Mapping[str, Any] | None) -> str:
        """The category of a control item by its gold, for ``control_quota``."""
        return "control"

    def score(self, answer: dict, gold: dict | None) -> dict:
        """Scores of an answer against gold (control items, qualification); {} without gold."""
        return {}

    def headline(self, payload: Mapping[str, Any]) -> str:
        """A few words that let an annotator recognise an item in "Previous items" (the claim,
        by default); never gold or hidden fields."""
        return str(payload.get("claim") or "")

    def measures_for(self, config: Mapping[str, Any]) -> Mapping[str, str]:
        """The answer fields compared for agreement in a project with this ``config`` (field ->
        distance). Default: all of :attr:`measures`; a task type whose modes answer different
        fields narrows it, so reports show no figure that cannot apply."""
        return self.measures

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        """One readable line of an answer, for reviewers comparing answers (default: its JSON).
        ``item`` (the item answered, when the page has it) lets a task type whose answers name
        parts of the item by opaque key write them as the reviewer knows them (ranking: the
        output's letter on the review page and its system)."""
        return json.dumps(answer, ensure_ascii=False, sort_keys=True)

    def agreement_key(self, answer: dict) -> Any:
        """The JSON-able part of an answer annotators must agree on (review and majority vote;
        e.g. the chosen sentences, not a free rating). Default: the whole answer."""
        return answer

    def answer_key(self, answer: dict) -> str:
        """Canonical text of :meth:`agreement_key`, for grouping equal answers."""
        return json.dumps(self.agreement_key(answer), sort_keys=True, separators=(",", ":"))

    # --- export and demo ----------------------------------------------------------------------

    def export_row(self, item: Any, annotation: Any) -> dict:
        """One flat, JSON-able row for one annotation. Judges' export rows are built by the same
        hook, with an ``annotation`` that has only ``answer`` (the judge's answer, in the answer
        shape, possibly with only the fields the judge fills): read nothing else from it."""
        raise NotImplementedError(f"{type(self).__name__} must define export_row()")

    def export_rows(self, item: Any, annotation: Any) -> list[dict]:
        """The rows of one annotation; override to write several (one per claim, per criterion
        and system…). Every row of a task type has the same keys."""
        return [self.export_row(item, annotation)]

    def exporter(self, project: Any) -> Callable[[Any, Any], list[dict]]:
        """:meth:`export_rows` for one export of ``project``: called once before its first row,
        so that a task type whose rows depend on the project's config reads and validates it
        once per export, not once per row (questionnaire). By default :meth:`export_rows`. The
        callable may have a ``prepare_rows(answered)`` method: the export calls it with each
        batch of ``(item, answers)`` before making their rows, each human answer with its ``id``
        and decoded ``answer``, the same objects the rows are then made of (argument structure
        reads the batch's stored metrics in one query and embeds the sentences of missing ones
        in one model call)."""
        return self.export_rows

    def demo_payload(self) -> dict:
        """One valid payload, for the contract test and the admin's example."""
        raise NotImplementedError(f"{type(self).__name__} must define demo_payload()")


class StrictCharField(serializers.CharField):
    """DRF's ``CharField`` without its silent conversion of numbers to text: ``"claim": 123`` in
    an imported record is an error, not the claim "123". Payload serializers use it for text."""

    default_error_messages = {"not_text": "Must be text, not {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_text", kind=_json_kind(data))
        return super().to_internal_value(data)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def jsonl_records(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """``(location, record)`` for each non-blank line of a JSON Lines file; a line that is not a
    JSON object, or longer than ``CONCORD_MAX_RECORD_CHARS``, raises ``PayloadError`` naming it. Shared by the generic importer and the
    task-specific JSONL formats."""
    most = settings.CONCORD_MAX_RECORD_CHARS
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        location = f"line {number}"
        if len(line) > most:
            raise PayloadError(
                f"the line is {len(line):,} characters; a record may have at most {most:,} "
                "(setting CONCORD_MAX_RECORD_CHARS)",
                location=location,
            )
        try:
            record = safe_json_loads(line)
        except json.JSONDecodeError as exc:
            raise PayloadError(
                f"not valid JSON ({exc.msg}, column {exc.colno})", location=location
            ) from None
        except UnsafeJSON as exc:
            raise PayloadError(exc.message, location=location, field=exc.field) from None
        if not isinstance(record, dict):
            raise PayloadError("each line must be a JSON object", location=location)
        yield location, record


def _csv_text(value: Any) -> str:
    """A payload value as a CSV cell: text as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def json_cell(payload: dict, column: str) -> None:
    """Decode the JSON text in the CSV cell ``payload[column]`` in place, with the same checks as
    a JSON Lines record; a cell that is not safe JSON raises ``PayloadError`` naming the column
    (and the path inside the cell). The CSV reader adds the line."""
    try:
        payload[column] = safe_json_loads(payload[column])
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"not valid JSON ({exc.msg}, column {exc.colno})", field=column
        ) from None
    except UnsafeJSON as exc:
        raise PayloadError(exc.message, field=".".join([column, *exc.path])) from None


_local = threading.local()


def _reusable(serializer_class: type) -> Any:
    cache = _local.__dict__.setdefault("serializers", {})
    if serializer_class not in cache:
        cache[serializer_class] = serializer_class()
    return cache[serializer_class]
