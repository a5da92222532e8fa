"""Judge prompts and parsers of task types whose tests have not moved to tests/task_types/<slug>/
(on their demo items, prepared exactly as an import prepares them)."""

import json
from types import SimpleNamespace

import pytest

from annotation import task_types
from llm_judges import prompts
from llm_judges.prompts import Unparseable


def demo(slug: str, config: dict | None = None, **overrides):
    task_type = task_types.get(slug)
    clean = task_type.validate_config(config or {})
    payload = task_type.validate_payload({**task_type.demo_payload(), **overrides})
    prepared = task_type.prepare(dict(payload), config=clean)[0]
    return SimpleNamespace(
        payload=prepared.payload,
        prepared=prepared.prepared,
        gold=prepared.gold,
        project=SimpleNamespace(config=config or {}),
    )


# --- stance --------------------------------------------------------------------------------------


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
        ('{"reasoning": "It says no.", "agreement": "Disagree", "unsure": false}', ("disagree", False)),
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
    assert answer["sentences"][0] == {"index": targets[0]["index"], "label": "agree", "not_sure": False}
    assert {s["label"] for s in answer["sentences"][1:]} == {"neutral"}


def test_stance_nli_uses_the_top_sentences_when_the_response_is_long():
    sentence = "Vitamin C is studied in many trials of different sizes and designs. "
    item = demo("stance", response="Vitamin C does not prevent colds. " + sentence * 40)
    premise = prompts.get("stance").pairs(item, "v1")[0][0]
    assert len(premise.split()) < len(" ".join(item.prepared["sentences"]).split())




# --- argument structure --------------------------------------------------------------------------


def test_argument_structure_edit_reply_must_pass_the_well_formedness_check():
    item = demo("argument_structure")
    prompt = prompts.get("argument_structure")
    text = prompt.messages(item, "v1")[1]["content"]
    assert "E1: The plant employed 2,400 of the town's 5,000 workers." in text
    assert "A draft structure to revise: (E1, E2) -> E3; (E3, E4) -> E5 -> claim" in text
    good = '{"reasoning": "r", "structure": "(E1, E2) -> E3; (E3, E4) -> E5 -> claim"}'
    answer = prompt.parse(good, item)
    assert answer["structure_text"] == "(E1, E2) -> E3; (E3, E4) -> E5 -> claim"
    assert "E5->claim" in answer["edges"]
    with pytest.raises(Unparseable, match="steps"):  # E4 and E5 unused, E3 leads nowhere
        prompt.parse('{"structure": "(E1, E2) -> E3"}', item)
    with pytest.raises(Unparseable, match="cannot be read"):
        prompt.parse('{"structure": "E1 -> -> claim"}', item)


def test_argument_structure_review_replies_follow_the_items_mode():
    prompt = prompts.get("argument_structure")
    compare = demo("argument_structure", config={"mode": "review"})
    assert compare.prepared["review"] == "compare"
    assert "Structure A:" in prompt.messages(compare, "v1")[1]["content"]
    answer = prompt.parse('{"validity_a": true, "validity_b": false, "preference": "a"}', compare)
    generated = "A" if compare.prepared["order"][0] == "generated" else "B"
    assert answer["outcome"] == ("win" if generated == "A" else "lose")

    single = demo("argument_structure", config={"mode": "review"}, reference_structure=None)
    assert single.prepared["review"] == "filter"
    reply = '{"faithfulness": true, "fluency": "yes", "validity": false, "decision": "discard"}'
    assert prompt.parse(reply, single) == {
        "decision": "discard", "faithfulness": True, "fluency": True, "validity": False
    }
    with pytest.raises(Unparseable):
        prompt.parse('{"faithfulness": true, "fluency": true, "validity": true, "decision": "keep"}', single)
