"""The study file's JSON Schema describes a questionnaire's questions (kinds, settings, enums),
not ``"items": {}``: every question ``clean_question`` accepts is valid under it, and the
structural mistakes it refuses are refused by the schema too."""

import copy

import jsonschema
import pytest
from rest_framework import serializers

from studies.study_files import config_json_schema, study_json_schema
from task_types.questionnaire.serializers import (
    DEFAULT_QUESTIONS,
    KINDS,
    clean_question,
    question_json_schema,
)

LABELS = {"response_a": "Response A", "response_b": "Response B"}
GOOD = [
    *DEFAULT_QUESTIONS,
    {"id": "verdict", "kind": "single", "prompt": "Verdict?", "options": ["yes", "no"]},
    {
        "id": "score",
        "kind": "single",
        "prompt": "Score",
        "options": [{"value": 1, "label": "low"}, {"value": 2, "label": "high"}],
        "distance": "ordinal",
    },
    {
        "id": "flaws",
        "kind": "multiple",
        "prompt": "Which flaws?",
        "options": ["a", "b", "c"],
        "min": 0,
        "max": 2,
        "distance": "masi",
    },
    {"id": "sure", "kind": "slider", "prompt": "How sure?", "min_label": "no", "step": 5},
    {"id": "why", "kind": "text", "prompt": "Why?", "max_length": 500, "multiline": False},
]
BAD = [
    ({"id": "x", "kind": "stars", "prompt": "?"}, "kind"),
    ({"id": "X y", "kind": "text", "prompt": "?"}, "id"),
    ({"id": "x", "kind": "likert", "prompt": "?", "points": ["one"]}, "points"),
    ({"id": "x", "kind": "single", "prompt": "?", "options": ["a", "b"], "points": []}, "points"),
    ({"id": "x", "kind": "text", "prompt": "?", "distance": "nominal"}, "distance"),
    ({"id": "x", "kind": "slider", "prompt": "?", "step": 0}, "step"),
    ({"id": "x", "kind": "pairwise", "prompt": "?", "fields": ["response_a"]}, "fields"),
    ({"id": "x", "kind": "single", "prompt": "?"}, "options"),
]


def validator():
    return jsonschema.Draft202012Validator(question_json_schema())


@pytest.mark.parametrize("question", GOOD, ids=lambda q: q["id"])
def test_every_question_the_config_accepts_is_valid_under_the_schema(question):
    clean_question(0, question, LABELS)  # the config's own check accepts it
    validator().validate(question)
    validator().validate(clean_question(0, question, LABELS))  # and its cleaned form too


@pytest.mark.parametrize(("question", "key"), BAD, ids=[key for _, key in BAD])
def test_a_mistake_the_config_refuses_is_refused_by_the_schema(question, key):
    with pytest.raises(serializers.ValidationError) as refused:
        clean_question(0, question, LABELS)
    assert key in str(refused.value.detail)
    assert not validator().is_valid(question)


def test_the_study_file_schema_carries_the_question_schema():
    questions = config_json_schema("questionnaire")["properties"]["questions"]
    assert questions["items"] == question_json_schema()
    kinds = [variant["properties"]["kind"]["const"] for variant in questions["items"]["oneOf"]]
    assert kinds == list(KINDS)
    study = {
        "slug": "q",
        "name": "Q",
        "task_type": "questionnaire",
        "config": {"questions": copy.deepcopy(GOOD)},
    }
    jsonschema.validate(study, study_json_schema())
    study["config"]["questions"][0]["kind"] = "stars"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(study, study_json_schema())
