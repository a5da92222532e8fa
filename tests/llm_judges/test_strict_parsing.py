"""Every task type's reply parser is strict (issue 11): the JSON object the schema asks for, or
the documented bare format, as the whole reply (surrounding whitespace and one enclosing ```json
fence allowed); an answer embedded in prose is unparseable. A random model's replies were stored
as answers when the parsers took the first "[" to the last "]" anywhere in the reply."""

import json

import pytest

from annotation import task_types
from llm_judges import prompts
from llm_judges.prompts import Unparseable
from tests.factories import demo_item


def _valid_reply(slug: str, item) -> str:
    """A reply each parser accepts for the task type's demo item."""
    if slug == "citation_recovery":
        return '{"sentences": [1]}'
    if slug == "stance":
        return '{"reasoning": "It says so.", "agreement": "Agree", "unsure": false}'
    if slug == "claim_review":
        return json.dumps(
            {"claims": [{"id": c["id"], "label": "supported"} for c in item.payload["claims"]]}
        )
    if slug == "ranking":
        shown = task_types.get("ranking").display(item, assignment=None)
        letters = [chr(ord("A") + i) for i in range(len(shown["outputs"]))]
        schema = prompts.get("ranking").response_format(item, "v1")["json_schema"]["schema"]
        return json.dumps({name: {letter: 1 for letter in letters} for name in schema["required"]})
    if slug == "questionnaire":
        return '{"preference": 0, "helpfulness": 3}'
    assert slug == "argument_structure"
    return json.dumps({"structure": "(E1, E2) -> E3; (E3, E4) -> E5 -> claim"})


SLUGS = [
    "citation_recovery",
    "stance",
    "claim_review",
    "ranking",
    "argument_structure",
    "questionnaire",
]


def test_every_task_type_with_judges_is_covered():
    assert sorted(p.task_type for p in prompts.all_prompts()) == sorted(SLUGS)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_whole_reply_is_read_with_whitespace_or_a_json_fence_around_it(slug):
    item = demo_item(slug)
    prompt = prompts.get(slug)
    reply = _valid_reply(slug, item)
    expected = prompt.parse(reply, item)
    assert prompt.parse(f"\n  {reply}\n ", item) == expected
    assert prompt.parse(f"```json\n{reply}\n```", item) == expected
    assert prompt.parse(f"  ```\n{reply}```\n", item) == expected


# Refused as a whole reply, not for a field's value: the JSON-only rule, or citation recovery's
# own reading (JSON or a bare list of sentence numbers).
NOT_AN_ANSWER = (
    r"the reply is not a JSON value alone|the reply is neither JSON nor a list of sentence numbers"
)


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize(
    "wrap",
    [
        "Sure! Here is my answer: {reply}",
        "{reply} Hope it helps.",
        "The answer is ```json\n{reply}\n```",
        "```json\n{reply}\n```\nI also think sentence 3.",
        "{reply}{reply}",
        "random words [] more words {reply}",
    ],
)
def test_an_answer_embedded_in_prose_is_unparseable(slug, wrap):
    item = demo_item(slug)
    reply = wrap.format(reply=_valid_reply(slug, item))
    with pytest.raises(Unparseable, match=NOT_AN_ANSWER):
        prompts.get(slug).parse(reply, item)


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("reply", ["random words [] more words", "Clinton 16 [2] years", "[]x"])
def test_garbage_with_brackets_is_unparseable_in_every_task_type(slug, reply):
    with pytest.raises(Unparseable, match=NOT_AN_ANSWER):
        prompts.get(slug).parse(reply, demo_item(slug))


def test_extract_json_takes_only_a_whole_reply():
    assert prompts.extract_json(' {"a": [1]} ') == {"a": [1]}
    assert prompts.extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    for text in ["x {}", "[] y", 'a ```json\n{"a": 1}\n```', "```json\n{} ``` ```{}```"]:
        with pytest.raises(Unparseable, match="the reply is not a JSON value alone"):
            prompts.extract_json(text)
