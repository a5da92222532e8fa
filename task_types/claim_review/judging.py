"""Claim review judges (FaStfact): a verification label with reasoning for each claim, given its
evidence.

The judge verifies every extracted claim on its own (it is not shown the pipeline's label, which
would anchor it): with the claim's evidence passages it chooses from the full scheme (supported,
refuted, conflicting evidence, not enough evidence, irrelevant); a claim shown without evidence
gets the reduced scheme (supported, unsupported, irrelevant). The answer is stored in the task
type's shape: every claim kept, ``agree`` when the judge's label equals the pipeline's (and the
pipeline's label is a verdict one can agree with), otherwise ``disagree`` with the judge's label.
Judges do not revise, remove or add claims.

- LLM: one call per item, all claims at once, JSON ``{"claims": [{"id", "reasoning", "label"}]}``.
- NLI: the claim's evidence (premise) against the claim (hypothesis): entailment → supported,
  contradiction → refuted, neutral → not enough evidence. Claims without evidence get no decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    Unparseable,
    json_schema_format,
    object_reply,
    register,
)

from .labels import can_agree, scheme_of

NLI_TO_LABEL = {"entailment": "supported", "contradiction": "refuted"}

V1 = PromptVersion(
    system="You are a meticulous fact-checker.",
    user=(
        "A system split an answer to a question into atomic claims and searched evidence for "
        "each claim. Verify every claim.\n\n"
        "Question: {question}\n\n"
        "Answer:\n{response}\n\n"
        "Claims:\n{claims}\n\n"
        "For a claim shown with evidence, judge it against that evidence only and choose one "
        "label: supported, refuted, conflicting evidence, not enough evidence, irrelevant. For a "
        "claim without evidence, use your knowledge and choose: supported, unsupported, "
        "irrelevant.\n"
        'Answer with a JSON object {{"claims": [{{"id": "<claim id>", "reasoning": "<one '
        'sentence>", "label": "<label>"}}, ...]}} with one entry per claim.'
    ),
    note="FaStfact verification: one label with reasoning per claim given its evidence.",
)

VERSIONS = {"v1": V1}


def _claim_block(number: int, claim: dict) -> str:
    lines = [f"[{number}] id {claim['id']}: {claim['text']}"]
    if claim.get("evidence"):
        for n, passage in enumerate(claim["evidence"], 1):
            title = f" ({passage['title']})" if passage.get("title") else ""
            lines.append(f"    Evidence {n}{title}: {passage['content']}")
    else:
        lines.append("    (no evidence)")
    return "\n".join(lines)


PLACEHOLDERS = {
    "question": "the question the system answered",
    "response": "the system's answer",
    "claims": "the extracted claims, numbered, each with its id and its evidence passages",
}


def fields(item: Any) -> dict:
    """The placeholders' values for one item (never the pipeline's labels)."""
    claims = item.payload["claims"]
    return {
        "question": item.payload["question"],
        "response": item.payload["response"],
        "claims": "\n".join(_claim_block(n, c) for n, c in enumerate(claims, 1)),
    }


def response_format(item: Any, version: str) -> dict:
    """The reply's schema, as strict as :func:`parse`: exactly one entry per claim (as many
    entries as claims), each claim's label from its own scheme (with evidence: the five labels;
    without: the reduced three). Only two answers that parse differently remain valid here: a
    claim answered twice with another left out (JSON Schema cannot require distinct ids without
    fixing their order), and labels in another case (the parser lowers them)."""
    claims = item.payload["claims"]
    entry = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "reasoning": {"type": "string"},
            "label": {"type": "string"},
        },
        "required": ["id", "reasoning", "label"],
        "additionalProperties": False,
    }
    per_claim = [
        {
            **entry,
            "properties": {
                **entry["properties"],
                "id": {"type": "string", "enum": [c["id"]]},
                "label": {"type": "string", "enum": list(scheme_of(c))},
            },
        }
        for c in claims
    ]
    return json_schema_format(
        "claim_review",
        {
            "type": "object",
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {"anyOf": per_claim} if per_claim else entry,
                    "minItems": len(claims),
                    "maxItems": len(claims),
                }
            },
            "required": ["claims"],
            "additionalProperties": False,
        },
    )


def _decision(claim: dict, label: str) -> dict:
    decision = {"id": claim["id"], "action": "keep"}
    if label == claim.get("system_label") and can_agree(claim):
        decision["agreement"] = "agree"
    else:
        decision.update(agreement="disagree", label=label)
    return decision


def parse(text: str, item: Any) -> dict:
    reply = object_reply(text)
    entries = reply.get("claims")
    if not isinstance(entries, list):
        raise Unparseable("'claims' is not a list")
    originals = {c["id"]: c for c in item.payload["claims"]}
    labels: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise Unparseable("a claim entry is not an object")
        claim_id = str(entry.get("id", ""))
        if claim_id not in originals:
            raise Unparseable(f"{claim_id!r} is not a claim of this item")
        if claim_id in labels:
            raise Unparseable(f"claim {claim_id!r} is answered twice")
        label = str(entry.get("label", "")).strip().lower()
        scheme = scheme_of(originals[claim_id])
        if label not in scheme:
            raise Unparseable(f"claim {claim_id!r}: {label!r} is not one of {', '.join(scheme)}")
        labels[claim_id] = label
    missing = [claim_id for claim_id in originals if claim_id not in labels]
    if missing:
        raise Unparseable(f"claim {missing[0]!r} has no label")
    return {"claims": [_decision(c, labels[c["id"]]) for c in item.payload["claims"]]}


def _with_evidence(item: Any) -> list[dict]:
    return [c for c in item.payload["claims"] if c.get("evidence")]


def pairs(item: Any, version: str) -> list[tuple[str, str]]:
    return [
        ("\n".join(p["content"] for p in claim["evidence"]), claim["text"])
        for claim in _with_evidence(item)
    ]


def from_nli(
    item: Any, labels: Sequence[str], probabilities: Sequence[Mapping[str, float]]
) -> dict:
    claims = _with_evidence(item)
    return {
        "claims": [
            _decision(claim, NLI_TO_LABEL.get(label, "not enough evidence"))
            for claim, label in zip(claims, labels, strict=True)
        ]
    }


PROMPT = register(
    JudgePrompt(
        task_type="claim_review",
        versions=VERSIONS,
        default_version="v1",
        response_format=response_format,
        parse=parse,
        pairs=pairs,
        from_nli=from_nli,
        answer_fields=("claims",),
        placeholders=PLACEHOLDERS,
        fields=fields,
    )
)
