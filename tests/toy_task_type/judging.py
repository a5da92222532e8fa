from __future__ import annotations

from typing import Any

from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    json_schema_format,
    object_reply,
    read_bool,
    register,
)

V1 = PromptVersion(
    system="You check simple statements of fact.",
    user='Is this statement true?\n\n{statement}\n\nAnswer with a JSON object {{"answer": true|false}}.',
)


def fields(item: Any) -> dict:
    return {"statement": item.payload["statement"]}


def response_format(item: Any, version: str) -> dict:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "boolean"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    return json_schema_format("yes_no", schema)


def parse(text: str, item: Any) -> dict:
    return {"answer": read_bool(object_reply(text).get("answer"), "answer")}


register(
    JudgePrompt(
        task_type="yes_no",
        versions={"v1": V1},
        default_version="v1",
        response_format=response_format,
        parse=parse,
        placeholders={"statement": "the statement to judge"},
        fields=fields,
        answer_fields=("answer",),
    )
)
