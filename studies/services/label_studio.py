"""A Label Studio project imported in one step: its JSON export and labeling config, uploaded
together (the project page's Label Studio form and ``POST /api/projects/SLUG/import/label-studio/``),
become the project's items and the external coders' answers, all or nothing, through the task
type's own ``import_label_studio`` (questionnaire, ranking); the task type says whether it reads
Label Studio projects (``TaskType.label_studio``), so nothing here knows which do.

The task types' ``label_studio_io`` modules share the rest from here: the all-or-nothing import
(:meth:`LabelStudioMapping.import_label_studio`, the task type's mapping holding it), and the
export's coders (:func:`coders_answers`), entries (:func:`add_entries`) and stream
(:func:`stream_export`)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

import orjson
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotation import task_types
from annotation.models import Annotation, ExternalAnnotation, Item, readable_isoformat
from annotation.task_types import PayloadError
from core.wording import counted
from projects.audit import settings_audit, settings_of
from projects.models import Membership, Project
from projects.services import project_settings, settings_version_record
from studies.label_studio import ExportReading, export_json, unmapped_lines
from studies.services.external_annotations import import_annotations
from studies.services.import_jobs import upload_size_check
from studies.services.imports import ImportFailed, import_items

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SOURCE = "Label Studio"
VIA = "label-studio import"  # the settings version's and the audit entry's "via"
CHUNK = 500


class LabelStudioResult(TypedDict):
    summary: str
    items: int
    annotations: int
    predictions: int
    coders: int
    cancelled: int
    empty: int
    config_replaced: bool
    not_mapped: list[str]


def label_studio_import_upload(
    *,
    project: Project,
    export_file: UploadedFile,
    config_file: UploadedFile,
    source: str = "",
    by: User | None = None,
) -> LabelStudioResult:
    """Import an uploaded Label Studio export with its labeling config into ``project`` (see the
    module docstring). Raises ``ImportFailed`` naming the field (``file``: the export,
    ``labeling_config``: the config) and the task's index; nothing is imported then. ``by``:
    who, for the project's audit log."""
    task_type = task_types.get(project.task_type)
    if not task_type.label_studio:
        raise ImportFailed(
            f"Nothing imported. A {task_type.name} project does not read Label Studio projects.",
            field="file",
        )
    upload_size_check(upload=export_file, field="file")
    upload_size_check(upload=config_file, field="labeling_config")
    try:
        xml = config_file.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed(
            f"Nothing imported. The labeling config is not UTF-8 text (byte {exc.start}).",
            field="labeling_config",
        ) from None
    name = (source or getattr(export_file, "name", "") or "Label Studio")[:200]
    export = export_file.read()
    _within_one_request(export)
    done: Any = task_type.import_label_studio(
        project=project, export=export, labeling_config=xml, source=name, by=by
    )
    return LabelStudioResult(
        summary=done.summary(),
        items=done.items,
        annotations=done.annotations,
        predictions=done.predictions,
        coders=done.coders,
        cancelled=done.cancelled,
        empty=done.empty,
        config_replaced=done.config_replaced,
        not_mapped=list(done.not_mapped),
    )


def _within_one_request(export: bytes) -> None:
    """Refuse, before anything is read into the project, an export with more tasks than the page
    and the API import in one request (``CONCORD_LABEL_STUDIO_WEB_TASKS``): the request would be
    cut by the server's timeout and the researcher told nothing. An export that is not a JSON
    list is left to the reader, which says what is wrong with it."""
    limit = settings.CONCORD_LABEL_STUDIO_WEB_TASKS
    try:
        tasks = orjson.loads(export)
    except orjson.JSONDecodeError:
        return
    if isinstance(tasks, list) and len(tasks) > limit:
        raise ImportFailed(
            f"Nothing imported. This export holds {len(tasks):,} tasks; the page and the API "
            f"import up to {limit:,} in one request (CONCORD_LABEL_STUDIO_WEB_TASKS), so that "
            "it ends before the server's timeout. Split the export, or run "
            "`manage.py import_label_studio` on the server, which has no such limit.",
            field="file",
        )


# --- the one-step import, shared by the task types ----------------------------------------------


