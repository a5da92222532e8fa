"""Claim review's vocabulary: the label schemes, removal reasons and actions (plain data, no
Django; the judges use it too)."""

from __future__ import annotations

EVIDENCE_LABELS = [
    "supported",
    "refuted",
    "conflicting evidence",
    "not enough evidence",
    "irrelevant",
]
REDUCED_LABELS = ["supported", "unsupported", "irrelevant"]
REMOVAL_REASONS = ["redundant", "not a claim"]
ACTIONS = ["keep", "revise", "remove", "add"]


def scheme_of(claim: dict | None) -> list[str]:
    """The scheme the system's label of a claim is shown in: the full scheme when the claim is
    shown with evidence, the reduced one without evidence and for added claims (``None``)."""
    return EVIDENCE_LABELS if claim and claim.get("evidence") else REDUCED_LABELS


def choice_labels(claim: dict | None) -> list[str]:
    """The labels an annotator chooses from when disagreeing with the system, or for a claim they
    added: always all five (FaStfact protocol, decision framework (a)), even where the system's
    label is shown from the reduced scheme."""
    return EVIDENCE_LABELS


def can_agree(claim: dict) -> bool:
    return claim.get("system_label", "") in scheme_of(claim)
