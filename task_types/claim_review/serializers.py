"""Validation of claim review's payloads, configs and answers (DRF serializers)."""

from __future__ import annotations

import re

from django.utils.translation import gettext
from rest_framework import serializers

from annotation.task_types import StrictCharField

from .labels import (
    ACTIONS,
    EVIDENCE_LABELS,
    REDUCED_LABELS,
    REMOVAL_REASONS,
    can_agree,
    choice_labels,
)

DEFAULT_SEARCH_URL = "https://www.google.com/search?q={query}"
MAX_TEXT = 2000


# --- payload and config ----------------------------------------------------------------------


class EvidencePassageSerializer(serializers.Serializer):
    title = StrictCharField(allow_blank=True, max_length=500)
    content = StrictCharField(trim_whitespace=False)


class ClaimSerializer(serializers.Serializer):
    id = StrictCharField(max_length=200)
    text = StrictCharField(max_length=MAX_TEXT)
    system_label = StrictCharField(
        allow_blank=True,
        max_length=50,
        help_text="The pipeline's label (verification label, else pre-label).",
    )
    evidence = EvidencePassageSerializer(many=True, default=list)
    reasoning = StrictCharField(allow_blank=True, default="", trim_whitespace=False)
    pre_label = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=50)
    prelabel_confidence = serializers.FloatField(required=False, allow_null=True)

    def validate_system_label(self, value: str) -> str:
        return value.strip().lower()


GROUP_MAX_LENGTH = 200  # annotation.models.Item.group


def item_group(payload: dict) -> str:
    """The item group (the unit of per-group statistics): ``model / prompt_source``."""
    return " / ".join(p for p in (payload.get("model"), payload.get("prompt_source")) if p)


class ClaimReviewPayloadSerializer(serializers.Serializer):
    id = StrictCharField(max_length=200)
    question = StrictCharField()
    response = StrictCharField(trim_whitespace=False)
    model = StrictCharField(required=False, allow_blank=True, default="", max_length=100)
    prompt_source = StrictCharField(required=False, allow_blank=True, default="", max_length=100)
    claims = ClaimSerializer(many=True, allow_empty=True)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )
    gold_labels = serializers.DictField(
        child=StrictCharField(),
        required=False,
        help_text="Only for control/qualification items: claim id -> expected annotator label "
        "(a verification label, or a removal reason for claims that should be removed).",
    )

    def validate_claims(self, value: list[dict]) -> list[dict]:
        seen: set[str] = set()
        for claim in value:
            if claim["id"] in seen:
                raise serializers.ValidationError(f"Claim id {claim['id']!r} appears twice.")
            seen.add(claim["id"])
        return value

    def validate(self, attrs: dict) -> dict:
        group = item_group(attrs)
        if len(group) > GROUP_MAX_LENGTH:
            raise serializers.ValidationError(
                {
                    "model / prompt_source": f"The item group is built as model / prompt_source "
                    f"({group[:60]!r}…) and would be {len(group)} characters; at most "
                    f"{GROUP_MAX_LENGTH}: shorten the model or the prompt source."
                }
            )
        gold = attrs.get("gold_labels")
        if gold:
            ids = {c["id"] for c in attrs["claims"]}
            allowed = set(EVIDENCE_LABELS) | set(REDUCED_LABELS) | set(REMOVAL_REASONS)
            for claim_id, label in gold.items():
                if claim_id not in ids:
                    raise serializers.ValidationError(
                        {"gold_labels": f"Unknown claim id {claim_id!r}."}
                    )
                if label not in allowed:
                    raise serializers.ValidationError(
                        {"gold_labels": f"Unknown label {label!r} for claim {claim_id!r}."}
                    )
        return attrs


class ClaimReviewConfigSerializer(serializers.Serializer):
    search_url = serializers.CharField(
        default=DEFAULT_SEARCH_URL,
        allow_blank=True,
        allow_null=True,
        help_text="Web search opened for a claim; {query} is replaced by the claim. Empty: no search button.",
    )

    def validate_search_url(self, value: str | None) -> str:
        value = (value or "").strip()
        if value and (not re.match(r"^https?://", value) or "{query}" not in value):
            raise serializers.ValidationError(
                "Must be an http(s) URL containing {query}, or empty."
            )
        return value


# --- answer ----------------------------------------------------------------------------------


class ClaimDecisionSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=64)
    action = serializers.ChoiceField(choices=ACTIONS)
    text = serializers.CharField(required=False, allow_blank=True, max_length=MAX_TEXT)
    reason = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    agreement = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    label = serializers.CharField(required=False, allow_blank=True, allow_null=True)


def _decision_problem(decision: dict, claim: dict | None) -> str | None:
    """What is missing or wrong in one claim's decision, or None. ``claim`` is the original claim
    (None for an added one)."""
    action = decision["action"]
    text = (decision.get("text") or "").strip()
    if claim is None and action != "add":
        return gettext("is not a claim of this item; added claims have the action 'add'")
    if claim is not None and action == "add":
        return gettext("is an extracted claim; choose keep, revise or remove")
    if action == "remove":
        if decision.get("reason") not in REMOVAL_REASONS:
            return gettext("choose why it is removed (%(reasons)s)") % {
                "reasons": " / ".join(REMOVAL_REASONS)
            }
        return None
    if action in ("revise", "add") and not text:
        return gettext("the claim text is empty")
    if action == "revise" and text == claim["text"].strip():
        return gettext("the revised text is the same as the original; keep the claim instead")
    if action == "add":
        if decision.get("label") not in choice_labels(None):
            return gettext("choose its label (%(labels)s)") % {
                "labels": ", ".join(choice_labels(None))
            }
        return None
    return _agreement_problem(decision, claim)


def _agreement_problem(decision: dict, claim: dict) -> str | None:
    """What is missing or wrong in the agreement with the system's label of a kept or revised
    ``claim``, or None."""
    agreement = decision.get("agreement")
    if agreement not in ("agree", "disagree"):
        return gettext("choose agree or disagree with the system's label")
    if agreement == "agree" and not can_agree(claim):
        label = claim.get("system_label") or "none"
        return gettext(
            "the system's label (%(label)s) is not a verdict to agree with; disagree and choose "
            "the label"
        ) % {"label": label}
    if agreement == "disagree" and decision.get("label") not in choice_labels(claim):
        return gettext("choose the correct label (%(labels)s)") % {
            "labels": ", ".join(choice_labels(claim))
        }
    if agreement == "disagree" and decision["label"] == claim.get("system_label"):
        return gettext("disagreeing means choosing a label other than the system's (%(label)s)") % {
            "label": decision["label"]
        }
    return None


class ClaimReviewAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}``. Every claim must have a
    decision; errors are keyed by claim id so the page can mark the offending claims."""

    claims = ClaimDecisionSerializer(many=True, allow_empty=True)

    def validate(self, attrs: dict) -> dict:
        item = self.context.get("item")
        originals = item.payload["claims"] if item is not None else []
        by_id = {c["id"]: c for c in originals}
        decisions = attrs["claims"]
        errors: dict[str, str] = {}
        seen: set[str] = set()
        for position, decision in enumerate(decisions, start=1):
            claim_id = decision["id"]
            if claim_id in seen:
                errors[claim_id] = gettext("claim %(n)d (%(id)s): appears twice") % {
                    "n": position,
                    "id": claim_id,
                }
                continue
            seen.add(claim_id)
            problem = _decision_problem(decision, by_id.get(claim_id))
            if problem:
                errors[claim_id] = gettext("claim %(n)d (%(id)s): %(problem)s") % {
                    "n": position,
                    "id": claim_id,
                    "problem": problem,
                }
        missing = [c["id"] for c in originals if c["id"] not in seen]
        for claim_id in missing:
            errors[claim_id] = gettext("claim %(id)s: has no decision") % {"id": claim_id}
        if errors:
            raise serializers.ValidationError({"claims": errors})
        order = [d["id"] for d in decisions if d["id"] in by_id]
        if order != [c["id"] for c in originals]:
            raise serializers.ValidationError(
                {
                    "claims": gettext(
                        "The extracted claims must stay in response order; only added claims move."
                    )
                }
            )
        return {"claims": [_clean(d) for d in decisions]}


def _clean(decision: dict) -> dict:
    """Only the fields that the action uses, so equal decisions store equal answers."""
    action = decision["action"]
    clean = {"id": decision["id"], "action": action}
    if action in ("revise", "add"):
        clean["text"] = decision["text"].strip()
    if action == "remove":
        clean["reason"] = decision["reason"]
    if action in ("keep", "revise"):
        clean["agreement"] = decision["agreement"]
        if decision["agreement"] == "disagree":
            clean["label"] = decision["label"]
    if action == "add":
        clean["label"] = decision["label"]
    return clean
