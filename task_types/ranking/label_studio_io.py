"""Label Studio projects in and out of a ranking project (the mapping is in ``label_studio``).

:func:`import_label_studio` reads an export (JSON) with its labeling config (XML) into a ranking
project, all or nothing: the project takes the criteria derived from the config's Rankers when
it has no items yet (else it must have them), the tasks become items (the generic JSON Lines
import) and the Ranker results the rankings of external coders (the generic external-annotation
import, through ``external_answer``). :func:`export_label_studio` writes a project's items and
rankings as a Label Studio JSON export, and :func:`labeling_config` its criteria as Rankers with
one Bucket per rank, which the importer reads back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any
from xml.etree.ElementTree import Element, SubElement, tostring

from django.conf import settings
from django.db import transaction

from annotation.models import Annotation, ExternalAnnotation, Item, readable_isoformat
from annotation.task_types import PayloadError
from core.json_safety import loads as safe_json_loads
from core.wording import counted
from projects.models import Membership, Project
from projects.services import project_settings, settings_version_record
from studies.services.external_annotations import import_annotations
from studies.services.imports import ImportFailed, import_items

from .label_studio import parse_labeling_config, read_export, unmapped_lines
from .ranks import output_letter
from .serializers import MAX_OUTPUTS, RankingConfigSerializer, project_criteria

SOURCE = "Label Studio"
CHUNK = 500
LIST_NAME, LIST_KEY = "outputs", "items"


@dataclass
class LabelStudioImport:
    """What an import of a Label Studio export did, and what it left out."""

    items: int
    annotations: int
    predictions: int
    coders: int
    cancelled: int
    empty: int
    config_replaced: bool
    not_mapped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"Imported {counted(self.items, 'item')}, {counted(self.annotations, 'ranking')} "
            f"and {counted(self.predictions, 'prediction')} by "
            f"{counted(self.coders, 'external coder')} from Label Studio"
        )
        if self.cancelled:
            text += f"; left out {counted(self.cancelled, 'cancelled annotation')}"
        if self.empty:
            entries = counted(self.empty, "annotation or prediction", "annotations or predictions")
            text += f"; left out {entries} with no Ranker result that maps to a criterion"
        return text + "."


def _set_config(project: Project, wanted: dict) -> bool:
    """Give an empty project the config's criteria; check an existing one has them."""
    if not Item.objects.filter(project=project).exists():
        before = project_settings(project=project)
        serializer = RankingConfigSerializer(data={**(project.config or {}), **wanted})
        serializer.is_valid(raise_exception=True)
        project.config = dict(serializer.validated_data)
        project.save(update_fields=["config"])
        settings_version_record(project=project, before=before, via="label-studio import")
        return True
    have = {str(c.get("name", "")).casefold() for c in (project.config or {}).get("criteria") or []}
    missing = [c["name"] for c in wanted["criteria"] if c["name"].casefold() not in have]
    if missing:
        raise ImportFailed(
            f"Nothing imported. The project has items and no criterion {missing[0]!r} (a "
            "Ranker of the labeling config). Import into a new ranking project.",
            field="labeling_config",
        )
    return False


def import_label_studio(
    *, project: Project, export: str | bytes, labeling_config: str, source: str = SOURCE
) -> LabelStudioImport:
    """Import a Label Studio JSON export read against its labeling config into ``project``;
    all or nothing. Raises ``ImportFailed`` naming the task's index and field."""
    if len(export) > settings.CONCORD_MAX_UPLOAD_BYTES:
        raise ImportFailed("Nothing imported. The export is too large.", code="too_large")
    if isinstance(export, bytes):
        try:
            export = export.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ImportFailed(
                f"Nothing imported. The export is not UTF-8 text (byte {exc.start}).", field="file"
            ) from None
    try:
        config = parse_labeling_config(labeling_config)
        reading = read_export(safe_json_loads(export), config)
    except PayloadError as exc:
        raise ImportFailed(f"Nothing imported. {exc}", field=exc.field or "file") from None
    except ValueError as exc:
        raise ImportFailed(
            f"Nothing imported. The export is not JSON: {exc}", field="file"
        ) from None
    if not reading.items:
        raise ImportFailed("Nothing imported: the export has no tasks.", field="file")
    with transaction.atomic():
        replaced = _set_config(project, config.project_config)
        # read again by the item import's own format: its errors name the task, not a line
        import_items(
            project=project,
            stream=io.StringIO(export),
            fmt="label-studio",
            options={"mapping": labeling_config},
            source=source,
        )
        counts = {"coders": 0}
        if reading.answers:
            counts = import_annotations(
                project=project,
                stream=io.StringIO(export),
                fmt="label-studio",
                source=source,
                options={"mapping": labeling_config},
            )
    return LabelStudioImport(
        items=len(reading.items),
        annotations=len(reading.answers) - reading.predictions,
        predictions=reading.predictions,
        coders=counts["coders"],
        cancelled=reading.cancelled,
        empty=reading.empty,
        config_replaced=replaced,
        not_mapped=list(unmapped_lines(reading, config)),
    )


# --- export --------------------------------------------------------------------------------------


def _most_outputs(project: Project) -> int:
    sizes = Item.objects.filter(project=project).values_list("prepared__keys", flat=True)
    return max((len(keys or []) for keys in sizes.iterator()), default=MAX_OUTPUTS)


