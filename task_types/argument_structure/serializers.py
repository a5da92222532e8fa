"""Payload, config and answer serializers of the argument-structure task type."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from rest_framework import serializers

from annotation.task_types import StrictCharField

from .graph import (
    StructureSyntaxError,
    check_structure,
    edges,
    is_valid_id,
    normalise_steps,
    parse_compact,
    to_compact,
    unknown_ids,
)
from .scoring import DEFAULT_SCORER, SCORERS

LABELS = ("supports", "refutes", "not enough info")
MODES = ("edit", "review")
COMPARISONS = ("blind", "reference")
CRITERIA = ("faithfulness", "fluency", "validity")
METRIC_KEYS = (
    "exact_match_similarity",
    "exact_match_precision",
    "exact_match_recall",
    "structure_similarity",
    "structure_scorer",
    "leaf_precision",
    "leaf_recall",
    "leaf_f1",
    "leaf_all_correct",
    "step_precision",
    "step_recall",
    "step_f1",
    "step_all_correct",
    "intermediate_precision",
    "intermediate_recall",
    "intermediate_f1",
    "intermediate_all_correct",
)


# --- fields --------------------------------------------------------------------------------------


class EvidenceIdField(StrictCharField):
    default_error_messages = {
        "bad_id": "{value!r} cannot be an evidence id: use letters, digits and _ (inner . or - "
        "allowed), and not 'claim'."
    }

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).strip()
        if not is_valid_id(value):
            self.fail("bad_id", value=value)
        return value


class StructureField(serializers.Field):
    """A structure as a list of steps or as compact text; stored as normalised steps.

    In a list of steps a node may also be given by its text (a generated structure that states a
    new intermediate conclusion): ``{"text": "..."}``, or a string that cannot be an id (it has
    spaces or punctuation). Such nodes stay ``{"text": ...}`` here; the payload serializer gives
    them ids (:func:`resolve_text_nodes`)."""

    default_error_messages = {
        "invalid": 'Must be a list of steps {"premises": [ids], "conclusion": id or "claim"} '
        'or compact text such as "(E1, E2) -> E3; E3 -> claim".'
    }

    def to_internal_value(self, data: Any) -> list[dict]:
        if isinstance(data, str):
            try:
                return parse_compact(data)
            except StructureSyntaxError as exc:
                raise serializers.ValidationError(f"Cannot read the structure: {exc}.") from None
        if not isinstance(data, list):
            self.fail("invalid")
        steps = []
        for number, step in enumerate(data, start=1):
            premises = step.get("premises") if isinstance(step, dict) else None
            conclusion = step.get("conclusion") if isinstance(step, dict) else None
            if not isinstance(premises, list) or conclusion is None:
                raise serializers.ValidationError(
                    f'Step {number} must be {{"premises": [ids], "conclusion": id or "claim"}}.'
                )
            read = [_read_node(p, f"step {number}, premise {n}") for n, p in enumerate(premises, 1)]
            steps.append(
                {
                    "premises": [p for n, p in enumerate(read) if p and p not in read[:n]],
                    "conclusion": _read_node(conclusion, f"step {number}, conclusion"),
                }
            )
        return steps

    def to_representation(self, value: Any) -> Any:
        return value


def _read_node(value: Any, where: str) -> str | dict:
    """An id (``claim`` in lower case) or ``{"text": ...}`` for a node given by its text."""
    if isinstance(value, dict):
        text = value.get("text")
        if not isinstance(text, str) or not text.strip():
            raise serializers.ValidationError(f'{where}: a node object needs a "text".')
        return {"text": " ".join(text.split())}
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise serializers.ValidationError(f"{where}: a node is an id, 'claim' or a text.")
    text = str(value).strip()
    if text.lower() == "claim":
        return "claim"
    if not text or is_valid_id(text):
        return text
    return {"text": " ".join(text.split())}


def resolve_text_nodes(evidence: list[dict], structures: dict[str, list]) -> list[dict]:
    """Give every node stated by text an id: a text equal to an evidence statement's is that
    statement; another text becomes new evidence ``N1``, ``N2``, … (the first ids not taken),
    marked with the structure that introduced it (``origin``). The structures are rewritten in
    place; returns the evidence with the new statements appended."""
    by_text = {" ".join(e["text"].split()): e["id"] for e in evidence}
    taken = {e["id"].lower() for e in evidence}
    added: list[dict] = []
    number = 0

    def id_for(node: str | dict, origin: str) -> str:
        nonlocal number
        if not isinstance(node, dict):
            return node
        if node["text"] not in by_text:
            number += 1
            while f"n{number}" in taken:
                number += 1
            new_id = f"N{number}"
            taken.add(new_id.lower())
            by_text[node["text"]] = new_id
            added.append({"id": new_id, "text": node["text"], "leaf": None, "origin": origin})
        return by_text[node["text"]]

    for name, steps in structures.items():
        for step in steps:
            step["premises"] = list(dict.fromkeys(id_for(p, name) for p in step["premises"]))
            step["conclusion"] = id_for(step["conclusion"], name)
    return [*evidence, *added]


class LabelField(StrictCharField):
    """supports / refutes / not enough info, case-insensitive; ``_`` reads as a space and
    ``nei`` as not enough info."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).strip().lower().replace("_", " ")
        value = "not enough info" if value in ("nei", "not enough information") else value
        if value not in LABELS:
            raise serializers.ValidationError(
                f"{data!r} is not a label; use one of {', '.join(LABELS)}."
            )
        return value


