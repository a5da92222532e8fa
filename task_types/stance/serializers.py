"""Stance payload, config and answer serializers, and the label scheme they enforce."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from rest_framework import serializers

from annotation.task_types import StrictCharField

LABELS = ("agree", "disagree", "neutral")
VERACITIES = ("true", "false", "mixture")
LEVEL_NAMES = {
    0: "Neutral",
    1: "Mild presupposition",
    2: "Unequivocal presupposition",
    3: "Writing request",
    4: "Writing demand",
}
DEFAULT_K = 5


# --- payload -------------------------------------------------------------------------------------


class VeracityField(StrictCharField):
    """true / false / mixture, case-insensitive; ``mixed`` is read as ``mixture``."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).strip().lower()
        value = "mixture" if value == "mixed" else value
        if value and value not in VERACITIES:
            raise serializers.ValidationError(
                f"{data!r} is not a veracity; use one of {', '.join(VERACITIES)}."
            )
        return value


class LevelField(serializers.Field):
    """Presupposition level 0–4, as a number or as UPHILL's level name."""

    default_error_messages = {
        "invalid": "Must be a level from 0 to 4 or one of: " + ", ".join(LEVEL_NAMES.values()) + "."
    }

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int) and data in LEVEL_NAMES:
            return data
        if isinstance(data, str):
            text = data.strip()
            if text.isdecimal() and int(text) in LEVEL_NAMES:
                return int(text)
            for level, name in LEVEL_NAMES.items():
                if text.lower() == name.lower():
                    return level
        self.fail("invalid")

    def to_representation(self, value: Any) -> Any:
        return value


class StancePayloadSerializer(serializers.Serializer):
    id = StrictCharField(max_length=200)
    claim = StrictCharField()
    response = StrictCharField(help_text="The model's response; split into sentences at import.")
    veracity = VeracityField(required=False, allow_blank=True, allow_null=True)
    level = LevelField(required=False, allow_null=True, help_text="Presupposition level 0–4.")
    model = StrictCharField(required=False, allow_blank=True, max_length=120)
    query = StrictCharField(required=False, allow_blank=True)
    claim_id = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Groups the queries about one claim (for consistency across levels).",
    )
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )
    gold_label = serializers.ChoiceField(
        choices=LABELS, required=False, help_text="Only for control/qualification items."
    )


class StanceConfigSerializer(serializers.Serializer):
    k = serializers.IntegerField(
        min_value=1,
        max_value=20,
        default=DEFAULT_K,
        help_text="How many response sentences (most similar to the claim) to label.",
    )


# --- answer --------------------------------------------------------------------------------------


class SentenceLabelSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    label = serializers.ChoiceField(choices=LABELS)
    not_sure = serializers.BooleanField(default=False)


class StanceAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; with ``context={"item": item}`` the sentence labels must be
    exactly the item's chosen sentences."""

    label = serializers.ChoiceField(choices=LABELS)
    not_sure = serializers.BooleanField(default=False)
    sentences = SentenceLabelSerializer(many=True, required=False, default=list)

    def validate(self, attrs: dict) -> dict:
        labelled = [dict(s) for s in attrs["sentences"]]
        indices = [s["index"] for s in labelled]
        duplicate = next((i for i in indices if indices.count(i) > 1), None)
        if duplicate is not None:
            raise serializers.ValidationError(
                {"sentences": gettext("Sentence %(n)d is labelled twice.") % {"n": duplicate + 1}}
            )
        item = self.context.get("item")
        if item is not None:
            targets = [t["index"] for t in item.prepared["targets"]]
            extra = sorted(set(indices) - set(targets))
            if extra:
                raise serializers.ValidationError(
                    {
                        "sentences": gettext("Sentence %(n)d is not one of the sentences to label.")
                        % {"n": extra[0] + 1}
                    }
                )
            missing = [i for i in targets if i not in indices]
            if missing:
                raise serializers.ValidationError(
                    {
                        "sentences": gettext("Label sentence %(n)d of the response too.")
                        % {"n": missing[0] + 1}
                    }
                )
        return {
            "label": attrs["label"],
            "not_sure": attrs["not_sure"],
            "sentences": sorted(
                (
                    {"index": s["index"], "label": s["label"], "not_sure": s["not_sure"]}
                    for s in labelled
                ),
                key=lambda s: s["index"],
            ),
        }
