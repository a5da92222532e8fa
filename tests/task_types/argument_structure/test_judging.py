"""Judge prompts and reply parsers of the argument-structure task type, on its demo items
(prepared exactly as an import prepares them)."""

import pytest

from llm_judges import prompts
from llm_judges.prompts import Unparseable
from tests.factories import demo_item as demo


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
        "decision": "discard",
        "faithfulness": True,
        "fluency": True,
        "validity": False,
    }
    with pytest.raises(Unparseable):
        prompt.parse(
            '{"faithfulness": true, "fluency": true, "validity": true, "decision": "keep"}', single
        )