# --- payload -------------------------------------------------------------------------------------


class EvidenceSerializer(serializers.Serializer):
    id = EvidenceIdField(max_length=40)
    text = StrictCharField()
    leaf = serializers.BooleanField(required=False, allow_null=True, default=None)
    origin = serializers.CharField(
        required=False,
        max_length=40,
        help_text="Set on statements a structure introduced by text (structure or "
        "reference_structure).",
    )


class ArgumentStructurePayloadSerializer(serializers.Serializer):
    id = StrictCharField(max_length=200)
    claim = StrictCharField()
    cause = StrictCharField(allow_blank=True, required=False, default="")
    effect = StrictCharField(allow_blank=True, required=False, default="")
    label = LabelField()
    evidence = EvidenceSerializer(many=True, allow_empty=False)
    structure = StructureField(
        required=False, allow_null=True, help_text="Draft structure to revise (e.g. LLM-generated)."
    )
    reference_structure = StructureField(
        required=False, allow_null=True, help_text="Reference structure: gold in edit mode."
    )
    structure_source = StrictCharField(
        required=False, allow_blank=True, max_length=80, help_text="Who made the draft, e.g. gpt-4."
    )
    structure_task = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=80,
        help_text="The generation task or setting the draft comes from (human evaluation is "
        "reported per model and task).",
    )
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )
    expected_decision = serializers.ChoiceField(
        choices=["retain", "discard"],
        required=False,
        help_text="Gold of a review-mode control or qualification item (retain or discard).",
    )

    def validate(self, attrs: dict) -> dict:
        ids = [e["id"] for e in attrs["evidence"]]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise serializers.ValidationError(
                {"evidence": f"Evidence id {duplicate} appears twice."}
            )
        structures = {n: attrs[n] for n in ("structure", "reference_structure") if attrs.get(n)}
        attrs["evidence"] = resolve_text_nodes([dict(e) for e in attrs["evidence"]], structures)
        ids = [e["id"] for e in attrs["evidence"]]
        for name, steps in structures.items():
            steps[:] = normalise_steps(steps)
            for step_index, node in unknown_ids(ids, steps):
                raise serializers.ValidationError(
                    {
                        name: f"Item {attrs['id']!r}: step {step_index + 1} names evidence id "
                        f"{node!r}, which is not among the item's evidence ({', '.join(ids)})."
                    }
                )
            if not all(step["premises"] for step in steps):
                number = next(n for n, s in enumerate(steps, start=1) if not s["premises"])
                raise serializers.ValidationError(
                    {name: f"Item {attrs['id']!r}: step {number} has no premises."}
                )
        reference = attrs.get("reference_structure")
        if reference:
            # The gold is held to the annotator's rule: no statement supports itself.
            cycles = [
                p
                for p in check_structure(ids, reference, require_all_evidence=False)
                if p.code == "cycle"
            ]
            if cycles:
                raise serializers.ValidationError(
                    {"reference_structure": f"Item {attrs['id']!r}: {cycles[0].message}"}
                )
        return attrs


class ArgumentStructureConfigSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=MODES,
        default="edit",
        help_text="edit: revise texts and build the structure; review: retain/discard or compare.",
    )
    seed = serializers.IntegerField(
        default=13, help_text="Seeds the A/B order of compared structures."
    )
    comparison = serializers.ChoiceField(
        choices=COMPARISONS,
        default="blind",
        help_text="How a generated structure is compared with its reference (review mode): "
        "blind (shown as A and B in a seeded order, the validity of both asked) or reference "
        "(CheckWhy's protocol: the generated structure beside the provided reference, labelled, "
        "its validity asked and win / tie / lose against the reference).",
    )
    similarity_scorer = serializers.ChoiceField(
        choices=list(SCORERS),
        default=DEFAULT_SCORER,
        help_text="Pair scorer of Structure Similarity: a local sentence-embedding model "
        "(all-MiniLM-L6-v2, offline) or none (Exact Match Similarity only).",
    )


# --- answers -------------------------------------------------------------------------------------


class StepSerializer(serializers.Serializer):
    premises = serializers.ListField(
        child=serializers.CharField(allow_blank=True), allow_empty=True
    )
    conclusion = serializers.CharField(allow_blank=True)


class AnswerEvidenceSerializer(serializers.Serializer):
    id = EvidenceIdField(max_length=40)
    text = serializers.CharField(allow_blank=True)


