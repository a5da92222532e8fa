"""Claim review's judge prompt and parsers (from tests/llm_judges/test_prompts_task_types.py), on
the task type's demo item prepared exactly as an import prepares it."""

import json

import pytest

from llm_judges import prompts
from llm_judges.prompts import Unparseable
from tests.factories import demo_item as demo


def test_claim_review_prompt_lists_each_claim_with_its_evidence_and_not_the_system_label():
    item = demo("claim_review")
    text = prompts.get("claim_review").messages(item, "v1")[1]["content"]
    assert "[1] id c1: The Eiffel Tower was built between 1887 and 1889." in text
    assert "Evidence 1 (Eiffel Tower): Construction began in 1887 and ended in 1889." in text
    assert "[2] id c2: It is 330 metres tall.\n    (no evidence)" in text
    schema = prompts.get("claim_review").response_format(item, "v1")["json_schema"]["schema"]
    entries = schema["properties"]["claims"]["items"]["anyOf"]
    assert [e["properties"]["id"]["enum"] for e in entries] == [["c1"], ["c2"], ["c3"]]


REPLY = {
    "claims": [
        {"id": "c1", "reasoning": "The passage says so.", "label": "supported"},
        {"id": "c2", "reasoning": "It is about 330 m.", "label": "supported"},
        {"id": "c3", "reasoning": "A matter of taste.", "label": "irrelevant"},
    ]
}


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param({"claims": []}, id="no-claim"),  # issue 32: valid before, the parser refused
        pytest.param({"claims": REPLY["claims"][:2]}, id="a-claim-missing"),
        pytest.param({"claims": [*REPLY["claims"], REPLY["claims"][0]]}, id="one-too-many"),
        pytest.param(
            {"claims": [{**REPLY["claims"][0], "label": "unsupported"}, *REPLY["claims"][1:]]},
            id="a-label-of-the-other-scheme",  # c1 has evidence: five labels, not three
        ),
        pytest.param({"claims": [{**REPLY["claims"][0], "id": "c9"}, *REPLY["claims"][1:]]}),
    ],
)
def test_the_reply_schema_refuses_what_the_parser_refuses(reply):
    item = demo("claim_review")
    prompt = prompts.get("claim_review")
    text = json.dumps(reply)
    with pytest.raises(Unparseable):
        prompt.parse(text, item)
    assert prompts.matches_schema(text, prompt.response_format(item, "v1")) is False


def test_a_reply_the_parser_reads_matches_the_schema():
    item = demo("claim_review")
    prompt = prompts.get("claim_review")
    text = json.dumps(REPLY)
    prompt.parse(text, item)
    assert prompts.matches_schema(text, prompt.response_format(item, "v1")) is True


def test_claim_review_labels_become_agree_or_disagree_with_the_pipeline():
    reply = json.dumps(
        {
            "claims": [
                {"id": "c1", "reasoning": "The passage says so.", "label": "supported"},
                {"id": "c2", "reasoning": "It is about 330 m.", "label": "supported"},
                {"id": "c3", "reasoning": "A matter of taste.", "label": "irrelevant"},
            ]
        }
    )
    answer = prompts.get("claim_review").parse(reply, demo("claim_review"))
    assert answer == {
        "claims": [
            {"id": "c1", "action": "keep", "agreement": "agree"},
            {"id": "c2", "action": "keep", "agreement": "agree"},
            {"id": "c3", "action": "keep", "agreement": "disagree", "label": "irrelevant"},
        ]
    }


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ([{"id": "c1", "label": "supported"}], "'c2' has no label"),
        ([{"id": "c9", "label": "supported"}], "not a claim of this item"),
        ([{"id": "c2", "label": "refuted"}], "'refuted' is not one of supported, unsupported"),
        ([{"id": "c1", "label": "supported"}, {"id": "c1", "label": "refuted"}], "twice"),
    ],
)
def test_claim_review_replies_that_break_the_scheme_are_unparseable(claims, reason):
    with pytest.raises(Unparseable, match=reason):
        prompts.get("claim_review").parse(json.dumps({"claims": claims}), demo("claim_review"))


def test_claim_review_nli_verifies_only_claims_that_have_evidence():
    item = demo("claim_review")
    prompt = prompts.get("claim_review")
    pairs = prompt.pairs(item, "v1")
    assert pairs == [
        (
            "Construction began in 1887 and ended in 1889.",
            "The Eiffel Tower was built between 1887 and 1889.",
        )
    ]
    assert prompt.from_nli(item, ["contradiction"], [{}]) == {
        "claims": [{"id": "c1", "action": "keep", "agreement": "disagree", "label": "refuted"}]
    }
