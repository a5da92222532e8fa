"""Exporting annotations as JSONL or CSV, streamed in constant memory.

One row per current annotation version: item external id, group, kind, pseudonymous annotator id,
the task type's answer columns (with gold and scores), time spent, timestamps and provenance;
then the annotator's qualification state (``excluded`` when disqualified), the item's majority
answer (by the task type's agreement key), its adjudicated answer, and the judge whose
pre-selection the annotator was shown (empty when none). Task
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
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from annotation import task_types
from annotation.models import Annotation, ExternalAnnotation
from annotation.review import with_item_verdicts
from annotation.task_types import TaskType
from core.errors import Refusal
from core.spreadsheet import spreadsheet_safe
from llm_judges.models import JudgeResult
from llm_judges.selectors import judge_results_for_export, preselections_shown
from projects.models import Membership, Project

FORMATS = ("jsonl", "csv")
CODERS = ("humans", "external", "judges", "all")
HERE = "concord"  # coder_source of answers made on this platform
CHUNK = 2000

JUDGE_COLUMNS = (
    "judge",
    "judge_kind",  # llm / nli / embedding
    "judge_model",
    "judge_prompt_name",
    "judge_prompt_version",
    "judge_prompt_fingerprint",
    "judge_setting",
    "judge_run_id",
    "judge_outcome",  # ok / unparseable / failed
    "judge_message",
    "judge_attempts",
    "judge_latency_ms",
    "judge_input_tokens",
    "judge_output_tokens",
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
)


def export_options(*, fmt: str, coders: str) -> None:
    """Refuse an unknown format or coder choice, naming the field."""
    if fmt not in FORMATS:
        raise Refusal(
            f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.", field="format"
        )
    if coders not in CODERS:
        raise Refusal(
            f"Unknown coders {coders!r}; choose one of {', '.join(CODERS)}.", field="coders"
        )


def _rows(project: Project, coders: str = "humans", *, raw: bool = False) -> Iterator[dict]:
    task_type = task_types.get(project.task_type)
    with_judges = coders == "all"
    if coders in ("humans", "all"):
        yield from _human_rows(
            project, task_type, with_coder=coders != "humans", with_judges=with_judges, raw=raw
        )
    if coders in ("external", "all"):
        yield from _external_rows(project, task_type, with_judges=with_judges, raw=raw)
    if coders in ("judges", "all"):
        yield from _judge_rows(project, task_type, raw=raw)


def _judge_columns(raw: bool) -> dict[str, Any]:
    empty: dict[str, Any] = dict.fromkeys(JUDGE_COLUMNS)
    if raw:
        empty["judge_raw_reply"] = None
    return empty


def _human_rows(
    project: Project, task_type: TaskType, *, with_coder: bool, with_judges: bool, raw: bool
) -> Iterator[dict]:
    pseudonyms = dict(
        Membership.objects.filter(project=project).values_list("user_id", "pseudonym")
    )
    # Which judge's pre-selection an annotator was shown (anchoring must be visible in the data).
    preselected = preselections_shown(project=project)
    annotations = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item", "assignment")
        .order_by("item__position", "item_id", "assignment__sequence", "id")
    )
    # Grouped by item to add each item's majority and adjudicated answer (annotation.review).
    for annotation in with_item_verdicts(
        project, task_type, annotations.iterator(chunk_size=CHUNK)
    ):
        item = annotation.item
        pseudonym = pseudonyms.get(
            annotation.annotator_id, f"ann-removed-{annotation.annotator_id}"
        )
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": item.external_id,
            "item_kind": item.kind,
            "group": item.group,
            **(
                {"coder_kind": "human", "coder": pseudonym, "coder_source": HERE}
                if with_coder
                else {}
            ),
            "annotator": pseudonym,
            "version": annotation.version,
            # Active time as the server bounds it, and as the annotator's browser reported it.
            "time_spent_s": round(annotation.time_spent_ms / 1000, 1),
            "reported_time_s": round(annotation.reported_time_ms / 1000, 1),
            "reserved_at": annotation.assignment.reserved_at.isoformat(),
            "submitted_at": annotation.created_at.isoformat(),
            **annotation.verdicts,
            "preselection_shown": preselected.get((item.id, annotation.annotator_id), ""),
            **(_judge_columns(raw) if with_judges else {}),
        }
        for part in task_type.export_rows(item, annotation):  # several for claims, criteria…
            yield {**row, **part}


def _external_rows(
    project: Project, task_type: TaskType, *, with_judges: bool, raw: bool
) -> Iterator[dict]:
    """One row per external coder's answer (several where the task type writes several), with
    the human rows' columns (one query, streamed)."""
    blank_answer: dict[str, None] | None = None
    answers = (
        ExternalAnnotation.objects.filter(item__project=project)
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
            "submitted_at": external.annotated_at.isoformat() if external.annotated_at else None,
            "annotator_qualification": None,
            "excluded": False,
            "majority": None,
            "adjudicated": None,
            "preselection_shown": None,
            **(_judge_columns(raw) if with_judges else {}),
        }
        parts = task_type.export_rows(item, SimpleNamespace(answer=external.answer))
        if not parts:
            if blank_answer is None:
                blank_answer = _blank_answer_columns(project, task_type)
            parts = [blank_answer]
        for part in parts:
            yield {**row, **part}


