"""The questionnaire task type: survey questions, defined in the project config, asked over the
configured fields of each item (see the package docstring)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import gettext_noop
from rest_framework import serializers

from annotation.task_types import PayloadError, PreparedItem, TaskType, register
from studies.label_studio import label_studio_exports

from .defaults import translated_defaults
from .label_studio import read_label_studio_annotations, read_label_studio_tasks
from .serializers import (
    PREFER_FIRST,
    PREFER_SECOND,
    QuestionAnswerField,
    QuestionnaireAnswerSerializer,
    QuestionnaireConfigSerializer,
    QuestionnairePayloadSerializer,
    project_config,
)

MAX_FIELD_LENGTH = 100_000
HEADLINE_FIELDS = ("prompt", "question", "title", "text", "claim")


def _label_studio() -> Any:
    """The Label Studio export module, imported when an export runs (it uses the studies
    services, which import the task-type registry this module fills)."""
    from . import label_studio_io

    return label_studio_io


def measured_questions(config: Mapping[str, Any]) -> dict[str, str]:
    """question id -> agreement distance, for the questions that have one (not free text)."""
    try:
        questions = project_config(config)["questions"]
    except serializers.ValidationError:
        return {}
    return {q["id"]: q["distance"] for q in questions if q["distance"]}


def _value_text(question: dict, value: Any) -> str:
    """One answer value as a reader sees it (an option's label, a Likert point's label…)."""
    kind = question["kind"]
    if value is None:
        return "–"
    if kind == "single":
        labels = {o["value"]: o["label"] for o in question["options"]}
        return labels.get(value, str(value))
    if kind == "multiple":
        labels = {o["value"]: o["label"] for o in question["options"]}
        return ", ".join(labels.get(v, str(v)) for v in value) or "none"
    if kind == "likert":
        points = question["points"]
        return f"{value} {points[value - 1]}" if 1 <= value <= len(points) else str(value)
    if kind == "pairwise":
        first, second = question["fields"]
        return {PREFER_FIRST: f"{first} better", PREFER_SECOND: f"{second} better"}.get(
            value, "tie"
        )
    if kind == "text":
        return f"“{value}”"
    return str(value)


@register
class Questionnaire(TaskType):
    slug = "questionnaire"
    name = gettext_noop("Questionnaire (survey questions)")  # translated where annotators read it
    payload_serializer = QuestionnairePayloadSerializer
    answer_serializer = QuestionnaireAnswerSerializer
    config_serializer = QuestionnaireConfigSerializer
    # The default questionnaire's measured questions; a project's own come from measures_for.
    measures = {"preference": "ordinal", "helpfulness": "ordinal"}
    agreement_basis = gettext_noop("every question's answer, free text included")
    export_item_fields = frozenset()  # export_rows reads only the project's questions
    label_studio = True
    readers = {"label-studio": read_label_studio_tasks}
    annotation_readers = {"label-studio": read_label_studio_annotations}
    export_formats = label_studio_exports(_label_studio)

    def annotator_config(self, config: Mapping[str, Any]) -> dict:
        """The default questionnaire's texts in the annotator's language (defaults.py)."""
        return translated_defaults(super().annotator_config(config))

    # --- import -------------------------------------------------------------------------------

    def import_label_studio(self, **options: Any) -> Any:
        """Questions from the labeling config, tasks as items, answers of external coders
        (``label_studio_io.import_label_studio``)."""
        return _label_studio().import_label_studio(**options)

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """Check that the record has every configured field as text."""
        for field in config["fields"]:
            name = field["name"]
            value = payload.get(name)
            if value is None or value == "":
                raise PayloadError("this field is shown to annotators and is missing", field=name)
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise PayloadError("must be a text", field=name)
            if len(str(value)) > MAX_FIELD_LENGTH:
                raise PayloadError(f"is longer than {MAX_FIELD_LENGTH} characters", field=name)
        return [
            PreparedItem(
                external_id=payload["id"],
                payload=payload,
                prepared={},
                gold=None,
                group=str(payload.get("group") or ""),
                kind=payload.get("kind", "regular"),
            )
        ]

    def external_answer_fields(self, config: Mapping[str, Any]) -> dict[str, serializers.Field]:
        """One field per configured question (an outside source may answer only some)."""
        try:
            questions = project_config(config)["questions"]
        except serializers.ValidationError:
            return {}
        return {q["id"]: QuestionAnswerField(q) for q in questions}

    # --- annotation ---------------------------------------------------------------------------

    def presentation(self, item: Any, *, config: Mapping[str, Any], flipped: bool) -> dict:
        """Which of each pairwise question's two fields comes first (left, or above). Flipped,
        the two fields of every pairwise question trade places on the page and its choices are
        listed the other way round; the answer keeps its meaning (-1: the question's first
        field is better). ``fields`` is the fields' order on the page, ``first_shown`` each
        pairwise question's field shown first. {} without pairwise questions."""
        try:
            questionnaire = project_config(config)
        except serializers.ValidationError:
            return {}
        pairs = [q for q in questionnaire["questions"] if q["kind"] == "pairwise"]
        if not pairs:
            return {}
        order = [f["name"] for f in questionnaire["fields"]]
        if flipped:
            for question in pairs:
                first, second = (order.index(name) for name in question["fields"])
                if first < second:
                    order[first], order[second] = order[second], order[first]
        return {
            "flipped": flipped,
            "fields": order,
            "first_shown": {q["id"]: min(q["fields"], key=order.index) for q in pairs},
        }

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """The configured fields' texts, by name, and their order on the page (the assignment's
        presentation; without one, the config's order); nothing else of the record (provenance
        such as the system behind a response stays hidden)."""
        raw = getattr(getattr(item, "project", None), "config", None)
        config = project_config(raw)
        presented = getattr(assignment, "presentation", None) or self.presentation(
            item, config=raw or {}, flipped=False
        )
        names = [f["name"] for f in config["fields"]]
        order = presented.get("fields")
        if not isinstance(order, list) or sorted(order) != sorted(names):
            order = names
        return {
            "fields": {f["name"]: str(item.payload.get(f["name"], "")) for f in config["fields"]},
            "order": order,
            "first_shown": presented.get("first_shown") or {},
        }

    def headline(self, payload: Mapping[str, Any]) -> str:
        """The record's ``prompt`` (or ``question``, ``title``, ``text``, ``claim``) when it has
        one; otherwise nothing. The hook sees the payload only, not which fields the project
        shows, so it never guesses: another field might be hidden provenance."""
        for name in HEADLINE_FIELDS:
            value = payload.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return ""

    def measures_for(self, config: Mapping[str, Any]) -> Mapping[str, str]:
        """One agreement figure per question that declares a distance."""
        return measured_questions(config)

    def config_change_problem(self, *, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
        """A question that has answers keeps its kind (a Likert answer is not a choice)."""
        kinds = {q["id"]: q["kind"] for q in before.get("questions", [])}
        for question in after.get("questions", []):
            was = kinds.get(question["id"])
            if was is not None and was != question["kind"]:
                return (
                    f"config.questions: the question {question['id']!r} is a {was} question "
                    f"and has answers, so it cannot become a {question['kind']} question; add "
                    "a new question instead."
                )
        return ""

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        """Each question's answer after its id and a colon (the page shows the questions
        themselves): "3: 3", never "3 3", where a question's id is a number."""

        def text(value: Any) -> str:
            if value is None:
                return "–"
            if isinstance(value, list):
                return ", ".join(map(str, value)) or "none"
            return f"“{value}”" if isinstance(value, str) and " " in value else str(value)

        return " · ".join(f"{ident}: {text(value)}" for ident, value in answer.items())

    # --- export and demo ----------------------------------------------------------------------

    def export_row(self, item: Any, annotation: Any) -> dict:
        """One row per annotation: every question's answer under its id."""
        return dict(annotation.answer)

    def export_rows(self, item: Any, annotation: Any) -> list[dict]:
        """One row per question: its id, kind and distance, the answer as stored and as text."""
        return self.exporter(getattr(item, "project", None))(item, annotation)

    def exporter(self, project: Any) -> Callable[[Any, Any], list[dict]]:
        """The rows of one export: the project's questions are validated here, once per export
        (issue 34: validating them for every row made a 100k-answer export ~1k rows/s)."""
        questions = [
            (q, {"question": q["id"], "kind": q["kind"], "distance": q["distance"]})
            for q in project_config(getattr(project, "config", None))["questions"]
        ]

        def export_rows(item: Any, annotation: Any) -> list[dict]:
            answer = annotation.answer or {}
            return [
                {
                    **fixed,
                    "answer": answer.get(q["id"]),
                    "answer_text": _value_text(q, answer.get(q["id"])),
                }
                for q, fixed in questions
            ]

        return export_rows

    def example_files(self) -> dict[str, str]:
        """Beside JSON Lines and CSV, the demo item as a Label Studio export's task with one
        annotation (the item import reads its data; ``import_label_studio`` its answers too)."""
        payload = self.demo_payload()
        task = {
            "id": 1,
            "data": {k: v for k, v in payload.items() if k != "id"},
            "annotations": [
                {
                    "id": 1,
                    "completed_by": 1,
                    "result": [
                        {
                            "from_name": "preference",
                            "to_name": "response_a,response_b",
                            "type": "pairwise",
                            "value": {"selected": "left"},
                        }
                    ],
                    "was_cancelled": False,
                    "lead_time": 12.5,
                    "created_at": "2024-05-01T12:00:00Z",
                }
            ],
            "predictions": [],
        }
        return {
            **super().example_files(),
            "label-studio": json.dumps([task], ensure_ascii=False, indent=1) + "\n",
        }

    def demo_payload(self) -> dict:
        return {
            "id": "demo-q-1",
            "prompt": "Is it safe to take ibuprofen with a cold?",
            "response_a": "For most adults, **yes**: ibuprofen eases aches and fever. Take it "
            "with food and avoid it if you have stomach ulcers or kidney disease.",
            "response_b": "Ibuprofen cures colds faster.",
            "system_a": "demo-careful",
            "system_b": "demo-overconfident",
        }
