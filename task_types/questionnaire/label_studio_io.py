"""Label Studio projects in and out of a questionnaire project (the mapping is in
``label_studio``).

:func:`import_label_studio` reads an export (JSON) with its labeling config (XML) into a
questionnaire project, all or nothing: the project takes the questionnaire derived from the
config when it has no items yet (else its questions must be those of the config), the tasks
become items (the generic JSON Lines import), and the annotations and predictions the answers of
external coders (the generic external-annotation import), so that the dashboard counts them.
:func:`export_label_studio` writes a project's items and answers (annotators by pseudonym,
external coders by name) as a Label Studio JSON export, streamed, and :func:`labeling_config`
the questionnaire as a labeling config that the importer reads back.
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

from .label_studio import (
    LEFT,
    RIGHT,
    parse_labeling_config,
    read_export,
    unmapped_lines,
)
from .serializers import PREFER_FIRST, PREFER_SECOND, project_config

SOURCE = "Label Studio"
CHUNK = 500


@dataclass
class LabelStudioImport:
    """What an import of a Label Studio export did, and what it left out."""

    items: int
    annotations: int  # annotators' answers imported
    predictions: int  # predictions imported (as model:<version> coders)
    coders: int
    cancelled: int  # cancelled annotations, left out
    empty: int  # annotations or predictions with no result that maps to a question
    config_replaced: bool
    not_mapped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"Imported {counted(self.items, 'item')}, {counted(self.annotations, 'annotation')} "
            f"and {counted(self.predictions, 'prediction')} by "
            f"{counted(self.coders, 'external coder')} from Label Studio"
        )
        if self.cancelled:
            text += f"; left out {counted(self.cancelled, 'cancelled annotation')}"
        if self.empty:
            entries = counted(self.empty, "annotation or prediction", "annotations or predictions")
            text += f"; left out {entries} with no result that maps to a question"
        return text + "."


def _questions_match(project: Project, wanted: list[dict]) -> str:
    """Why the project's questions differ from the labeling config's ("" when they match)."""
    have = {q["id"]: q["kind"] for q in project_config(project.config)["questions"]}
    for question in wanted:
        kind = have.get(question["id"])
        if kind is None:
            return f"it has no question {question['id']!r}"
        if kind != question["kind"]:
            return f"its {question['id']!r} is a {kind} question, not {question['kind']}"
    return ""


def _set_config(project: Project, questionnaire: dict) -> bool:
    """Give an empty project the questionnaire; check an existing one's questions."""
    if project.task_type != "questionnaire":
        raise ImportFailed(
            "Nothing imported. A Label Studio export goes into a questionnaire project.",
            field="project",
        )
    if not Item.objects.filter(project=project).exists():
        before = project_settings(project=project)
        project.config = project_config(questionnaire)
        project.save(update_fields=["config"])
        settings_version_record(project=project, before=before, via="label-studio import")
        return True
    problem = _questions_match(project, questionnaire["questions"])
    if problem:
        raise ImportFailed(
            f"Nothing imported. The project has items, and its questions are not the labeling "
            f"config's: {problem}. Import into a new questionnaire project.",
            field="labeling_config",
        )
    return False


def _jsonl(records: list[dict]) -> io.StringIO:
    return io.StringIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def import_label_studio(
    *, project: Project, export: str | bytes, labeling_config: str, source: str = SOURCE
) -> LabelStudioImport:
    """Import a Label Studio JSON export (its text) read against its labeling config (XML)
    into ``project``; all or nothing. Raises ``ImportFailed`` naming the task's index and field
    (or the config's problem)."""
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
        tasks = safe_json_loads(export)
        reading = read_export(tasks, config)
    except PayloadError as exc:
        raise ImportFailed(f"Nothing imported. {exc}", field=exc.field or "file") from None
    except ValueError as exc:  # not JSON, or JSON that cannot be stored
        raise ImportFailed(
            f"Nothing imported. The export is not JSON: {exc}", field="file"
        ) from None
    if not reading.items:
        raise ImportFailed("Nothing imported: the export has no tasks.", field="file")
    with transaction.atomic():
        replaced = _set_config(project, config.questionnaire)
        import_items(project=project, stream=_jsonl(reading.items), fmt="jsonl")
        counts = {"coders": 0}
        if reading.answers:  # read again by the annotation import: errors name the task
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

_CONTROL = {
    "single": "Choices",
    "multiple": "Choices",
    "likert": "Rating",
    "slider": "Number",
    "text": "TextArea",
    "pairwise": "Pairwise",
}