@dataclass
class LabelStudioImport:
    """What an import of a Label Studio export did, and what it left out."""

    items: int
    annotations: int  # annotators' answers imported
    predictions: int  # predictions imported (as model:<version> coders)
    coders: int
    cancelled: int  # cancelled annotations, left out
    empty: int  # annotations or predictions with no result that maps
    config_replaced: bool
    not_mapped: list[str] = field(default_factory=list)
    answer_word: str = "annotation"  # the summary's word for an annotator's answer
    empty_reason: str = "with no result that maps to a question"

    def summary(self) -> str:
        text = (
            f"Imported {counted(self.items, 'item')}, "
            f"{counted(self.annotations, self.answer_word)} "
            f"and {counted(self.predictions, 'prediction')} by "
            f"{counted(self.coders, 'external coder')} from Label Studio"
        )
        if self.cancelled:
            text += f"; left out {counted(self.cancelled, 'cancelled annotation')}"
        if self.empty:
            entries = counted(self.empty, "annotation or prediction", "annotations or predictions")
            text += f"; left out {entries} {self.empty_reason}"
        return text + "."


@dataclass(frozen=True)
class LabelStudioMapping:
    """A task type's reading of Label Studio projects, and the one-step import with it."""

    task_type: str  # the slug of the projects it imports into
    parse: Callable[[str], Any]  # the labeling config (XML) -> the task type's config reading
    read: Callable[[Any, Any], ExportReading]  # (parsed export, config reading) -> reading
    # (project, config reading) -> the config an empty project takes (checked)
    new_config: Callable[[Project, Any], dict]
    # (project, config reading) -> why a project with items cannot take it ("" when it can)
    mismatch: Callable[[Project, Any], str]
    items_read_again: bool  # the item import reads the export itself (else reading.items)
    answer_word: str = "annotation"
    empty_reason: str = "with no result that maps to a question"

    def import_label_studio(
        self,
        *,
        project: Project,
        export: str | bytes,
        labeling_config: str,
        source: str = SOURCE,
        by: User | None = None,
    ) -> LabelStudioImport:
        """Import a Label Studio JSON export (its text) read against its labeling config (XML)
        into ``project``, all or nothing: the project's config (``new_config``), the tasks as
        items (the generic item import) and the annotations and predictions as external coders'
        answers (the generic annotation import, which reads the export again, so that its errors
        name the task). Both write their entry of the project's audit log, naming ``by``. Raises
        ``ImportFailed`` naming the task's index and field (or the config's problem)."""
        text = _export_text(export)
        config, reading = _read(text, labeling_config, self)
        # the export read again by a generic import's label-studio format
        again: dict[str, Any] = {
            "fmt": "label-studio",
            "options": {"mapping": labeling_config},
            "source": source,
        }
        with transaction.atomic():
            replaced = _adopt(project, config, self, by)
            if self.items_read_again:
                import_items(project=project, stream=io.StringIO(text), by=by, **again)
            else:
                import_items(project=project, stream=_jsonl(reading.items), fmt="jsonl", by=by)
            coders = 0
            if reading.answers:
                answers = import_annotations(
                    project=project, stream=io.StringIO(text), by=by, **again
                )
                coders = answers["coders"]
        return LabelStudioImport(
            items=len(reading.items),
            annotations=len(reading.answers) - reading.predictions,
            predictions=reading.predictions,
            coders=coders,
            cancelled=reading.cancelled,
            empty=reading.empty,
            config_replaced=replaced,
            not_mapped=list(unmapped_lines(reading, config.unmapped)),
            answer_word=self.answer_word,
            empty_reason=self.empty_reason,
        )


def _export_text(export: str | bytes) -> str:
    if len(export) > settings.CONCORD_MAX_UPLOAD_BYTES:
        raise ImportFailed("Nothing imported. The export is too large.", code="too_large")
    if isinstance(export, bytes):
        try:
            return export.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ImportFailed(
                f"Nothing imported. The export is not UTF-8 text (byte {exc.start}).", field="file"
            ) from None
    return export


def _read(export: str, labeling_config: str, mapping: LabelStudioMapping) -> tuple[Any, Any]:
    try:
        config = mapping.parse(labeling_config)
        reading = mapping.read(export_json(export), config)
    except PayloadError as exc:
        raise ImportFailed(f"Nothing imported. {exc}", field=exc.field or "file") from None
    except ValueError as exc:  # not JSON, or JSON that cannot be stored
        raise ImportFailed(
            f"Nothing imported. The export is not JSON: {exc}", field="file"
        ) from None
    if not reading.items:
        raise ImportFailed("Nothing imported: the export has no tasks.", field="file")
    return config, reading


