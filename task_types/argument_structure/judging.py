"""Argument structure judges (CheckWhy, Si et al. 2024), one prompt per item mode:

- edit: build (or revise the draft of) the structure linking the evidence to the claim, answered
  in the compact text form ``(E1, E2) -> E3 -> claim``; the reply must pass the same
  well-formedness check as annotators' structures (connected, acyclic, every evidence used, every
  statement reaching the claim);
- review / filter: retain or discard one structure, with faithfulness, fluency and validity;
- review / compare: the validity of structures A and B and the preferred one (A, B or tie); the
  task type maps it to the generated structure's win / tie / lose.

Every parsed reply goes through the task type's own answer serializer, so a judge answer obeys the
rules annotators' answers do. LLM only.
"""

from __future__ import annotations

from typing import Any

from annotation import task_types
from llm_judges.prompts import (
    JudgePrompt,
    PromptVersion,
    Unparseable,
    json_schema_format,
    object_reply,
    read_bool,
    register,
    validated_answer,
)

from .graph import StructureSyntaxError, parse_compact, to_compact
from .task import ArgumentStructure

SYSTEM = "You are an expert in argumentation and causal reasoning."
HEADER = "Claim: {claim}\nCause: {cause}\nEffect: {effect}\nVerdict: {label}\n\nEvidence:\n{evidence}\n\n"
FORM = (
    "Structures are written in a compact form: chains separated by ';', 'A -> B' meaning "
    "statement A supports B, '(E1, E2) -> E3' meaning E1 and E2 jointly support E3, and 'claim' "
    "naming the claim, e.g. (E1, E2) -> E3 -> claim; (E4, E3) -> claim."
)

EDIT = (
    HEADER
    + "{draft}"
    + FORM
    + "\n\nWrite the argument structure that explains why the evidence {label_verb} the claim. "
    "Use every evidence statement, make every statement lead to the claim, and no cycles.\n"
    'Answer with a JSON object {{"reasoning": "<one sentence>", "structure": "<compact form>"}}.'
)
FILTER = (
    HEADER + FORM + "\n\nStructure to review:\n{structure}\n\n"
    "Is the structure faithful to the evidence, fluent (each step reads as sound reasoning) and "
    "valid (it supports the verdict)? Should it be retained or discarded?\n"
    'Answer with a JSON object {{"reasoning": "<one sentence>", "faithfulness": true|false, '
    '"fluency": true|false, "validity": true|false, "decision": "retain"|"discard"}}.'
)
COMPARE = (
    HEADER + FORM + "\n\nStructure A:\n{a}\n\nStructure B:\n{b}\n\n"
    "Is each structure valid (a sound argument for the verdict)? Which one is better?\n"
    'Answer with a JSON object {{"reasoning": "<one sentence>", "validity_a": true|false, '
    '"validity_b": true|false, "preference": "A"|"B"|"tie"}}.'
)
V1 = PromptVersion(
    system=SYSTEM,
    user=EDIT,
    variants={"filter": FILTER, "compare": COMPARE},
    note="One wording per item mode: edit (user), filter and compare (variants).",
)
VERSIONS = {"v1": V1}
LABEL_VERB = {"supports": "supports", "refutes": "refutes", "not enough info": "is not enough for"}


def _mode(item: Any) -> str:
    prepared = item.prepared
    return "edit" if prepared.get("mode") == "edit" else prepared.get("review", "filter")


def _compact(steps) -> str:
    return to_compact(steps) if steps else "(none)"


PLACEHOLDERS = {
    "claim": "the claim",
    "cause": "its cause ('-' if none)",
    "effect": "its effect ('-' if none)",
    "label": "the verdict (supports, refutes, not enough info)",
    "label_verb": "the verdict as a verb phrase (supports, refutes, is not enough for)",
    "evidence": "the evidence statements, one per line with their ids",
    "draft": "edit items: 'A draft structure to revise: …' and a blank line, or nothing",
    "structure": "filter items: the structure to review, in compact form ('(none)' otherwise)",
    "a": "compare items: structure A in compact form ('(none)' otherwise)",
    "b": "compare items: structure B in compact form ('(none)' otherwise)",
}


def variant(item: Any) -> str:
    """The template variant of an item's mode: the main template for edit items."""
    mode = _mode(item)
    return "" if mode == "edit" else mode


def fields(item: Any) -> dict:
    """The placeholders' values for one item (those of other modes are '(none)' or empty)."""
    shown = task_types.get(ArgumentStructure.slug).display(item)
    mode = _mode(item)
    draft = shown.get("draft") if mode == "edit" else None
    structures = shown.get("structures") or {}
    return {
        "claim": shown["claim"],
        "cause": shown["cause"] or "-",
        "effect": shown["effect"] or "-",
        "label": shown["label"],
        "label_verb": LABEL_VERB.get(shown["label"], "relates to"),
        "evidence": "\n".join(f"{e['id']}: {e['text']}" for e in shown["evidence"]),
        "draft": f"A draft structure to revise: {_compact(draft)}\n\n" if draft else "",
        "structure": _compact(shown.get("structure")) if mode == "filter" else "(none)",
        "a": _compact(structures.get("A")) if mode == "compare" else "(none)",
        "b": _compact(structures.get("B")) if mode == "compare" else "(none)",
    }


def response_format(item: Any, version: str) -> dict:
    mode = _mode(item)
    if mode == "edit":
        properties = {"reasoning": {"type": "string"}, "structure": {"type": "string"}}
    elif mode == "compare":
        properties = {
            "reasoning": {"type": "string"},
            "validity_a": {"type": "boolean"},
            "validity_b": {"type": "boolean"},
            "preference": {"type": "string", "enum": ["A", "B", "tie"]},
        }
    else:
        properties = {
            "reasoning": {"type": "string"},
            "faithfulness": {"type": "boolean"},
            "fluency": {"type": "boolean"},
            "validity": {"type": "boolean"},
            "decision": {"type": "string", "enum": ["retain", "discard"]},
        }
    return json_schema_format(
        f"argument_structure_{mode}",
        {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    )


def parse(text: str, item: Any) -> dict:
    reply = object_reply(text)
    mode = _mode(item)
    if mode == "edit":
        structure = reply.get("structure")
        if not isinstance(structure, str) or not structure.strip():
            raise Unparseable("'structure' is missing")
        try:
            steps = parse_compact(structure)
        except StructureSyntaxError as exc:
            raise Unparseable(f"the structure cannot be read: {exc}") from None
        data = {
            "claim": item.payload["claim"],
            "evidence": [{"id": e["id"], "text": e["text"]} for e in item.payload["evidence"]],
            "steps": steps,
        }
    elif mode == "compare":
        preference = str(reply.get("preference", "")).strip()
        data = {
            "validity_a": read_bool(reply.get("validity_a"), "validity_a"),
            "validity_b": read_bool(reply.get("validity_b"), "validity_b"),
            "preference": "tie" if preference.lower() == "tie" else preference.upper(),
        }
    else:
        data = {
            "decision": str(reply.get("decision", "")).strip().lower(),
            **{k: read_bool(reply.get(k), k) for k in ("faithfulness", "fluency", "validity")},
        }
    return validated_answer(ArgumentStructure.slug, data, item)


PROMPT = register(
    JudgePrompt(
        task_type=ArgumentStructure.slug,
        versions=VERSIONS,
        default_version="v1",
        response_format=response_format,
        parse=parse,
        placeholders=PLACEHOLDERS,
        fields=fields,
        variant=variant,
    )
)
