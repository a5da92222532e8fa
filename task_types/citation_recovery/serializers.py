"""Payload, config and answer of a citation-recovery project (DRF serializers)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from rest_framework import serializers

from annotation.task_types import StrictCharField

# Shared with the fast path (``fast_payload``), which must agree with the serializer below.
ITEM_KINDS = ("regular", "control", "qualification")
ID_MAX_LENGTH, LABEL_MAX_LENGTH, SOURCE_MAX_LENGTH = 200, 50, 80

HELPFULNESS_QUESTION = "How helpful is the explanation in clarifying the truthfulness of the claim?"


# --- payload -------------------------------------------------------------------------------------


class ExplanationField(serializers.Field):
    """Either raw text (split into sentences at import) or an already split list of sentences."""

    default_error_messages = {
        "invalid": "Must be a non-empty string or a non-empty list of strings."
    }

    def to_internal_value(self, data: Any) -> str | list[str]:
        if not explanation_is_valid(data):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def explanation_is_valid(data: Any) -> bool:
    """Whether ``data`` is an explanation :class:`ExplanationField` takes as it is; raises
    ``ValidationError`` for text that cannot be stored (NUL, lone surrogates)."""
    if isinstance(data, str) and data.strip():
        _check_text(data)
        return True
    if isinstance(data, list) and data and all(isinstance(s, str) and s.strip() for s in data):
        for sentence in data:
            _check_text(sentence)
        return True
    return False


class EvidenceListField(serializers.Field):
    """``[{"id": int >= 0, "text": str}, …]``, non-empty, ids unique.

    Hand-written rather than a nested serializer: imports validate 100k records with a dozen
    passages each, and a nested DRF serializer per passage was the slowest part of an import.
    """

    def to_internal_value(self, data: Any) -> list[dict]:
        return validated_evidence(data)

    def to_representation(self, value: Any) -> Any:
        return value


def validated_evidence(data: Any) -> list[dict]:
    """The evidence :class:`EvidenceListField` validates: a new list of ``{id, text}`` dicts;
    raises ``ValidationError`` naming the first passage at fault."""
    if not isinstance(data, list) or not data:
        raise serializers.ValidationError("Must be a non-empty list of {id, text} objects.")
    evidence, seen = [], set()
    for index, passage in enumerate(data):
        if not isinstance(passage, dict):
            raise serializers.ValidationError(f"Passage {index} is not an object.")
        passage_id, text = passage.get("id"), passage.get("text")
        if isinstance(passage_id, str) and passage_id.strip().isdecimal():
            passage_id = int(passage_id)
        if not isinstance(passage_id, int) or isinstance(passage_id, bool) or passage_id < 0:
            raise serializers.ValidationError(
                f"Passage {index}: id must be a non-negative integer (markers look like [9])."
            )
        if not isinstance(text, str) or not text.strip():
            raise serializers.ValidationError(
                f"Passage {index} (id {passage_id}): text is missing."
            )
        _check_text(text)
        if passage_id in seen:
            raise serializers.ValidationError(f"Evidence id {passage_id} appears twice.")
        seen.add(passage_id)
        evidence.append({"id": passage_id, "text": text})
    return evidence


def _check_text(text: str) -> None:
    # Lone surrogates and NUL cannot be stored (PostgreSQL rejects them); encoding is the fast way
    # to find surrogates (DRF's own validator walks the string in Python).
    if "\x00" in text:
        raise serializers.ValidationError("Text contains a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise serializers.ValidationError(
            "Text contains an invalid (surrogate) character."
        ) from None


class CitationRecoveryPayloadSerializer(serializers.Serializer):
    id = StrictCharField(max_length=ID_MAX_LENGTH)
    claim = StrictCharField()
    label = StrictCharField(
        max_length=LABEL_MAX_LENGTH, help_text="Veracity label, e.g. true / false / half-true."
    )
    evidence = EvidenceListField()
    explanation = ExplanationField()
    masked_evidence = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Evidence to mask; chosen by seeded RNG if absent.",
    )
    generator = StrictCharField(required=False, allow_blank=True, max_length=SOURCE_MAX_LENGTH)
    evidence_source = StrictCharField(
        required=False, allow_blank=True, max_length=SOURCE_MAX_LENGTH
    )
    kind = serializers.ChoiceField(choices=list(ITEM_KINDS), required=False, default="regular")
    gold_sentences = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        help_text="Only for control/qualification items whose gold is given rather than derived.",
    )
    expected_gold_sentences = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        help_text="The gold the source states for the masked_evidence (Transparent-FCExp's "
        "ans_sens): the gold derived from the explanation must equal it, or the record is refused.",
    )
    negative_control = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Build a negative control from this record: the sentences that cite the masked "
        "evidence are removed from the explanation, so 'none' is the right answer.",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs.get("negative_control") and attrs.get("kind", "regular") == "regular":
            raise serializers.ValidationError(
                {
                    "negative_control": "Only a control or qualification item can be a negative "
                    "control: set kind to control or qualification."
                }
            )
        return attrs


# Control categories of a batch quota (the pilot of Xing et al.: 2 positive + 1 negative).
CONTROL_CATEGORIES = ("positive", "negative")


class CitationRecoveryConfigSerializer(serializers.Serializer):
    masking = serializers.ChoiceField(choices=["sample", "full"], default="sample")
    seed = serializers.IntegerField(default=13)
    keep_other_markers = serializers.BooleanField(default=True)
    helpfulness_question = serializers.CharField(default=HELPFULNESS_QUESTION)
    uncited = serializers.ChoiceField(
        choices=["rate", "skip"],
        default="rate",
        help_text="An explanation that cites no evidence has nothing to attribute: 'rate' imports "
        "it as a rating-only item (helpfulness only, no masked evidence), as the paper's "
        "annotators rated such explanations; 'skip' leaves it out of the import.",
    )
    control_quota = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=100),
        required=False,
        help_text='Controls per crowd batch by kind, e.g. {"positive": 2, "negative": 1}: '
        "positive controls have gold sentences, negative ones have none. Without it, a batch's "
        "controls are drawn at random.",
    )

    def validate_control_quota(self, value: dict) -> dict:
        unknown = sorted(set(value) - set(CONTROL_CATEGORIES))
        if unknown:
            raise serializers.ValidationError(
                f"Unknown control kind {unknown[0]!r}; use {' and '.join(CONTROL_CATEGORIES)}."
            )
        return value


# --- answer --------------------------------------------------------------------------------------


class CitationRecoveryAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}`` for the sentence count."""

    sentences = serializers.ListField(child=serializers.IntegerField(min_value=0), default=list)
    none = serializers.BooleanField(default=False)
    helpfulness = serializers.IntegerField(min_value=0, max_value=100)

    def validate(self, attrs: dict) -> dict:
        chosen = sorted(set(attrs["sentences"]))
        item = self.context.get("item")
        if item is not None and item.prepared.get("rating_only"):
            # The explanation cites no evidence: there is nothing to attribute, only to rate.
            if chosen or attrs["none"]:
                raise serializers.ValidationError(
                    {
                        "sentences": gettext(
                            "This explanation cites no evidence: rate its helpfulness "
                            "only, without choosing sentences."
                        )
                    }
                )
            return {"helpfulness": attrs["helpfulness"]}
        if item is not None:
            count = len(item.prepared["sentences"])
            out_of_range = [i for i in chosen if i >= count]
            if out_of_range:
                raise serializers.ValidationError(
                    {
                        "sentences": gettext(
                            "Sentence %(n)d does not exist (the explanation has %(count)d)."
                        )
                        % {"n": out_of_range[0] + 1, "count": count}
                    }
                )
        if attrs["none"] and chosen:
            raise serializers.ValidationError(
                {
                    "none": gettext(
                        "Choose sentences or 'No sentence should cite this evidence', not both."
                    )
                }
            )
        if not attrs["none"] and not chosen:
            raise serializers.ValidationError(
                {
                    "sentences": gettext(
                        "Select at least one sentence, or 'No sentence should cite this evidence'."
                    )
                }
            )
        return {"sentences": chosen, "none": attrs["none"], "helpfulness": attrs["helpfulness"]}
