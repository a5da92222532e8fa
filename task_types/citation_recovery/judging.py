"""Citation recovery judges (Xing, Baldwin & Lau): which explanation sentences should cite the
masked evidence passage?

The judge sees exactly what an annotator sees (the task type's ``display()``: claim, veracity
label, evidence with the masked passage marked, the explanation sentences after masking) and, as
in the paper's protocol, answers with the 1-based numbers of the sentences that should cite the
masked passage, or -1 when none should. Answers are stored in the task type's answer shape
(0-based ``sentences`` plus ``none``); judges do not rate helpfulness.

- LLM: the prompt below, structured output requested as a JSON schema whose numbers are limited
  to -1 and 1..n, and the reply validated anyway.
- NLI: the masked evidence (premise) is paired with every sentence (hypothesis, citation markers
  removed); the sentences the model labels entailment are kept.
- Embedding: the same pairs; sentences whose cosine similarity reaches the threshold are kept.

The setting of a result is the project's masking mode ("sample" or "full"); items already carry
their masking, so the setting only keeps the two studies' results apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from annotation import task_types
from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    Unparseable,
    extract_json,
    json_schema_format,
    register,
    reply_body,
)

NONE = -1

V1 = PromptVersion(
    system=(
        "You are a careful fact-checking annotator. You check whether the sentences of a "
        "fact-checking explanation are attributed to the right evidence."
    ),
    user=(
        "A fact-checking explanation justifies the veracity of a claim and cites numbered "
        "evidence passages with markers such as [3]. The citation markers of one evidence "
        "passage, the masked evidence below, were removed from the explanation.\n"
        "Find the explanation sentences that should cite the masked evidence passage, i.e. the "
        "sentences whose content comes from it. There may be none, one or several.\n\n"
        "Claim: {claim}\n"
        "Veracity: {label}\n\n"
        "Masked evidence passage:\n{evidence}\n\n"
        "Explanation sentences:\n{sentences}\n\n"
        'Answer with a JSON object {{"sentences": [...]}} that lists the numbers of the '
        "sentences that should cite the masked evidence passage, or "
        '{{"sentences": [-1]}} if no sentence should cite it.'
    ),
    note="The paper's protocol: masked evidence and numbered sentences in, sentence numbers or -1 out.",
)

VERSIONS = {"v1": V1}


def _shown(item: Any) -> dict:
    return task_types.get("citation_recovery").display(item)


def _target_text(shown: dict) -> str:
    for evidence in shown["evidence"]:
        if evidence["target"]:
            return evidence["text"]
    if shown.get("rating_only"):
        raise ValueError(
            "a rating-only item (the explanation cites no evidence): nothing to attribute"
        )
    raise ValueError("the item has no masked evidence passage")


PLACEHOLDERS = {
    "claim": "the claim",
    "label": "its veracity label",
    "evidence": "the masked evidence passage",
    "sentences": "the explanation sentences after masking, numbered 1., 2., …",
    "sentence_count": "how many sentences there are",
}


def fields(item: Any) -> dict:
    """The placeholders' values for one item: what an annotator sees."""
    shown = _shown(item)
    return {
        "claim": shown["claim"],
        "label": shown["label"],
        "evidence": _target_text(shown),
        "sentences": "\n".join(
            f"{n}. {sentence}" for n, sentence in enumerate(shown["sentences"], 1)
        ),
        "sentence_count": len(shown["sentences"]),
    }


def response_format(item: Any, version: str) -> dict:
    count = len(item.prepared["sentences"])
    return json_schema_format(
        "citation_recovery",
        {
            "type": "object",
            "properties": {
                "sentences": {
                    "type": "array",
                    "description": "1-based numbers of the sentences that should cite the masked "
                    "evidence, or [-1] when none should.",
                    "items": {"type": "integer", "enum": [NONE, *range(1, count + 1)]},
                }
            },
            "required": ["sentences"],
            "additionalProperties": False,
        },
    )


# The documented bare answer, as the whole reply: "2, 4", "[2 and 4]" or "-1" — only numbers and
# separators, nothing else (not "Clinton 16 [2] years").
_BARE_NUMBERS = re.compile(r"\[?\s*-?\d+(?:\s*(?:,|and|\s)\s*-?\d+)*\s*\]?\s*\.?")


def _numbers(text: str) -> list:
    """The sentence numbers of a reply that is, as a whole, the JSON object the schema asks for,
    a JSON list or number, or the bare list of numbers (a fence around either allowed)."""
    try:
        value = extract_json(text)
    except Unparseable:
        body = reply_body(text)
        if _BARE_NUMBERS.fullmatch(body):
            return [int(n) for n in re.findall(r"-?\d+", body)]
        raise Unparseable("the reply is neither JSON nor a list of sentence numbers") from None
    if isinstance(value, dict):
        if "sentences" not in value:
            raise Unparseable("the JSON object has no 'sentences' field")
        value = value["sentences"]
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise Unparseable("'sentences' is not a list")
    return value


def parse(text: str, item: Any) -> dict:
    """The answer in a reply, validated against the item: numbers are 1..n, or -1 alone.

    An empty list is read as "none" (some servers drop the -1); duplicates are merged.
    """
    values = _numbers(text)
    count = len(item.prepared["sentences"])
    numbers = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Unparseable(f"{value!r} is not a sentence number")
        numbers.append(value)
    chosen = sorted(set(numbers))
    if chosen in ([], [NONE]):
        return {"sentences": [], "none": True}
    if NONE in chosen:
        raise Unparseable("-1 (no sentence) is mixed with sentence numbers")
    wrong = [n for n in chosen if not 1 <= n <= count]
    if wrong:
        raise Unparseable(f"sentence {wrong[0]} does not exist (the explanation has {count})")
    return {"sentences": [n - 1 for n in chosen], "none": False}


def pairs(item: Any, version: str) -> list[tuple[str, str]]:
    from .citations import remove_all_citations  # lazily: annotation.text loads spaCy

    shown = _shown(item)
    premise = _target_text(shown)
    return [(premise, remove_all_citations(sentence)) for sentence in shown["sentences"]]


def _answer(selected: list[int]) -> dict:
    return {"sentences": selected, "none": not selected}


def from_nli(
    item: Any, labels: Sequence[str], probabilities: Sequence[Mapping[str, float]]
) -> dict:
    return _answer([i for i, label in enumerate(labels) if label == "entailment"])


def from_similarity(item: Any, similarities: Sequence[float], threshold: float) -> dict:
    return _answer([i for i, score in enumerate(similarities) if score >= threshold])


def setting(config: Mapping[str, Any]) -> str:
    return str(config.get("masking") or "sample")


PROMPT = register(
    JudgePrompt(
        task_type="citation_recovery",
        versions=VERSIONS,
        default_version="v1",
        response_format=response_format,
        parse=parse,
        pairs=pairs,
        from_nli=from_nli,
        from_similarity=from_similarity,
        setting=setting,
        answer_fields=("sentences", "none"),
        placeholders=PLACEHOLDERS,
        fields=fields,
    )
)
