"""Replay of FaStfact's human review (claim revise/verify): annotators keep, revise or remove each
claim the pipeline extracted from a model's long-form answer, add claims it missed, then agree or
disagree with the pipeline's label of every kept claim (choosing from all five labels when they
disagree); the paper's figures are FaStfact's annotation statistics (operations, agreement with
the pipeline, final labels — the shape of ``annotation_stats.json``) and the factuality score per
response before and after human revision.

Items: the two real responses of ``data/fastfact/trial.jsonl`` (17 claims, with the pipeline's
evidence and labels). ``scale`` multiplies the number of reviewers (3 × scale), as there is no
more real data. Annotators: simulated, through the annotation API: they mostly keep claims and
agree with the pipeline, now and then remove a claim, revise it, add a missing one or correct a
label.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from studies.replays import (
    ApiAnnotator,
    ReplayResult,
    fresh_project,
    project_report,
    register,
    rng_for,
    simulated_annotators,
    work_in_turns,
)
from studies.services.imports import import_items

from .labels import EVIDENCE_LABELS, REMOVAL_REASONS

NAME = "fastfact"
SLUG = "replay-fastfact"
DATA = Path(settings.BASE_DIR) / "data" / "fastfact" / "trial.jsonl"


def _review(rng, item: dict) -> dict:
    decisions = []
    for claim in item["claims"]:
        roll = rng.random()
        if roll < 0.06:
            decisions.append(
                {"id": claim["id"], "action": "remove", "reason": rng.choice(REMOVAL_REASONS)}
            )
            continue
        decision = {"id": claim["id"], "action": "keep"}
        if roll < 0.12:
            decision = {
                "id": claim["id"],
                "action": "revise",
                "text": claim["text"].rstrip(".") + ", according to the sources.",
            }
        if claim["can_agree"] and rng.random() < 0.85:
            decision["agreement"] = "agree"
        else:
            choices = [label for label in claim["labels"] if label != claim["system_label"]]
            decision.update(agreement="disagree", label=rng.choice(choices))
        decisions.append(decision)
    if rng.random() < 0.3:
        decisions.append(
            {
                "id": f"added-{rng.randrange(10**6)}",
                "action": "add",
                "text": "The response also states a fact the pipeline missed.",
                "label": rng.choice(EVIDENCE_LABELS),
            }
        )
    return {"claims": decisions}


def run(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    reviewers = 3 * max(1, scale)
    project = fresh_project(
        slug=SLUG,
        name="Replay · FaStfact claim revise/verify (trial responses)",
        task_type="claim_review",
        config={},
        guidelines="Review each extracted claim (keep, revise, remove; add missing ones), then "
        "agree or disagree with the system's label of every kept claim.",
        annotators_per_item=reviewers,
    )
    with DATA.open("rb") as stream:
        import_items(project=project, stream=stream, fmt="fastfact")
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=reviewers, prefix="fastfact-reviewer")
    ]
    rngs = [rng_for(f"{NAME}:{n}", seed) for n in range(len(people))]

    def decide(index: int, assignment: dict) -> tuple[dict, float]:
        rng = rngs[index]
        return _review(rng, assignment["item"]), rng.uniform(240, 600)

    work_in_turns(people, decide)
    report = project_report(project)
    names = ["operations", "labels", "claim_agreement", "factuality"]
    return ReplayResult(
        project=project,
        report=report,
        tables={name: report["tables"][name] for name in names},
        notes=[f"2 real responses (17 claims), {reviewers} simulated reviewers."],
    )


register(
    name=NAME,
    title="FaStfact: claim revise/verify of long-form answers",
    task_type="claim_review",
    slug=SLUG,
    run=run,
)
