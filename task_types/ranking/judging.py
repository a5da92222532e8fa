"""Ranking judges (Atanasova et al. 2020; ReproHum #0087-01): a rank per output for each of the
project's criteria.

The judge sees what annotators see: the claim, its veracity label and the outputs as "Output A,
B, C…" in a blind, shuffled order (never the system names), plus the criteria and their
definitions. Ranks follow the task type's convention, standard competition ranking (ties share
the best rank, the next rank counts every output before it: 1, 1, 3). A reply in dense form
(1, 1, 2) expresses the same ordering and is read as 1, 1, 3; ranks outside 1..k are refused.
LLM only: NLI and similarity say nothing about a ranking.
"""

from __future__ import annotations

import json
from typing import Any

from annotation import task_types
from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    Unparseable,
    json_schema_format,
    object_reply,
    register,
)

from .ranks import competition_ranks, output_letter
from .serializers import project_criteria

V1 = PromptVersion(
    system="You are an expert evaluator of fact-checking explanations.",
    user=(
        "Claim: {claim}\n"
        "Veracity: {label}\n\n"
        "Explanations of this fact check:\n{outputs}\n\n"
        "Rank the explanations on each criterion below, 1 for the best. Explanations of equal "
        "quality share a rank, and the next rank counts every explanation before it (for three "
        "explanations with a tie for first: 1, 1, 3).\n{criteria}\n\n"
        "Answer with a JSON object with one entry per criterion, each mapping every output "
        "letter to its rank, e.g. {example}."
    ),
    note="Ranking with ties per criterion, standard competition ranks.",
)

VERSIONS = {"v1": V1}


def _criteria(item: Any) -> list[dict]:
    project = getattr(item, "project", None)
    return project_criteria(getattr(project, "config", None))


REVERSED = "reversed"


def _shown(item: Any, presentation: str) -> dict:
    """What annotators see, in the reviewers' (annotator-less) order; reversed when the item is
    judged in the reversed presentation (position bias: the same outputs, the last shown first,
    so "Output A" is another output)."""
    shown = task_types.get("ranking").display(item, assignment=None)
    if presentation == REVERSED:
        shown = {**shown, "outputs": list(reversed(shown["outputs"]))}
    return shown


def _letters(shown: dict) -> list[str]:
    return [output_letter(i) for i in range(len(shown["outputs"]))]


PLACEHOLDERS = {
    "claim": "the claim",
    "label": "its veracity label",
    "outputs": "the outputs as 'Output A:', 'Output B:'… with their texts, blind and shuffled",
    "criteria": "the project's criteria, one per line with their definitions",
    "example": "an example answer for the first criterion (letter -> rank)",
}


def fields(item: Any, *, presentation: str = "") -> dict:
    """The placeholders' values for one item, in ``presentation``."""
    shown = _shown(item, presentation)
    letters = _letters(shown)
    criteria = _criteria(item)
    example = {c["name"]: {letter: n for n, letter in enumerate(letters, 1)} for c in criteria[:1]}
    return {
        "claim": shown["claim"],
        "label": shown["label"],
        "outputs": "\n\n".join(
            f"Output {letter}:\n{output['text']}"
            for letter, output in zip(letters, shown["outputs"], strict=True)
        ),
        "criteria": "\n".join(f"- {c['name']}: {c['definition']}" for c in criteria),
        "example": json.dumps(example),
    }


def response_format(item: Any, version: str, *, presentation: str = "") -> dict:
    letters = _letters(_shown(item, presentation))
    names = [c["name"] for c in _criteria(item)]
    ranks = {
        "type": "object",
        "properties": {
            letter: {"type": "integer", "enum": list(range(1, len(letters) + 1))}
            for letter in letters
        },
        "required": letters,
        "additionalProperties": False,
    }
    return json_schema_format(
        "ranking",
        {
            "type": "object",
            "properties": {name: ranks for name in names},
            "required": names,
            "additionalProperties": False,
        },
    )


def parse(text: str, item: Any, *, presentation: str = "") -> dict:
    reply = object_reply(text)
    shown = _shown(item, presentation)
    letters = _letters(shown)
    keys = [output["key"] for output in shown["outputs"]]
    by_name = {str(name).strip().lower(): value for name, value in reply.items()}
    ranks: dict[str, dict[str, int]] = {}
    for criterion in (c["name"] for c in _criteria(item)):
        given = by_name.get(criterion.lower())
        if not isinstance(given, dict):
            raise Unparseable(f"no ranks for the criterion {criterion!r}")
        given = {
            str(k).strip().upper().removeprefix("OUTPUT ").strip(): v for k, v in given.items()
        }
        values = []
        for letter in letters:
            value = given.get(letter)
            if isinstance(value, bool) or not isinstance(value, int):
                raise Unparseable(f"{criterion}: output {letter} has no whole-number rank")
            if not 1 <= value <= len(letters):
                raise Unparseable(
                    f"{criterion}: rank {value} of output {letter} is not 1..{len(letters)}"
                )
            values.append(value)
        extra = sorted(set(given) - set(letters))
        if extra:
            raise Unparseable(f"{criterion}: there is no output {extra[0]}")
        ranks[criterion] = dict(zip(keys, competition_ranks(values), strict=True))
    return {"order": keys, "ranks": ranks}


PROMPT = register(
    JudgePrompt(
        task_type="ranking",
        versions=VERSIONS,
        default_version="v1",
        response_format=response_format,
        parse=parse,
        answer_fields=("order", "ranks"),
        placeholders=PLACEHOLDERS,
        fields=fields,
        presentations=(REVERSED,),
    )
)
