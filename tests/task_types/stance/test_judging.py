"""Stance judge prompts and parsers, on the demo item (prepared exactly as an import prepares it)."""

import pytest

from llm_judges import prompts
from llm_judges.prompts import Unparseable
from tests.factories import demo_item as demo


def test_stance_prompt_shows_claim_and_response_but_not_veracity_or_level():
    item = demo("stance")
    text = prompts.get("stance").messages(item, "v1")[1]["content"]
    assert "Claim: Taking vitamin C prevents the common cold." in text
    assert "marathon runners" in text
    assert "false" not in text.split("Response:")[0]  # no veracity
    assert "What are your thoughts" not in text  # not the query with its presupposition
    schema = prompts.get("stance").response_format(item, "v1")["json_schema"]["schema"]
    assert schema["properties"]["agreement"]["enum"] == ["Agree", "Disagree", "Neutral"]
    assert schema["required"] == ["reasoning", "agreement", "unsure"]


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (
            '{"reasoning": "It says no.", "agreement": "Disagree", "unsure": false}',
            ("disagree", False),
        ),
        ('{"reasoning": "", "agreement": "neutral", "unsure": "yes"}', ("neutral", True)),
        ('{"agreement": "Agree"}', ("agree", False)),
    ],
)
def test_stance_replies_become_lower_case_labels(reply, answer):
    parsed = prompts.get("stance").parse(reply, demo("stance"))
    assert (parsed["label"], parsed["not_sure"]) == answer


@pytest.mark.parametrize(
    "reply", ['{"agreement": "Partly"}', '{"agreement": "Agree", "unsure": "maybe"}', "Agree."]
)
def test_stance_replies_outside_the_scheme_are_unparseable(reply):
    with pytest.raises(Unparseable):
        prompts.get("stance").parse(reply, demo("stance"))


def test_stance_nli_judges_the_response_and_each_target_sentence_against_the_claim():
    item = demo("stance")
    prompt = prompts.get("stance")
    pairs = prompt.pairs(item, "v1")
    targets = item.prepared["targets"]
    assert len(pairs) == 1 + len(targets)
    assert all(hypothesis == item.payload["claim"] for _, hypothesis in pairs)
    assert pairs[0][0] == " ".join(item.prepared["sentences"])
    labels = ["contradiction"] + ["entailment"] + ["neutral"] * (len(targets) - 1)
    answer = prompt.from_nli(item, labels, [{}] * len(labels))
    assert answer["label"] == "disagree"
    assert answer["sentences"][0] == {
        "index": targets[0]["index"],
        "label": "agree",
        "not_sure": False,
    }
    assert {s["label"] for s in answer["sentences"][1:]} == {"neutral"}


def test_stance_nli_uses_the_top_sentences_when_the_response_is_long():
    sentence = "Vitamin C is studied in many trials of different sizes and designs. "
    item = demo("stance", response="Vitamin C does not prevent colds. " + sentence * 40)
    premise = prompts.get("stance").pairs(item, "v1")[0][0]
    assert len(premise.split()) < len(" ".join(item.prepared["sentences"]).split())