def labeling_config(*, project: Project) -> str:
    """The project's questionnaire as a Label Studio labeling config (XML): one ``Text`` per
    field, a ``Header`` with each question's prompt and its control tag."""
    questionnaire = project_config(project.config)
    view = Element("View")
    first = questionnaire["fields"][0]["name"]
    for item_field in questionnaire["fields"]:
        SubElement(view, "Header", value=item_field["label"])
        SubElement(view, "Text", name=item_field["name"], value=f"${item_field['name']}")
    for question in questionnaire["questions"]:
        SubElement(view, "Header", value=question["prompt"])
        tag = SubElement(view, _CONTROL[question["kind"]], name=question["id"], toName=first)
        kind = question["kind"]
        if kind in ("single", "multiple"):
            tag.set("choice", kind)
            for option in question["options"]:
                choice = SubElement(tag, "Choice", value=option["label"])
                if option["label"] != str(option["value"]):
                    choice.set("alias", str(option["value"]))
        elif kind == "likert":
            tag.set("maxRating", str(len(question["points"])))
        elif kind == "slider":
            tag.set("min", "0")
            tag.set("max", "100")
        elif kind == "pairwise":
            tag.set("toName", ",".join(question["fields"]))
    return tostring(view, encoding="unicode") + "\n"


def _result(question: dict, value: Any, to_name: str) -> dict | None:
    """One answer as a Label Studio result (None for an unanswered question, or a tie)."""
    if value is None:
        return None
    kind = question["kind"]
    if kind in ("single", "multiple"):
        chosen = value if kind == "multiple" else [value]
        out: dict[str, Any] = {"choices": [str(v) for v in chosen]}
    elif kind == "likert":
        out = {"rating": value}
    elif kind == "slider":
        out = {"number": value}
    elif kind == "text":
        out = {"text": [value]}
    else:
        selected = {PREFER_FIRST: LEFT, PREFER_SECOND: RIGHT}.get(value)
        if selected is None:
            return None  # Label Studio's Pairwise has no tie
        # to_name: the left object (label-studio-sdk's LabelInterface.validate_region accepts
        # one of the control's toName objects, not the pair).
        out, to_name = {"selected": selected}, question["fields"][0]
    return {
        "from_name": question["id"],
        "to_name": to_name,
        "type": _CONTROL[kind].lower(),
        "value": out,
    }


def _answers(project: Project, item_ids: list[int]) -> dict[int, list[tuple]]:
    """(coder, answer, time spent ms, created at) of the current answers of ``item_ids``:
    annotators by pseudonym, then external coders by ``ext:<name>``."""
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


def _entry(coder: str, spent: int | None, when: str | None, results: list, numbers: dict) -> dict:
    """An annotation (or, for an external coder named ``model:…``, a prediction)."""
    if coder.startswith("ext:model:"):
        return {"model_version": coder.removeprefix("ext:model:"), "result": results}
    number = numbers.setdefault(coder, len(numbers) + 1)
    entry = {
        "id": None,
        "completed_by": number,
        "concord_coder": coder,
        "result": results,
        "was_cancelled": False,
        "created_at": when,
    }
    if spent is not None:
        entry["lead_time"] = spent / 1000
    return entry


def _task(item_id: int, external_id: str, payload: dict, answers: list, context: dict) -> dict:
    questions, to_name, numbers = context["questions"], context["to_name"], context["numbers"]
    task: dict[str, Any] = {
        "id": external_id,
        "data": {k: v for k, v in payload.items() if k != "id"},
        "annotations": [],
        "predictions": [],
    }
    for coder, answer, spent, when in answers:
        results = [
            result
            for question in questions
            if (result := _result(question, (answer or {}).get(question["id"]), to_name))
        ]
        entry = _entry(coder, spent, when, results, numbers)
        if "model_version" in entry:
            task["predictions"].append(entry)
        else:
            context["annotation_ids"] += 1
            entry["id"] = context["annotation_ids"]
            task["annotations"].append(entry)
    return task


def export_label_studio(*, project: Project) -> Iterator[str]:
    """The project as a Label Studio JSON export (a list of tasks), streamed a task at a time:
    each item's data (its payload) with its annotators' and external coders' answers as
    annotations (``completed_by`` numbered per coder in the order met, the coder in
    ``concord_coder``) and external coders named ``model:…`` as predictions."""
    questionnaire = project_config(project.config)
    context = {
        "questions": questionnaire["questions"],
        "to_name": questionnaire["fields"][0]["name"],
        "numbers": {},
        "annotation_ids": 0,
    }
    items = (
        Item.objects.filter(project=project)
        .order_by("position", "id")
        .values_list("id", "external_id", "payload")
    )
    yield "["
    first = True
    rows = items.iterator(chunk_size=CHUNK)
    while chunk := list(islice(rows, CHUNK)):
        answers = _answers(project, [row[0] for row in chunk])
        for item_id, external_id, payload in chunk:
            task = _task(item_id, external_id, payload, answers[item_id], context)
            yield ("\n" if first else ",\n") + json.dumps(task, ensure_ascii=False)
            first = False
    yield "\n]\n"
