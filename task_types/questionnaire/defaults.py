"""The default questionnaire in the annotator's language.

A project that names no fields or questions gets the defaults (``serializers.DEFAULT_FIELDS``,
``DEFAULT_QUESTIONS``, and a pairwise question's labels made from its fields' labels); they are
written into the project's config in English when it is saved. Annotators read them translated:
a text still equal to its default is shown from this package's catalogue, while anything the
researchers wrote or changed is shown as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext, pgettext

from .serializers import DEFAULT_FIELDS, DEFAULT_QUESTIONS

_DEFAULT_FIELD_LABELS = {f["name"]: f["label"] for f in DEFAULT_FIELDS}
_DEFAULT_QUESTIONS = {q["id"]: q for q in DEFAULT_QUESTIONS}


def _field_label(field: Mapping[str, Any]) -> str:
    label = field.get("label", "")
    return (
        gettext(label) if label and _DEFAULT_FIELD_LABELS.get(field.get("name")) == label else label
    )


def _pairwise_labels(labels: list[str], pair: list[str], english: dict, shown: dict) -> list[str]:
    """The default labels ("X is better", "Tie", "Y is better") translated, others as written."""
    first, second = (english.get(name, name) for name in pair)
    if labels != [f"{first} is better", "Tie", f"{second} is better"]:
        return labels
    better = gettext("%(field)s is better")
    return [
        better % {"field": shown.get(pair[0], first)},
        pgettext("pairwise", "Tie"),
        better % {"field": shown.get(pair[1], second)},
    ]


def _question(question: Mapping[str, Any], english: dict, shown: dict) -> dict:
    translated = dict(question)
    default = _DEFAULT_QUESTIONS.get(question.get("id"), {})
    if default.get("kind") == question.get("kind"):
        if question.get("prompt") == default.get("prompt"):
            translated["prompt"] = gettext(default["prompt"])
        if "points" in default and question.get("points") == default["points"]:
            translated["points"] = [gettext(point) for point in default["points"]]
    if question.get("kind") == "pairwise" and isinstance(question.get("labels"), list):
        translated["labels"] = _pairwise_labels(
            question["labels"], question["fields"], english, shown
        )
    return translated


def translated_defaults(config: Mapping[str, Any]) -> dict:
    """``config`` with every default text still in it in the current language."""
    fields = config.get("fields") or []
    english = {f["name"]: f.get("label") or f["name"] for f in fields}
    shown_fields = [{**f, "label": _field_label(f)} for f in fields]
    shown = {f["name"]: f["label"] or f["name"] for f in shown_fields}
    questions = [_question(q, english, shown) for q in config.get("questions") or []]
    return {**config, "fields": shown_fields, "questions": questions}