def _judge_rows(project: Project, task_type: TaskType, *, raw: bool) -> Iterator[dict]:
    """One row per judge answer (several where the task type writes several per answer), or one
    row with empty answer columns for an unparseable or failed result."""
    blank_answer: dict[str, None] | None = None  # the task type's columns, all empty
    for result in judge_results_for_export(project=project, with_raw=raw, chunk_size=CHUNK):
        item, judge, run = result.item, result.judge, result.run
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": item.external_id,
            "item_kind": item.kind,
            "group": item.group,
            "coder_kind": "judge",
            "coder": judge.name,
            "coder_source": HERE,
            **dict.fromkeys(HUMAN_ONLY),
            "judge": judge.name,
            "judge_kind": judge.kind,
            "judge_model": judge.model,
            "judge_prompt_name": project.task_type,  # the task type's registered judge prompt
            "judge_prompt_version": result.prompt_version,
            "judge_prompt_fingerprint": run.prompt_fingerprint if run else None,
            "judge_setting": result.setting,
            "judge_run_id": run.pk if run else None,
            "judge_outcome": result.status,
            "judge_message": result.error,
            "judge_attempts": result.attempts,
            "judge_latency_ms": result.latency_ms,
            "judge_input_tokens": result.prompt_tokens,
            "judge_output_tokens": result.completion_tokens,
            **({"judge_raw_reply": result.raw} if raw else {}),
        }
        parts = []
        if result.status == JudgeResult.Status.OK and result.answer is not None:
            parts = task_type.export_rows(item, SimpleNamespace(answer=result.answer))
        if not parts:  # no answer, or one with no rows (claim review: no claim judged)
            if blank_answer is None:
                blank_answer = _blank_answer_columns(project, task_type)
            parts = [blank_answer]
        for part in parts:
            yield {**row, **part}


def _blank_answer_columns(project: Project, task_type: TaskType) -> dict[str, None]:
    """The task type's export columns, all empty (every row of a task type has the same keys):
    taken from one stored answer, a human's, an external coder's or a judge's. No answer
    anywhere: no columns."""
    annotation = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item")
        .order_by("id")
        .first()
    )
    external = (
        ExternalAnnotation.objects.filter(item__project=project)
        .select_related("item")
        .order_by("id")
        .first()
        if annotation is None
        else None
    )
    if annotation is not None:
        parts = task_type.export_rows(annotation.item, annotation)
    elif external is not None:
        parts = task_type.export_rows(external.item, SimpleNamespace(answer=external.answer))
    else:
        result = (
            JudgeResult.objects.filter(
                item__project=project, status=JudgeResult.Status.OK, answer__isnull=False
            )
            .select_related("item")
            .defer("raw")
            .order_by("id")
            .first()
        )
        if result is None:
            return {}
        parts = task_type.export_rows(result.item, SimpleNamespace(answer=result.answer))
    return dict.fromkeys(parts[0]) if parts else {}


def export_jsonl(*, project: Project, coders: str = "humans") -> Iterator[str]:
    for row in _rows(project, coders, raw=True):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def export_csv(*, project: Project, coders: str = "humans") -> Iterator[str]:
    """CSV with list and dict cells as JSON. The header comes from the first row (every row of a
    task type has the same keys). Text that a spreadsheet would run as a formula gets a leading
    apostrophe (annotators' free text reaches this file); JSONL keeps the exact text. Judges'
    raw replies are never in CSV."""
    buffer = io.StringIO()
    writer = None
    for row in _rows(project, coders, raw=False):
        flat = {
            k: json.dumps(v) if isinstance(v, list | dict) else spreadsheet_safe(v)
            for k, v in row.items()
        }
        if writer is None:
            writer = csv.DictWriter(buffer, fieldnames=list(flat))
            writer.writeheader()
        writer.writerow(flat)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)


def export_stream(*, project: Project, fmt: str, coders: str = "humans") -> Iterator[str]:
    """The export as text chunks; an unknown ``fmt`` or ``coders`` is refused before anything
    is read (``Refusal`` naming the field)."""
    export_options(fmt=fmt, coders=coders)
    if fmt == "jsonl":
        return export_jsonl(project=project, coders=coders)
    return export_csv(project=project, coders=coders)
