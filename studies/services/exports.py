"""Exporting annotations as JSONL or CSV, streamed in constant memory.

One row per current annotation version: item external id, group, kind, pseudonymous annotator id,
the task type's answer columns (with gold and scores), time spent, timestamps and provenance;
then the annotator's qualification state (``excluded`` when disqualified), the item's majority
answer (by the task type's agreement key), its adjudicated answer, and the judge whose
pre-selection the annotator was shown (empty when none). Task
types may write several rows per annotation (``export_rows``: claim review, ranking), each
repeating those common columns.

``coders`` chooses whose answers: ``humans`` (the default; the rows above, unchanged),
``judges`` or ``all``. With judges, every row gains ``coder_kind`` (human / judge) and ``coder``
(the annotator's pseudonym or the judge's name) and the judge columns (:data:`JUDGE_COLUMNS`,
empty on human rows), so one CSV holds both. A judge row has the task type's columns for the
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
from annotation.models import Annotation
from annotation.review import with_item_verdicts
from annotation.task_types import TaskType
from core.errors import Refusal
from core.spreadsheet import spreadsheet_safe
from llm_judges.models import JudgeResult
from llm_judges.selectors import judge_results_for_export, preselections_shown
from projects.models import Membership, Project

FORMATS = ("jsonl", "csv")
CODERS = ("humans", "judges", "all")
CHUNK = 2000

JUDGE_COLUMNS = (
    "judge",
    "judge_kind",  # llm / nli / embedding
    "judge_model",
    "judge_prompt_name",
    "judge_prompt_version",
    "judge_prompt_fingerprint",
    "judge_setting",
    "judge_presentation",  # blank: as annotators see it; "reversed": ranking position bias
    "judge_run_id",
    "judge_outcome",  # ok / unparseable / failed / not_run (the run's budget was reached)
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
    if coders in ("humans", "all"):
        yield from _human_rows(project, task_type, with_judges=coders == "all", raw=raw)
    if coders in ("judges", "all"):
        yield from _judge_rows(project, task_type, raw=raw)


def _judge_columns(raw: bool) -> dict[str, Any]:
    empty: dict[str, Any] = dict.fromkeys(JUDGE_COLUMNS)
    if raw:
        empty["judge_raw_reply"] = None
    return empty


def _human_rows(
    project: Project, task_type: TaskType, *, with_judges: bool, raw: bool
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
            **({"coder_kind": "human", "coder": pseudonym} if with_judges else {}),
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
            **dict.fromkeys(HUMAN_ONLY),
            "judge": judge.name,
            "judge_kind": judge.kind,
            "judge_model": judge.model,
            # the run's prompt template (the task type's shipped one is named after it)
            "judge_prompt_name": run.prompt.name if run and run.prompt else project.task_type,
            "judge_prompt_version": result.prompt_version,
            "judge_prompt_fingerprint": run.prompt_fingerprint if run else None,
            "judge_setting": result.setting,
            "judge_presentation": result.presentation,
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
    taken from one stored answer, a human's or a judge's. No answer anywhere: no columns."""
    annotation = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item")
        .order_by("id")
        .first()
    )
    if annotation is not None:
        parts = task_type.export_rows(annotation.item, annotation)
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
