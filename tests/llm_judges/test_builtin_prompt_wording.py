"""The built-in judge prompts render exactly what they rendered when ``JudgePrompt.messages``
moved into the base class (derived from versions, ``fields`` and ``variant``): the sha256 of
every rendered message list below was taken from the per-task-type ``messages()`` functions it
replaced. A changed byte in any task type's prompt for these items fails here; a new wording
needs a new version key, never an edit (see ``llm_judges/prompts/base.py``)."""

from __future__ import annotations

import hashlib
import json

import pytest

from llm_judges import prompts
from tests.factories import demo_item

# (task type, item config, payload overrides, presentation): the demo item in every mode and
# presentation a task type's prompt distinguishes.
CASES = {
    "argument_structure/edit": ("argument_structure", None, {}, ""),
    "argument_structure/compare": ("argument_structure", {"mode": "review"}, {}, ""),
    "argument_structure/filter": (
        "argument_structure",
        {"mode": "review"},
        {"reference_structure": None},
        "",
    ),
    "citation_recovery": ("citation_recovery", None, {}, ""),
    "claim_review": ("claim_review", None, {}, ""),
    "questionnaire": ("questionnaire", None, {}, ""),
    "ranking": ("ranking", None, {}, ""),
    "ranking/reversed": ("ranking", None, {}, "reversed"),
    "stance": ("stance", None, {}, ""),
}

# sha256 of json.dumps(messages, ensure_ascii=False, sort_keys=True), version "v1".
RENDERED = {
    "argument_structure/edit": ("02a130dc5c8f5f5a73f630b66080a4900b49cfc1e1a4b40865414844b70bb83f"),
    "argument_structure/compare": (
        "3dcd2513ce360bc6c8c831c4bec57061a3cfc2f0a2ed773ad9910192df46b7da"
    ),
    "argument_structure/filter": (
        "fb78a168f1d017046d37a6d7517f9d756c73ff957d7b58436516d99f7c6bd178"
    ),
    "citation_recovery": ("33f0e21f8b768c52cafd3d8ba1ff05d7eb971bde64937a1ee372dcd5451f6da5"),
    "claim_review": ("2eda0127ee77be0512b68b294343c8b43cc0fe9af9c02ac8a1045d4dce3c5332"),
    "questionnaire": ("3e99a13905ce6b2d3df7ca8f0a1a2e637fb89539cc3961addf7278a0e2753a15"),
    "ranking": ("5a4f03083e9856e8f62a9e90fb9a75db4adcc644a96afbd19ff8c0338f9ba809"),
    "ranking/reversed": ("e6d895c3d8c50018142e91500b10893f16b40051c6086ef076ae0f5414903c99"),
    "stance": ("99bd800eeb938d05cba20c273775ecd19d19ca00a2289366071d142d53329de8"),
}


def rendered_digest(case: str, version: str = "v1") -> str:
    slug, config, overrides, presentation = CASES[case]
    item = demo_item(slug, config=config, **overrides)
    messages = prompts.get(slug).messages(item, version, presentation=presentation)
    text = json.dumps(messages, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_builtin_prompt_renders_byte_for_byte_what_it_did(case):
    assert rendered_digest(case) == RENDERED[case]


def test_every_registered_prompt_is_covered():
    assert {slug for slug, *_ in CASES.values()} == set(prompts.prompt_registry.keys())
