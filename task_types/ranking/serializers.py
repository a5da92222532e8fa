"""Config, payload and answer of a ranking project (DRF serializers)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.utils.translation import gettext
from rest_framework import serializers

from annotation.task_types import StrictCharField

from .ranks import (
    CONVENTION_EXAMPLES,
    TIE_CONVENTIONS,
    convention_ranks,
    follows_convention,
    output_letter,
)

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
    tie_convention = serializers.ChoiceField(
        choices=TIE_CONVENTIONS,
        default="competition",
        help_text="How tied outputs are ranked: competition (1, 1, 3), dense (1, 1, 2) or free "
        "(any ranks 1..k, nothing checked).",
    )
    tie_instructions = serializers.BooleanField(
        default=True,
        help_text="Show the platform's note on how to rank ties beside the grid; switch off to "
        "show only the project's own guidelines (as the original study did).",
    )

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
    ``ValidationError`` for an invalid config. Validated once per distinct config: an import
    of many answers (a Label Studio export, a sheet) checks each against the same config, and
    the serializer's validation was most of its time (10k answers: minutes)."""
    try:
        text = json.dumps(config or {}, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: the serializer says what is wrong with it
        text = None
    if text is None:
        return _validated_criteria(config or {})
    return [dict(c) for c in _criteria_of_json(text)]


@lru_cache(maxsize=64)
def _criteria_of_json(text: str) -> tuple[dict, ...]:
    return tuple(_validated_criteria(json.loads(text)))


def _validated_criteria(config: Mapping[str, Any]) -> list[dict]:
    serializer = RankingConfigSerializer(data=config)
    serializer.is_valid(raise_exception=True)
    return [dict(c) for c in serializer.validated_data["criteria"]]


# --- payload -------------------------------------------------------------------------------------


class OutputSerializer(serializers.Serializer):
    system = StrictCharField(max_length=100)
    text = StrictCharField(trim_whitespace=False)


class RankingPayloadSerializer(serializers.Serializer):
    id = StrictCharField(max_length=200)
    claim = StrictCharField()
    label = StrictCharField(max_length=50, help_text="Veracity label of the claim.")
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
                {"order": gettext("Must list every output of the item exactly once.")}
            )
        letter = {key: output_letter(i) for i, key in enumerate(order)}
        config = item.project.config or {}
        criteria = [c["name"] for c in project_criteria(config)]
        convention = config.get("tie_convention") or "competition"
        unknown = [c for c in attrs["ranks"] if c not in criteria]
        if unknown:
            raise serializers.ValidationError(
                {"ranks": gettext("Unknown criterion %(name)s.") % {"name": repr(unknown[0])}}
            )
        errors = {}
        for criterion in criteria:
            problem = _rank_problem(
                attrs["ranks"].get(criterion, {}), order, letter, convention=convention
            )
            if problem:
                errors[criterion] = problem
        if errors:
            raise serializers.ValidationError({"ranks": errors})
        ranks = {c: {key: attrs["ranks"][c][key] for key in order} for c in criteria}
        return {"order": list(order), "ranks": ranks}


def _rank_problem(
    given: dict, order: list[str], letter: dict[str, str], *, convention: str = "competition"
) -> str | None:
    """What is wrong with one criterion's ranks (keys -> rank), or None."""
    k = len(order)
    strangers = [key for key in given if key not in letter]
    missing = [letter[key] for key in order if key not in given]
    values = [given[key] for key in order if key in given]
    if strangers:
        return gettext("%(key)s is not an output of this item.") % {"key": repr(strangers[0])}
    if missing:
        return gettext("Rank every output (output %(outputs)s has no rank).") % {
            "outputs": ", ".join(missing)
        }
    if any(not 1 <= v <= k for v in values):
        return gettext("Ranks run from 1 to %(k)d.") % {"k": k}
    if not follows_convention(values, convention):
        shown = ", ".join(str(v) for v in sorted(values))
        fixed = ", ".join(str(v) for v in sorted(convention_ranks(values, convention)))
        text = (
            gettext(
                "Ranks %(shown)s do not follow this project's tie convention: tied outputs share "
                "a rank and the next rank counts every output before it (e.g. %(example)s; here "
                "%(fixed)s)."
            )
            if convention == "competition"
            else gettext(
                "Ranks %(shown)s do not follow this project's tie convention: tied outputs share "
                "a rank and the next rank follows the shared one (e.g. %(example)s; here "
                "%(fixed)s)."
            )
        )
        return text % {"shown": shown, "example": CONVENTION_EXAMPLES[convention], "fixed": fixed}
    return None
