"""Claim-review statistics in the shape of FaStfact's ``annotation_stats.json`` (plain data, no
Django).

Input: one sample per annotation (an annotator's review of one response)::

    {"model": "gpt-4o", "prompt_source": "freshQA",
     "claims": [{"action": "unchanged" | "revised" | "removed" | "added",
                 "removal_reason": "redundant" | "not a claim" | None,
                 "agreement": "agreed" | "disagreed_corrected" | "verification_pending" | None,
                 "annotator_label": "supported" | … | None}, …]}

(the per-claim rows that the claim-review task type exports). Output, for the whole set and grouped
by model, by prompt source and by ``<model>_<prompt source>``::

    {"count": samples,
     "annotator_labels": {label: claims},   # a removed claim counts under its removal reason
     "agreements": {"agreed", "disagreed_corrected", "verification_pending"},
     "operations": {"unchanged", "removed", "added", "revised"},
     "reasons": {removal reason: claims}}

As in FaStfact, agreements count only extracted claims that were kept (unchanged or revised): added
claims have no pipeline label to agree with and removed claims are not verified. Agreement and
operation keys are always present (zero when nothing fell in them). FaStfact's pipeline-side
figures (token, response and pre-label statistics) describe the pipeline, not the annotation, and
are not computed here.

Factuality of a response (``response_factuality``): the share of *supported* among its claims'
factual verdicts (supported, refuted, conflicting evidence, not enough evidence, unsupported);
*irrelevant* claims say nothing about the response's facts and a pre-label such as *unsure* is no
verdict, so neither counts. "Before" scores the pipeline's labels of the extracted claims, "after"
the labels after human review (removed claims drop out, added ones count). None when a response
has no factual verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "AGREEMENTS",
    "FACTUAL_VERDICTS",
    "OPERATIONS",
    "claim_review_stats",
    "factuality",
    "response_factuality",
]

OPERATIONS = ("unchanged", "removed", "added", "revised")
AGREEMENTS = ("agreed", "disagreed_corrected", "verification_pending")
FACTUAL_VERDICTS = (
    "supported",
    "refuted",
    "conflicting evidence",
    "not enough evidence",
    "unsupported",
)


def factuality(labels: Iterable[str | None]) -> float | None:
    """Share of ``supported`` among the labels that are factual verdicts; None without any."""
    verdicts = [label for label in labels if label in FACTUAL_VERDICTS]
    if not verdicts:
        return None
    return sum(label == "supported" for label in verdicts) / len(verdicts)


def response_factuality(claims: Iterable[Mapping[str, Any]]) -> dict:
    """``{"before", "after"}`` factuality of one reviewed response from its per-claim rows
    (``action``, ``system_label``, ``annotator_label``): before from the pipeline's labels of
    the extracted claims, after from the final labels of the claims the review kept or added."""
    claims = list(claims)
    return {
        "before": factuality(c.get("system_label") for c in claims if c["action"] != "added"),
        "after": factuality(c.get("annotator_label") for c in claims if c["action"] != "removed"),
    }


class _Block:
    def __init__(self) -> None:
        self.count = 0
        self.labels: Counter = Counter()
        self.agreements: Counter = Counter()
        self.operations: Counter = Counter()
        self.reasons: Counter = Counter()

    def add(self, claims: list[Mapping[str, Any]]) -> None:
        self.count += 1
        for claim in claims:
            operation = claim["action"]
            if operation not in OPERATIONS:
                raise ValueError(
                    f"unknown claim action {operation!r}; expected one of {OPERATIONS}"
                )
            self.operations[operation] += 1
            if claim.get("annotator_label") is not None:
                self.labels[claim["annotator_label"]] += 1
            if operation == "removed" and claim.get("removal_reason"):
                self.reasons[claim["removal_reason"]] += 1
            if operation in ("unchanged", "revised"):
                agreement = claim.get("agreement") or "verification_pending"
                if agreement not in AGREEMENTS:
                    raise ValueError(
                        f"unknown agreement {agreement!r}; expected one of {AGREEMENTS}"
                    )
                self.agreements[agreement] += 1

    def as_dict(self) -> dict:
        return {
            "count": self.count,
            "annotator_labels": dict(self.labels.most_common()),
            "agreements": {key: self.agreements[key] for key in AGREEMENTS},
            "operations": {key: self.operations[key] for key in OPERATIONS},
            "reasons": dict(self.reasons.most_common()),
        }


def claim_review_stats(samples: Iterable[Mapping[str, Any]]) -> dict:
    """Statistics of claim-review annotations, overall and by model / prompt source (see the
    module docstring for the input and output shapes). Groups appear in first-seen order."""
    overall = _Block()
    groups: dict[str, dict[str, _Block]] = {
        "by_model": {},
        "by_prompt_source": {},
        "by_model_prompt_source": {},
    }
    claims_total = 0
    for sample in samples:
        claims = list(sample.get("claims", []))
        claims_total += len(claims)
        model = sample.get("model") or "unknown"
        source = sample.get("prompt_source") or "unknown"
        overall.add(claims)
        for name, key in (
            ("by_model", model),
            ("by_prompt_source", source),
            ("by_model_prompt_source", f"{model}_{source}"),
        ):
            groups[name].setdefault(key, _Block()).add(claims)
    return {
        "metadata": {"total_samples": overall.count, "total_claims": claims_total},
        "overall": overall.as_dict(),
        "grouped": {
            name: {key: block.as_dict() for key, block in blocks.items()}
            for name, blocks in groups.items()
        },
    }
