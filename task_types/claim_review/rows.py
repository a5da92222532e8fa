"""Per-claim rows of an answer in the FaStfact tool's terms, shared by the export, the report
section and the ``claim_review_stats`` command (plain Python, no Django)."""

from __future__ import annotations

from typing import Any

# Export vocabulary (FaStfact's tool): the operation applied to a claim and the agreement outcome.
OPERATION_OF_ACTION = {
    "keep": "unchanged",
    "revise": "revised",
    "remove": "removed",
    "add": "added",
}
AGREED, DISAGREED, PENDING = "agreed", "disagreed_corrected", "verification_pending"


def claim_rows(item: Any, answer: dict) -> list[dict]:
    """One row per claim of an answer, in response order, in the FaStfact tool's terms: ``claim``
    is the extracted claim (an added claim's own text), ``revised_claim`` the revision or None,
    ``action`` unchanged / revised / removed / added, ``agreement`` agreed / disagreed_corrected /
    verification_pending (None for removed and added claims), ``annotator_label`` the final label
    (a removed claim's removal reason)."""
    originals = {c["id"]: c for c in item.payload["claims"]}
    rows = []
    for position, decision in enumerate(answer.get("claims", []), start=1):
        claim = originals.get(decision["id"])
        action = decision["action"]
        agreement = None
        if action in ("keep", "revise"):
            agreement = {"agree": AGREED, "disagree": DISAGREED}.get(
                decision.get("agreement"), PENDING
            )
        label = final_label(decision, claim.get("system_label") if claim else None)
        rows.append(
            {
                "position": position,
                "claim_id": decision["id"],
                "claim": claim["text"] if claim else decision.get("text"),
                "revised_claim": decision.get("text") if action == "revise" else None,
                "action": OPERATION_OF_ACTION[action],
                "removal_reason": decision.get("reason") if action == "remove" else None,
                "system_label": claim.get("system_label") if claim else None,
                "has_evidence": bool(claim and claim.get("evidence")),
                "agreement": agreement,
                "annotator_label": label,
            }
        )
    return rows


def final_label(decision: dict, system_label: str | None) -> str | None:
    """The annotator's label of one decision: the removal reason, the pipeline's label when they
    agree, otherwise the label they chose (None while undecided)."""
    if decision["action"] == "remove":
        return decision.get("reason")
    if decision["action"] != "add" and decision.get("agreement") == "agree":
        return system_label
    return decision.get("label")
