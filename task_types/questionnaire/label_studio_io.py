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

from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element, SubElement, tostring

from projects.models import Project
from studies.services.label_studio import (
    ExportNumbers,
    LabelStudioMapping,
    add_entries,
    stream_export,
)

from .label_studio import LEFT, RIGHT, LabelingConfig, parse_labeling_config, read_export
from .serializers import PREFER_FIRST, PREFER_SECOND, project_config


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


def _mismatch(project: Project, config: LabelingConfig) -> str:
    problem = _questions_match(project, config.questionnaire["questions"])
    if not problem:
        return ""
    return (
        f"The project has items, and its questions are not the labeling config's: {problem}. "
        "Import into a new questionnaire project."
    )


MAPPING = LabelStudioMapping(
    task_type="questionnaire",
    parse=parse_labeling_config,
    read=read_export,
    new_config=lambda project, config: project_config(config.questionnaire),
    mismatch=_mismatch,
    items_read_again=False,
)


# the one-step import (studies.services.label_studio), all or nothing, with this mapping
import_label_studio = MAPPING.import_label_studio


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


def _results(answer: dict, questions: list[dict], to_name: str) -> list[dict]:
    return [
        result
        for question in questions
        if (result := _result(question, answer.get(question["id"]), to_name))
    ]


def export_label_studio(*, project: Project) -> Iterator[str]:
    """The project as a Label Studio JSON export (a list of tasks), streamed a task at a time:
    each item's data (its payload) with its annotators' and external coders' answers as
    annotations (``completed_by`` numbered per coder in the order met, the coder in
    ``concord_coder``) and external coders named ``model:…`` as predictions."""
    questionnaire = project_config(project.config)
    questions, to_name = questionnaire["questions"], questionnaire["fields"][0]["name"]
    numbers = ExportNumbers()

    def task_of(row: tuple, answers: list) -> dict:
        _, external_id, payload = row
        task: dict[str, Any] = {
            "id": external_id,
            "data": {k: v for k, v in payload.items() if k != "id"},
            "annotations": [],
            "predictions": [],
        }
        add_entries(
            task=task,
            answers=answers,
            results_of=lambda answer: _results(answer, questions, to_name),
            numbers=numbers,
        )
        return task

    yield from stream_export(project=project, fields=("external_id", "payload"), task_of=task_of)
