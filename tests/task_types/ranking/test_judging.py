"""Ranking's judge prompt and parser, on its demo item (prepared exactly as an import prepares
it): the prompt is blind, replies become standard competition ranks by output key."""

import json

import pytest

from annotation import task_types
from llm_judges import prompts
from llm_judges.prompts import Unparseable
from tests.factories import demo_item


def demo(config: dict | None = None, **overrides):
    return demo_item("ranking", config, **overrides)


def test_ranking_prompt_is_blind_and_lists_the_criteria():
    item = demo()
    text = prompts.get("ranking").messages(item, "v1")[1]["content"]
    for output in item.payload["outputs"]:
        assert output["text"] in text
        assert f"{output['system']}" not in text.replace(output["text"], "")
    assert "- Coverage:" in text and "- Overall:" in text
    assert "Output A:" in text
    schema = prompts.get("ranking").response_format(item, "v1")["json_schema"]["schema"]
    assert schema["required"] == ["Coverage", "Non-redundancy", "Non-contradiction", "Overall"]


def test_ranking_replies_become_standard_competition_ranks_by_output_key():
    item = demo()
    prompt = prompts.get("ranking")
    k = len(item.payload["outputs"])
    letters = [chr(ord("A") + i) for i in range(k)]
    dense_tie = {letters[0]: 1, letters[1]: 1, **{letter: 2 for letter in letters[2:]}}
    reply = {
        name: dense_tie for name in ("Coverage", "Non-redundancy", "Non-contradiction", "Overall")
    }
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
    item = demo()
    k = len(item.payload["outputs"])
    reply = {
        name: {chr(ord("A") + i): i + 1 for i in range(k)}
        for name in ("Coverage", "Non-redundancy", "Non-contradiction", "Overall")
    }
    mutate(reply)
    with pytest.raises(Unparseable, match=reason):
        prompts.get("ranking").parse(json.dumps(reply), item)