def labeling_config(*, project: Project) -> str:
    """The project as a labeling config: the claim as ``Text``, the outputs as a ``List``, each
    criterion a ``Ranker`` (its definition the ``Header`` before it) with one ``Bucket`` per rank
    (``rank_1`` best), so tied outputs share a bucket."""
    criteria = project_criteria(project.config)
    view = Element("View")
    SubElement(view, "Header", value="Claim")
    SubElement(view, "Text", name="claim", value="$claim")
    SubElement(view, "List", name=LIST_NAME, value=f"${LIST_KEY}", title="Outputs")
    levels = _most_outputs(project)
    for criterion in criteria:
        SubElement(view, "Header", value=criterion["definition"])
        ranker = SubElement(view, "Ranker", name=criterion["name"], toName=LIST_NAME)
        for rank in range(1, levels + 1):
            SubElement(ranker, "Bucket", name=f"rank_{rank}", title=f"Rank {rank}")
    return tostring(view, encoding="unicode") + "\n"


def _results(answer: dict, system_of: dict[str, str]) -> list[dict]:
    """One Ranker result per criterion: the outputs (by system) in the bucket of their rank,
    in the order they were shown."""
    order = answer.get("order") or list(system_of)
    results = []
    for criterion, ranks in (answer.get("ranks") or {}).items():
        buckets: dict[str, list[str]] = {}
        for key in sorted(order, key=lambda k: ranks.get(k, 0)):
            buckets.setdefault(f"rank_{ranks[key]}", []).append(system_of[key])
        results.append(
            {
                "from_name": criterion,
                "to_name": LIST_NAME,
                "type": "ranker",
                "value": {"ranker": buckets},
            }
        )
    return results


def _answers(project: Project, item_ids: list[int]) -> dict[int, list[tuple]]:
    """(coder, answer, time spent ms, created at) of the current rankings of ``item_ids``."""
    pseudonyms = dict(
        Membership.objects.filter(project=project).values_list("user_id", "pseudonym")
    )
    found: dict[int, list[tuple]] = {item_id: [] for item_id in item_ids}
    humans = (
        Annotation.objects.filter(item_id__in=item_ids, is_current=True)
        .order_by("item_id", "annotator_id")
        .values_list("item_id", "annotator_id", "answer", "time_spent_ms", "created_at")
    )
    for item_id, user_id, answer, spent, created in humans:
        coder = pseudonyms.get(user_id, f"user-{user_id}")
        found[item_id].append((coder, answer, spent, created.isoformat()))
    external = (
        ExternalAnnotation.objects.filter(item_id__in=item_ids)
        .with_readable_time()
        .order_by("item_id", "coder__name")
        .values_list("item_id", "coder__name", "answer", "time_spent_ms", "annotated_at_text")
    )
    for item_id, name, answer, spent, when in external:
        found[item_id].append((f"ext:{name}", answer, spent, readable_isoformat(when)))
    return found


def _task(row: tuple, answers: list, context: dict) -> dict:
    _, external_id, payload, prepared = row
    outputs = payload.get("outputs") or []
    system_of = {
        key: o["system"] for key, o in zip(prepared.get("keys") or [], outputs, strict=False)
    }
    task: dict[str, Any] = {
        "id": external_id,
        "data": {
            "claim": payload.get("claim", ""),
            "label": payload.get("label", ""),
            LIST_KEY: [
                {"id": o["system"], "title": f"Output {output_letter(n)}", "body": o["text"]}
                for n, o in enumerate(outputs)
            ],
        },
        "annotations": [],
        "predictions": [],
    }
    for coder, answer, spent, when in answers:
        results = _results(answer or {}, system_of)
        if coder.startswith("ext:model:"):
            task["predictions"].append(
                {"model_version": coder.removeprefix("ext:model:"), "result": results}
            )
            continue
        context["annotation_ids"] += 1
        entry = {
            "id": context["annotation_ids"],
            "completed_by": context["numbers"].setdefault(coder, len(context["numbers"]) + 1),
            "concord_coder": coder,
            "result": results,
            "was_cancelled": False,
            "created_at": when,
        }
        if spent is not None:
            entry["lead_time"] = spent / 1000
        task["annotations"].append(entry)
    return task


def export_label_studio(*, project: Project) -> Iterator[str]:
    """The project as a Label Studio JSON export, streamed a task at a time: each item's claim,
    label and outputs (a List of ``{id: system, title, body}``) with every coder's rankings as
    Ranker results (external coders named ``model:…`` as predictions)."""
    context: dict[str, Any] = {"numbers": {}, "annotation_ids": 0}
    items = (
        Item.objects.filter(project=project)
        .order_by("position", "id")
        .values_list("id", "external_id", "payload", "prepared")
    )
    yield "["
    first = True
    rows = items.iterator(chunk_size=CHUNK)
    while chunk := list(islice(rows, CHUNK)):
        answers = _answers(project, [row[0] for row in chunk])
        for row in chunk:
            task = _task(row, answers[row[0]], context)
            yield ("\n" if first else ",\n") + json.dumps(task, ensure_ascii=False)
            first = False
    yield "\n]\n"