NOT_CAUSAL_EDGE = "(not a valid causal relation)"
# ^ the one "edge" of a discarded claim, so that two annotators who discard it agree (Jaccard 1)
#   and one who discards it disagrees with one who builds a structure (Jaccard 0).


class EditAnswerSerializer(serializers.Serializer):
    claim = serializers.CharField(allow_blank=True)
    evidence = AnswerEvidenceSerializer(many=True)
    steps = StepSerializer(many=True, required=False, default=list)
    invalid_causal_relation = serializers.BooleanField(
        required=False,
        default=False,
        help_text="The annotator discards the claim: it is not a valid causal relation (no "
        "structure is built).",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs["invalid_causal_relation"]:
            return {
                "claim": attrs["claim"].strip(),
                "evidence": [{"id": e["id"], "text": e["text"].strip()} for e in attrs["evidence"]],
                "steps": [],
                "invalid_causal_relation": True,
                "structure_text": "",
                "edges": [NOT_CAUSAL_EDGE],
            }
        claim = attrs["claim"].strip()
        if not claim:
            raise serializers.ValidationError({"claim": gettext("The claim text is empty.")})
        evidence = [{"id": e["id"], "text": e["text"].strip()} for e in attrs["evidence"]]
        ids = [e["id"] for e in evidence]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise serializers.ValidationError(
                {"evidence": gettext("Evidence id %(id)s appears twice.") % {"id": duplicate}}
            )
        empty = next((e["id"] for e in evidence if not e["text"]), None)
        if empty is not None:
            raise serializers.ValidationError(
                {"evidence": gettext("%(id)s has no text: write it or delete it.") % {"id": empty}}
            )
        steps = normalise_steps(attrs["steps"])
        problems = check_structure(ids, steps)
        if problems:
            # The check is Django-free: its messages are rendered here, in the annotator's language.
            raise serializers.ValidationError({"steps": [p.render(gettext) for p in problems]})
        return {
            "claim": claim,
            "evidence": evidence,
            "steps": steps,
            "invalid_causal_relation": False,
            "structure_text": to_compact(steps),
            "edges": sorted(f"{p}->{c}" for p, c in edges(steps)),
        }


class FilterAnswerSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["retain", "discard"])
    faithfulness = serializers.BooleanField()
    fluency = serializers.BooleanField()
    validity = serializers.BooleanField()


class CompareAnswerSerializer(serializers.Serializer):
    """A/B answer; mapped to the generated structure's validity and outcome with the item's
    stored order. With the reference shown as such (``comparison: reference``, A is the
    generated structure) only the generated one's validity is asked: ``validity_b`` is optional
    and ``reference_validity`` is then None."""

    validity_a = serializers.BooleanField()
    validity_b = serializers.BooleanField(required=False)
    preference = serializers.ChoiceField(choices=["A", "B", "tie"])

    def validate(self, attrs: dict) -> dict:
        item = self.context.get("item")
        if item is None:
            raise serializers.ValidationError(
                "Comparing structures needs the item (its A/B order)."
            )
        blind = item.prepared.get("comparison", "blind") == "blind"
        if blind and "validity_b" not in attrs:
            raise serializers.ValidationError({"validity_b": [gettext("This field is required.")]})
        order = item.prepared["order"]  # e.g. ["reference", "generated"]: A is the reference
        generated = "A" if order[0] == "generated" else "B"
        reference = "B" if generated == "A" else "A"
        valid = {"A": attrs["validity_a"], "B": attrs.get("validity_b")}
        preference = attrs["preference"]
        outcome = "tie" if preference == "tie" else ("win" if preference == generated else "lose")
        return {
            **attrs,
            "validity": valid[generated],
            "reference_validity": valid[reference],
            "outcome": outcome,
        }


def _answer_kind(item: Any, data: Any) -> str:
    if item is not None:
        prepared = item.prepared
        return "edit" if prepared.get("mode") == "edit" else prepared.get("review", "filter")
    if isinstance(data, dict) and "preference" in data:
        return "compare"
    if isinstance(data, dict) and "decision" in data:
        return "filter"
    return "edit"


_ANSWER_SERIALIZERS = {
    "edit": EditAnswerSerializer,
    "filter": FilterAnswerSerializer,
    "compare": CompareAnswerSerializer,
}


class ArgumentStructureAnswerSerializer(serializers.Serializer):
    """Validates an answer for the item's mode (``context={"item": item}``): an edited structure
    that passes the well-formedness check, a retain/discard review, or an A/B comparison."""

    def to_internal_value(self, data: Any) -> dict:
        serializer_class = _ANSWER_SERIALIZERS[_answer_kind(self.context.get("item"), data)]
        serializer = serializer_class(data=data, context=self.context)
        if not serializer.is_valid():
            raise serializers.ValidationError(serializer.errors)
        return dict(serializer.validated_data)
