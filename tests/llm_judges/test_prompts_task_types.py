"""Judge prompts and parsers of the stance, claim-review, ranking and argument-structure task
types, on their demo items (prepared exactly as an import prepares them)."""

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


# --- claim review --------------------------------------------------------------------------------


def test_claim_review_prompt_lists_each_claim_with_its_evidence_and_not_the_system_label():
    item = demo("claim_review")
    text = prompts.get("claim_review").messages(item, "v1")[1]["content"]
    assert "[1] id c1: The Eiffel Tower was built between 1887 and 1889." in text
    assert "Evidence 1 (Eiffel Tower): Construction began in 1887 and ended in 1889." in text
    assert "[2] id c2: It is 330 metres tall.\n    (no evidence)" in text
    schema = prompts.get("claim_review").response_format(item, "v1")["json_schema"]["schema"]
    assert schema["properties"]["claims"]["items"]["properties"]["id"]["enum"] == ["c1", "c2", "c3"]


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
        ("Construction began in 1887 and ended in 1889.", "The Eiffel Tower was built between 1887 and 1889.")
    ]
    assert prompt.from_nli(item, ["contradiction"], [{}]) == {
        "claims": [{"id": "c1", "action": "keep", "agreement": "disagree", "label": "refuted"}]
    }


# --- ranking -------------------------------------------------------------------------------------


def test_ranking_prompt_is_blind_and_lists_the_criteria():
    item = demo("ranking")
    text = prompts.get("ranking").messages(item, "v1")[1]["content"]
    for output in item.payload["outputs"]:
        assert output["text"] in text
        assert f"{output['system']}" not in text.replace(output["text"], "")
    assert "- Coverage:" in text and "- Overall:" in text
    assert "Output A:" in text
    schema = prompts.get("ranking").response_format(item, "v1")["json_schema"]["schema"]
    assert schema["required"] == ["Coverage", "Non-redundancy", "Non-contradiction", "Overall"]


def test_ranking_replies_become_standard_competition_ranks_by_output_key():
    item = demo("ranking")
    prompt = prompts.get("ranking")
    k = len(item.payload["outputs"])
    letters = [chr(ord("A") + i) for i in range(k)]
    dense_tie = {letters[0]: 1, letters[1]: 1, **{letter: 2 for letter in letters[2:]}}
    reply = {name: dense_tie for name in ("Coverage", "Non-redundancy", "Non-contradiction", "Overall")}
    answer = prompt.parse(json.dumps(reply), item)
    shown = task_types.get("ranking").display(item, assignment=None)
    keys = [o["key"] for o in shown["outputs"]]
    assert answer["order"] == keys
    assert answer["ranks"]["Coverage"] == {keys[0]: 1, keys[1]: 1, **{key: 3 for key in keys[2:]}}


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r.pop("Overall"), "no ranks for the criterion 'Overall'"),
        (lambda r: r["Coverage"].update(A=9), "rank 9 of output A"),
        (lambda r: r["Coverage"].pop("B"), "output B has no whole-number rank"),
        (lambda r: r["Coverage"].update(Z=1), "there is no output Z"),
    ],
)
def test_ranking_replies_with_missing_or_impossible_ranks_are_unparseable(mutate, reason):
    item = demo("ranking")
    k = len(item.payload["outputs"])
    reply = {
        name: {chr(ord("A") + i): i + 1 for i in range(k)}
        for name in ("Coverage", "Non-redundancy", "Non-contradiction", "Overall")
    }
    mutate(reply)
    with pytest.raises(Unparseable, match=reason):
        prompts.get("ranking").parse(json.dumps(reply), item)


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
