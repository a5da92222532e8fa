"""Review pages show each answer as a readable line written by its task type, not raw JSON."""

import pytest

from annotation import task_types


@pytest.mark.parametrize(
    "slug, answer, text",
    [
        (
            "citation_recovery",
            {"sentences": [1, 3], "none": False, "helpfulness": 70},
            "sentences 2, 4 · helpfulness 70",
        ),
        ("citation_recovery", {"sentences": [], "none": True}, "no sentence"),
        (
            "stance",
            {
                "label": "agree",
                "not_sure": False,
                "sentences": [
                    {"index": 4, "label": "neutral", "not_sure": True},
                    {"index": 7, "label": "agree", "not_sure": False},
                ],
            },
            "whole response: agree · sentences: 1 neutral (not sure), 2 agree",
        ),
        (
            "ranking",
            {"ranks": {"Coverage": {"gpt": 2, "llama": 1, "human": 2}}},
            "Coverage: llama 1, gpt 2, human 2",
        ),
        (
            "claim_review",
            {
                "claims": [
                    {"id": "c1", "action": "keep", "agreement": "agree"},
                    {
                        "id": "c2",
                        "action": "revise",
                        "text": "It is 330 m tall.",
                        "agreement": "disagree",
                        "label": "refuted",
                    },
                    {"id": "c3", "action": "remove", "reason": "redundant"},
                    {
                        "id": "new-1",
                        "action": "add",
                        "text": "It is in Paris.",
                        "label": "supported",
                    },
                ]
            },
            "c1 agree · c2 revised to “It is 330 m tall.” → refuted · c3 removed (redundant)"
            " · added “It is in Paris.” (supported)",
        ),
        (
            "argument_structure",
            {"claim": "c", "evidence": [], "steps": [{"premises": ["E1"], "conclusion": "claim"}]},
            "E1 -> claim",
        ),
        (
            "argument_structure",
            {"validity_a": True, "validity_b": False, "preference": "A"},
            "validity_a True · validity_b False · preference A",
        ),
        (
            "questionnaire",
            {"topic": "health", "issues": ["wrong", "vague"], "sure": 70, "why": "Too vague."},
            "topic: health · issues: wrong, vague · sure: 70 · why: “Too vague.”",
        ),
        ("questionnaire", {"issues": [], "why": None}, "issues: none · why: –"),
        ("questionnaire", {"3": 3, "4": "yes"}, "3: 3 · 4: yes"),
    ],
)
def test_answer_text(slug, answer, text):
    assert task_types.get(slug).answer_text(answer) == text


@pytest.mark.parametrize(
    "slug",
    [
        "citation_recovery",
        "stance",
        "ranking",
        "claim_review",
        "argument_structure",
        "questionnaire",
    ],
)
def test_each_source_study_task_type_writes_its_own_answer_line(slug):
    assert type(task_types.get(slug)).answer_text is not task_types.TaskType.answer_text
