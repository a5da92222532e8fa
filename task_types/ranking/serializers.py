"""Config, payload and answer of a ranking project (DRF serializers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from .ranks import is_standard_competition, output_letter

MIN_OUTPUTS, MAX_OUTPUTS = 2, 9  # ranks are typed with one digit key

# Definitions after Atanasova et al. (2020), "Generating Fact Checking Explanations", §5.
DEFAULT_CRITERIA = [
    {
        "name": "Coverage",
        "definition": "The explanation contains the important, salient information and misses no "
        "point that matters for the fact check.",
        "examples": [],
    },
    {
        "name": "Non-redundancy",
        "definition": "The explanation contains no information that is redundant, repeated or "
        "irrelevant to the claim and its fact check.",
        "examples": [],
    },
    {
        "name": "Non-contradiction",
        "definition": "The explanation contains no information that contradicts the claim or the "
        "fact check.",
        "examples": [],
    },
    {
        "name": "Overall",
        "definition": "The overall quality of the explanation as a justification of the verdict.",
        "examples": [],
    },
]


# --- config --------------------------------------------------------------------------------------


class CriterionSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)
    definition = serializers.CharField()
    examples = serializers.ListField(child=serializers.CharField(), default=list)


class RankingConfigSerializer(serializers.Serializer):
    criteria = CriterionSerializer(many=True, default=DEFAULT_CRITERIA)
    systems = serializers.ListField(
        child=serializers.CharField(max_length=100),
        default=list,
        help_text="The system names items may use; when given, any other name is refused at import.",
    )
    seed = serializers.IntegerField(default=13, help_text="Seeds the per-annotator display order.")

    def validate_criteria(self, value: list[dict]) -> list[dict]:
        if not value:
            raise serializers.ValidationError(
                "A ranking project needs at least one criterion with a name and a definition."
            )
        names = [c["name"] for c in value]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate:
            raise serializers.ValidationError(f"Criterion {duplicate!r} appears twice.")
        return value


def project_criteria(config: Mapping[str, Any] | None) -> list[dict]:
    """The validated criteria of a project's config (the defaults when it names none); raises
    ``ValidationError`` for an invalid config."""
    serializer = RankingConfigSerializer(data=config or {})
    serializer.is_valid(raise_exception=True)
    return [dict(c) for c in serializer.validated_data["criteria"]]


# --- payload -------------------------------------------------------------------------------------


class OutputSerializer(serializers.Serializer):
    system = serializers.CharField(max_length=100)
    text = serializers.CharField(trim_whitespace=False)


class RankingPayloadSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    claim = serializers.CharField()
    label = serializers.CharField(max_length=50, help_text="Veracity label of the claim.")
    outputs = OutputSerializer(many=True)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )

    def validate_outputs(self, value: list[dict]) -> list[dict]:
        if not MIN_OUTPUTS <= len(value) <= MAX_OUTPUTS:
            raise serializers.ValidationError(
                f"A ranking needs {MIN_OUTPUTS} to {MAX_OUTPUTS} outputs (k = {len(value)})."
            )
        systems = [o["system"] for o in value]
        duplicate = next((s for s in systems if systems.count(s) > 1), None)
        if duplicate:
            raise serializers.ValidationError(f"System {duplicate!r} appears twice.")
        return value


# --- answer --------------------------------------------------------------------------------------


class RankingAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}`` (criteria come from the
    item's project). Errors about ranks are keyed by criterion and name outputs by their letter."""

    order = serializers.ListField(child=serializers.CharField(max_length=40))
    ranks = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))

    def validate(self, attrs: dict) -> dict:
        item = self.context["item"]
        keys = item.prepared["keys"]
        order = attrs["order"]
        if sorted(order) != sorted(keys):
            raise serializers.ValidationError(
                {"order": "Must list every output of the item exactly once."}
            )
        letter = {key: output_letter(i) for i, key in enumerate(order)}
        criteria = [c["name"] for c in project_criteria(item.project.config)]
        unknown = [c for c in attrs["ranks"] if c not in criteria]
        if unknown:
            raise serializers.ValidationError({"ranks": f"Unknown criterion {unknown[0]!r}."})
        errors = {}
        for criterion in criteria:
            problem = _rank_problem(attrs["ranks"].get(criterion, {}), order, letter)
            if problem:
                errors[criterion] = problem
        if errors:
            raise serializers.ValidationError({"ranks": errors})
        ranks = {c: {key: attrs["ranks"][c][key] for key in order} for c in criteria}
        return {"order": list(order), "ranks": ranks}


def _rank_problem(given: dict, order: list[str], letter: dict[str, str]) -> str | None:
    """What is wrong with one criterion's ranks (keys -> rank), or None."""
    k = len(order)
    strangers = [key for key in given if key not in letter]
    missing = [letter[key] for key in order if key not in given]
    values = [given[key] for key in order if key in given]
    if strangers:
        return f"{strangers[0]!r} is not an output of this item."
    if missing:
        return f"Rank every output (output {', '.join(missing)} has no rank)."
    if any(not 1 <= v <= k for v in values):
        return f"Ranks run from 1 to {k}."
    if not is_standard_competition(values):
        shown = ", ".join(str(v) for v in sorted(values))
        return (
            f"Ranks {shown} skip no place after a tie: tied outputs share a rank and the next "
            f"rank counts every output before it (e.g. 1, 1, 3)."
        )
    return None