def _adopt(project: Project, config: Any, mapping: LabelStudioMapping, by: User | None) -> bool:
    """Give an empty project the labeling config's settings (True); check that a project with
    items already has them, else refuse. A new config is a settings version and an entry of the
    audit log ("Settings or guidelines changed")."""
    if project.task_type != mapping.task_type:
        raise ImportFailed(
            f"Nothing imported. A Label Studio export goes into a {mapping.task_type} project.",
            field="project",
        )
    if not Item.objects.filter(project=project).exists():
        before, audited = project_settings(project=project), settings_of(project=project)
        project.config = mapping.new_config(project, config)
        project.save(update_fields=["config"])
        settings_version_record(project=project, before=before, by=by, via=VIA)
        settings_audit(project=project, actor=by, before=audited, via=VIA)
        return True
    problem = mapping.mismatch(project, config)
    if problem:
        raise ImportFailed(f"Nothing imported. {problem}", field="labeling_config")
    return False


def _jsonl(records: list[dict]) -> io.StringIO:
    return io.StringIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


# --- the export, shared by the task types -------------------------------------------------------


class CoderAnswer(NamedTuple):
    """One current answer of an item, as a Label Studio export writes it."""

    coder: str  # an annotator's pseudonym, or ``ext:<name>`` for an external coder
    answer: dict[str, Any] | None  # in the task type's answer shape
    time_spent_ms: int | None
    created_at: str | None  # ISO 8601 (an external answer may have no time)


def coders_answers(*, project: Project, item_ids: list[int]) -> dict[int, list[CoderAnswer]]:
    """The current answers of ``item_ids`` by item: annotators by pseudonym, then external
    coders by ``ext:<name>``."""
    pseudonyms = dict(
        Membership.objects.filter(project=project).values_list("user_id", "pseudonym")
    )
    found: dict[int, list[CoderAnswer]] = {item_id: [] for item_id in item_ids}
    humans = (
        Annotation.objects.filter(item_id__in=item_ids, is_current=True)
        .order_by("item_id", "annotator_id")
        .values_list("item_id", "annotator_id", "answer", "time_spent_ms", "created_at")
    )
    for item_id, user_id, answer, spent, created in humans:
        coder = pseudonyms.get(user_id, f"user-{user_id}")
        found[item_id].append(CoderAnswer(coder, answer, spent, created.isoformat()))
    external = (
        ExternalAnnotation.objects.filter(item_id__in=item_ids)
        .with_readable_time()
        .order_by("item_id", "coder__name")
        .values_list("item_id", "coder__name", "answer", "time_spent_ms", "annotated_at_text")
    )
    for item_id, name, answer, spent, when in external:
        found[item_id].append(CoderAnswer(f"ext:{name}", answer, spent, readable_isoformat(when)))
    return found


@dataclass
class ExportNumbers:
    """Numbers that run across one export: each coder's ``completed_by`` (in the order met) and
    the annotations' ids."""

    coders: dict[str, int] = field(default_factory=dict)
    annotations: int = 0


def add_entries(
    *,
    task: dict,
    answers: list[CoderAnswer],
    results_of: Callable[[dict], list],
    numbers: ExportNumbers,
) -> None:
    """Each coder's answer as one entry of ``task``: an annotation (``completed_by`` numbered
    per coder, the coder in ``concord_coder``), or, for an external coder named ``model:…``, a
    prediction; its results are the task type's ``results_of(answer)``."""
    for coder, answer, spent, when in answers:
        results = results_of(answer or {})
        if coder.startswith("ext:model:"):
            task["predictions"].append(
                {"model_version": coder.removeprefix("ext:model:"), "result": results}
            )
            continue
        numbers.annotations += 1
        entry = {
            "id": numbers.annotations,
            "completed_by": numbers.coders.setdefault(coder, len(numbers.coders) + 1),
            "concord_coder": coder,
            "result": results,
            "was_cancelled": False,
            "created_at": when,
        }
        if spent is not None:
            entry["lead_time"] = spent / 1000
        task["annotations"].append(entry)


def stream_export(
    *,
    project: Project,
    fields: tuple[str, ...],
    task_of: Callable[[tuple, list[CoderAnswer]], dict],
) -> Iterator[str]:
    """The project as a Label Studio JSON export (a list of tasks), streamed a task at a time:
    ``task_of(row, answers)`` for each item's row (``id`` then ``fields``), in item order."""
    items = (
        Item.objects.filter(project=project).order_by("position", "id").values_list("id", *fields)
    )
    yield "["
    first = True
    rows = items.iterator(chunk_size=CHUNK)
    while chunk := list(islice(rows, CHUNK)):
        answers = coders_answers(project=project, item_ids=[row[0] for row in chunk])
        for row in chunk:
            yield ("\n" if first else ",\n") + json.dumps(
                task_of(row, answers[row[0]]), ensure_ascii=False
            )
            first = False
    yield "\n]\n"
