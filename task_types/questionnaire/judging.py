"""Questionnaire judges: an LLM answers the project's questions about an item, as annotators do.

The judge sees what annotators see: the configured fields (by label) and the questions, with the
options, Likert points and answer ranges written out. Its reply is one JSON object of question id
to answer, checked by the task type's own answer serializer. LLM only.
"""

from __future__ import annotations

import json
from typing import Any

from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    Unparseable,
    json_schema_format,
    object_reply,
    register,
)
from llm_judges.prompts.base import validated_answer

from .serializers import SLIDER_MAX, SLIDER_MIN, project_config

V1 = PromptVersion(
    system="You are a careful annotator answering a research questionnaire.",
    user=(
        "{fields}\n\n"
        "Answer every question below about the text above.\n{questions}\n\n"
        "Answer with one JSON object mapping each question id to its answer, e.g. {example}."
    ),
    note="All questions in one JSON object, by question id.",
)
VERSIONS = {"v1": V1}


def _config(item: Any) -> dict:
    return project_config(getattr(getattr(item, "project", None), "config", None))


def _how(question: dict) -> str:
    kind = question["kind"]
    if kind == "single":
        values = ", ".join(f"{json.dumps(o['value'])} ({o['label']})" for o in question["options"])
        return f"one of {values}"
    if kind == "multiple":
        values = ", ".join(f"{json.dumps(o['value'])} ({o['label']})" for o in question["options"])
        return f"a list of {question['min']} to {question['max']} of {values}"
    if kind == "likert":
        points = ", ".join(f"{n} = {label}" for n, label in enumerate(question["points"], 1))
        return f"a whole number: {points}"
    if kind == "slider":
        ends = ""
        if question["min_label"] or question["max_label"]:
            ends = (
                f" ({SLIDER_MIN} = {question['min_label']}, {SLIDER_MAX} = {question['max_label']})"
            )
        return f"a whole number from {SLIDER_MIN} to {SLIDER_MAX}{ends}"
    if kind == "pairwise":
        first, second = question["fields"]
        tie = ", 0 if they are equally good" if question["allow_tie"] else ""
        return f"-1 if {first} is better, 1 if {second} is better{tie}"
    return "a short text" + ("" if question["required"] else ", or null")


def _schema(question: dict) -> dict:
    kind = question["kind"]
    if kind == "single":
        return {"enum": [o["value"] for o in question["options"]]}
    if kind == "multiple":
        return {"type": "array", "items": {"enum": [o["value"] for o in question["options"]]}}
    if kind == "likert":
        return {"type": "integer", "enum": list(range(1, len(question["points"]) + 1))}
    if kind == "slider":
        return {"type": "integer"}
    if kind == "pairwise":
        return {"type": "integer", "enum": [-1, 0, 1] if question["allow_tie"] else [-1, 1]}
    return {"type": ["string", "null"]}


PLACEHOLDERS = {
    "fields": "the project's configured fields of the item, each with its label",
    "questions": "the questions, with their ids and how to answer each",
    "example": "an example answer object (question id -> answer)",
}


def fields(item: Any) -> dict:
    """The placeholders' values for one item: what an annotator sees."""
    config = _config(item)
    example = {q["id"]: "…" for q in config["questions"][:2]}
    return {
        "fields": "\n\n".join(
            f"{f['label']} ({f['name']}):\n{item.payload.get(f['name'], '')}"
            for f in config["fields"]
        ),
        "questions": "\n".join(
            f"- {q['id']}: {q['prompt']} Answer: {_how(q)}." for q in config["questions"]
        ),
        "example": json.dumps(example),
    }


def response_format(item: Any, version: str) -> dict:
    questions = _config(item)["questions"]
    return json_schema_format(
        "questionnaire",
        {
            "type": "object",
            "properties": {q["id"]: _schema(q) for q in questions},
            "required": [q["id"] for q in questions],
            "additionalProperties": False,
        },
    )


def parse(text: str, item: Any) -> dict:
    reply = object_reply(text)
    if not reply:
        raise Unparseable("the reply answers no question")
    return validated_answer("questionnaire", reply, item)


PROMPT = register(
    JudgePrompt(
        task_type="questionnaire",
        versions=VERSIONS,
        default_version="v1",
        response_format=response_format,
        parse=parse,
        placeholders=PLACEHOLDERS,
        fields=fields,
    )
)
