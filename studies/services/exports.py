"""Exporting annotations as JSONL or CSV, streamed in constant memory.

One row per current annotation version: item external id, group, kind, pseudonymous annotator id,
the task type's answer columns (with gold and scores), time spent, timestamps and provenance;
then the annotator's qualification state (``excluded`` when disqualified), the item's majority
answer (by the task type's agreement key), its adjudicated answer, and the judge whose
pre-selection the annotator was shown (empty when none). Task
types may write several rows per annotation (``export_rows``: claim review, ranking), each
repeating those common columns.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from annotation import task_types
from annotation.models import Annotation
from annotation.review import with_item_verdicts
from core.spreadsheet import spreadsheet_safe
from llm_judges.selectors import preselections_shown
from projects.models import Membership, Project

FORMATS = ("jsonl", "csv")
CHUNK = 2000


def _rows(project: Project) -> Iterator[dict]:
    task_type = task_types.get(project.task_type)
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
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": item.external_id,
            "item_kind": item.kind,
            "group": item.group,
            "annotator": pseudonyms.get(
                annotation.annotator_id, f"ann-removed-{annotation.annotator_id}"
            ),
            "version": annotation.version,
            # Active time as the server bounds it, and as the annotator's browser reported it.
            "time_spent_s": round(annotation.time_spent_ms / 1000, 1),
            "reported_time_s": round(annotation.reported_time_ms / 1000, 1),
            "reserved_at": annotation.assignment.reserved_at.isoformat(),
            "submitted_at": annotation.created_at.isoformat(),
            **annotation.verdicts,
            "preselection_shown": preselected.get((item.id, annotation.annotator_id), ""),
        }
        for part in task_type.export_rows(item, annotation):  # several for claims, criteria…
            yield {**row, **part}


def export_jsonl(*, project: Project) -> Iterator[str]:
    for row in _rows(project):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def export_csv(*, project: Project) -> Iterator[str]:
    """CSV with list and dict cells as JSON. The header comes from the first row (every row of a
    task type has the same keys). Text that a spreadsheet would run as a formula gets a leading
    apostrophe (annotators' free text reaches this file); JSONL keeps the exact text."""
    buffer = io.StringIO()
    writer = None
    for row in _rows(project):
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


def export_stream(*, project: Project, fmt: str) -> Iterator[str]:
    if fmt == "jsonl":
        return export_jsonl(project=project)
    if fmt == "csv":
        return export_csv(project=project)
    raise ValueError(f"Unknown export format {fmt!r}; choose jsonl or csv.")
