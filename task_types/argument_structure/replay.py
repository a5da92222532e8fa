"""Replay of CheckWhy's human evaluation (Si et al. 2024, Table 4): a generated argument
structure for a causal "why" claim is shown beside the provided reference, labelled as such
(``comparison: reference``); reviewers judge its validity ("Is the generated argument structure
logically coherent?") and whether it wins, ties or loses against the reference; reported per
model and task: the share judged valid and win / tie / lose.

GENERATED CONTENT, labelled so (``structure_source`` starts with ``simulated-``): CheckWhy's data
does not ship with Concord. Claims, evidence and reference structures are written from a small
pattern (cause → mechanism → effect), and two simulated models produce structures that drop or
misplace steps at different rates. Reviewers are simulated too, through the annotation API: a
structure with more mistakes is less often judged valid or preferred.
"""

from __future__ import annotations

import io
import json

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

NAME = "checkwhy"
SLUG = "replay-checkwhy"
TOPICS = [
    ("heavy rain", "the river flooded", "the soil was saturated", "runoff rose quickly"),
    (
        "the factory closed",
        "unemployment rose in the town",
        "hundreds lost their jobs",
        "few other employers were hiring",
    ),
    (
        "interest rates rose",
        "house prices fell",
        "mortgages became dearer",
        "fewer buyers could borrow",
    ),
    (
        "the bridge was closed",
        "traffic jams grew downtown",
        "cars took the old road",
        "the old road has one lane",
    ),
    (
        "a drought hit the region",
        "wheat prices went up",
        "the harvest was small",
        "stocks were already low",
    ),
    (
        "the vaccine campaign started",
        "hospital admissions dropped",
        "fewer people fell seriously ill",
        "most adults were vaccinated",
    ),
]
MODELS = {"simulated-model-a": 0.2, "simulated-model-b": 0.6}  # chance of a mistaken structure
TASKS = ("generate from the claim", "generate from the claim and leaf evidence")
REVIEWERS = 3


def _item(n: int, topic: tuple, model: str, task: str, rng) -> tuple[dict, bool]:
    cause, effect, mechanism, condition = topic
    evidence = [
        {"id": "E1", "text": f"Reports confirm that {cause}."},
        {"id": "E2", "text": f"Because {cause}, {mechanism}."},
        {"id": "E3", "text": f"At the time, {condition}."},
        {"id": "E4", "text": f"As {mechanism} and {condition}, {effect}."},
    ]
    reference = "E1 -> E2; (E2, E3) -> E4; E4 -> claim"
    mistaken = rng.random() < MODELS[model]
    generated = "E1 -> E4; E3 -> claim; E4 -> claim" if mistaken else reference
    record = {
        "id": f"why-{n}-{model}-{TASKS.index(task)}",
        "claim": f"{effect[0].upper()}{effect[1:]} because {cause}.",
        "cause": cause,
        "effect": effect,
        "label": "supports",
        "evidence": evidence,
        "structure": generated,
        "reference_structure": reference,
        "structure_source": model,
        "structure_task": task,
    }
    return record, mistaken


def items(scale: int, seed: int) -> tuple[list[dict], dict[str, bool]]:
    records, mistakes = [], {}
    for n in range(max(1, scale)):
        for t, topic in enumerate(TOPICS):
            for model in MODELS:
                for task in TASKS:
                    rng = rng_for(f"{NAME}:{n}:{t}:{model}:{task}", seed)
                    record, mistaken = _item(n * len(TOPICS) + t, topic, model, task, rng)
                    records.append(record)
                    mistakes[record["id"]] = mistaken
    return records, mistakes


def run(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    records, mistakes = items(scale, seed)
    project = fresh_project(
        slug=SLUG,
        name="Replay · CheckWhy human evaluation (generated items)",
        task_type="argument_structure",
        config={
            "mode": "review",
            "comparison": "reference",
            "seed": seed,
            "similarity_scorer": "none",
        },
        guidelines="A generated argument structure for the claim is shown beside the provided "
        "reference. Say whether the generated structure is logically coherent; then whether it "
        "is better than the reference (win), as good (tie) or worse (lose).",
        annotators_per_item=REVIEWERS,
    )
    body = "".join(json.dumps(r) + "\n" for r in records)
    import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    # What the page shows (the claim and structures A, B) → which side is generated, and
    # whether the generated structure is mistaken (the simulated truth).
    truth = {
        (item.payload["claim"], json.dumps(item.prepared["structures"], sort_keys=True)): (
            "A" if item.prepared["order"][0] == "generated" else "B",
            mistakes[item.external_id],
        )
        for item in project.items.only("external_id", "payload", "prepared")
    }
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=REVIEWERS, prefix="checkwhy-reviewer")
    ]
    rngs = [rng_for(f"{NAME}:reviewer:{n}", seed) for n in range(len(people))]

    def decide(index: int, assignment: dict) -> tuple[dict, float]:
        rng = rngs[index]
        shown = assignment["item"]
        generated, mistaken = truth[
            (shown["claim"], json.dumps(shown["structures"], sort_keys=True))
        ]
        reference = "B" if generated == "A" else "A"
        valid_generated = rng.random() < (0.3 if mistaken else 0.9)
        roll = rng.random()
        if mistaken:
            preference = reference if roll < 0.75 else ("tie" if roll < 0.9 else generated)
        else:
            # The generated structure is the reference itself: a consistent reviewer ties.
            preference = "tie"
        answer = {f"validity_{generated.lower()}": valid_generated, "preference": preference}
        return answer, rng.uniform(60, 180)

    work_in_turns(people, decide)
    report = project_report(project)
    return ReplayResult(
        project=project,
        report=report,
        tables={"human_evaluation": report["tables"]["human_evaluation"]},
        notes=[
            f"{len(records)} generated structures ({len(MODELS)} simulated models × "
            f"{len(TASKS)} tasks), {REVIEWERS} simulated reviewers."
        ],
    )


register(
    name=NAME,
    title="CheckWhy: human evaluation of generated argument structures (generated items)",
    task_type="argument_structure",
    slug=SLUG,
    run=run,
)
