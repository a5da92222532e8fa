"""Payload, config and answer serializers of the argument-structure task type."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

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

LABELS = ("supports", "refutes", "not enough info")
MODES = ("edit", "review")
CRITERIA = ("faithfulness", "fluency", "validity")
METRIC_KEYS = (
    "edge_similarity",
    "step_similarity",
    "leaf_precision",
    "leaf_recall",
    "leaf_f1",
    "leaf_all_correct",
    "step_precision",
    "step_recall",
    "step_f1",
    "step_all_correct",
)


# --- fields --------------------------------------------------------------------------------------


class EvidenceIdField(serializers.CharField):
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
    """A structure as a list of steps or as compact text; stored as normalised steps."""

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
        for number, step in enumerate(data, start=1):
            premises = step.get("premises") if isinstance(step, dict) else None
            conclusion = step.get("conclusion") if isinstance(step, dict) else None
            if (
                not isinstance(premises, list)
                or not all(isinstance(p, str | int) for p in premises)
                or not isinstance(conclusion, str | int)
            ):
                raise serializers.ValidationError(
                    f'Step {number} must be {{"premises": [ids], "conclusion": id or "claim"}}.'
                )
        return normalise_steps(data)

    def to_representation(self, value: Any) -> Any:
        return value


class LabelField(serializers.CharField):
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
    text = serializers.CharField()
    leaf = serializers.BooleanField(required=False, allow_null=True, default=None)


class ArgumentStructurePayloadSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    claim = serializers.CharField()
    cause = serializers.CharField(allow_blank=True, required=False, default="")
    effect = serializers.CharField(allow_blank=True, required=False, default="")
    label = LabelField()
    evidence = EvidenceSerializer(many=True, allow_empty=False)
    structure = StructureField(
        required=False, allow_null=True, help_text="Draft structure to revise (e.g. LLM-generated)."
    )
    reference_structure = StructureField(
        required=False, allow_null=True, help_text="Reference structure: gold in edit mode."
    )
    structure_source = serializers.CharField(
        required=False, allow_blank=True, max_length=80, help_text="Who made the draft, e.g. gpt-4."
    )
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )

    def validate(self, attrs: dict) -> dict:
        ids = [e["id"] for e in attrs["evidence"]]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise serializers.ValidationError(
                {"evidence": f"Evidence id {duplicate} appears twice."}
            )
        for name in ("structure", "reference_structure"):
            steps = attrs.get(name)
            if not steps:
                continue
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


# --- answers -------------------------------------------------------------------------------------


class StepSerializer(serializers.Serializer):
    premises = serializers.ListField(
        child=serializers.CharField(allow_blank=True), allow_empty=True
    )
    conclusion = serializers.CharField(allow_blank=True)


class AnswerEvidenceSerializer(serializers.Serializer):
    id = EvidenceIdField(max_length=40)
    text = serializers.CharField(allow_blank=True)


class EditAnswerSerializer(serializers.Serializer):
    claim = serializers.CharField(allow_blank=True)
    evidence = AnswerEvidenceSerializer(many=True)
    steps = StepSerializer(many=True)

    def validate(self, attrs: dict) -> dict:
        claim = attrs["claim"].strip()
        if not claim:
            raise serializers.ValidationError({"claim": "The claim text is empty."})
        evidence = [{"id": e["id"], "text": e["text"].strip()} for e in attrs["evidence"]]
        ids = [e["id"] for e in evidence]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise serializers.ValidationError(
                {"evidence": f"Evidence id {duplicate} appears twice."}
            )
        empty = next((e["id"] for e in evidence if not e["text"]), None)
        if empty is not None:
            raise serializers.ValidationError(
                {"evidence": f"{empty} has no text: write it or delete it."}
            )
        steps = normalise_steps(attrs["steps"])
        problems = check_structure(ids, steps)
        if problems:
            raise serializers.ValidationError({"steps": [p.message for p in problems]})
        return {
            "claim": claim,
            "evidence": evidence,
            "steps": steps,
            "structure_text": to_compact(steps),
            "edges": sorted(f"{p}->{c}" for p, c in edges(steps)),
        }


class FilterAnswerSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["retain", "discard"])
    faithfulness = serializers.BooleanField()
    fluency = serializers.BooleanField()
    validity = serializers.BooleanField()


class CompareAnswerSerializer(serializers.Serializer):
    """Blind A/B answer; mapped to the generated structure's validity and outcome with the
    item's stored order."""

    validity_a = serializers.BooleanField()
    validity_b = serializers.BooleanField()
    preference = serializers.ChoiceField(choices=["A", "B", "tie"])

    def validate(self, attrs: dict) -> dict:
        item = self.context.get("item")
        if item is None:
            raise serializers.ValidationError(
                "Comparing structures needs the item (its A/B order)."
            )
        order = item.prepared["order"]  # e.g. ["reference", "generated"]: A is the reference
        generated = "A" if order[0] == "generated" else "B"
        reference = "B" if generated == "A" else "A"
        valid = {"A": attrs["validity_a"], "B": attrs["validity_b"]}
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
