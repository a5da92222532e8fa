"""Replay of ReproHum #0087-01 (reproduction of Atanasova et al. 2020's human evaluation of
fact-checking explanations): three systems' explanations per claim, ranked 1–3 with ties on each
criterion by three annotators, positions shuffled per annotator; the paper's figures are MAR per
system (the mean of the annotators' MARs) and Krippendorff's alpha at all four levels.

Items: the real explanations of ``data/explanation-ranking/explanations.jsonl`` (GPT-4, GPT-3.5
and Llama-2-70B explanations of PolitiHop claims, MIT licence), 10 claims per ``scale``.
Annotators: simulated, working through the annotation API. Each judges an output by a latent
quality of its system plus per-item and personal noise, rounded so that close outputs tie;
the noise gives realistic disagreement (alpha well below 1).
"""

from __future__ import annotations

import io
import json
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

from .ranks import competition_ranks
from .serializers import DEFAULT_CRITERIA

NAME = "reprohum"
SLUG = "replay-reprohum"
DATA = Path(settings.BASE_DIR) / "data" / "explanation-ranking" / "explanations.jsonl"
# Latent quality of each system (simulation only; higher is better).
QUALITY = {"gpt4": 1.0, "gpt35": 0.6, "llama2-70b": 0.3}
ANNOTATORS = 3
GUIDELINES = """\
## Your task
Rank the three explanations of each claim's verdict on every criterion, **1** being the best.
Explanations of equal quality share a rank.
"""


def records(scale: int) -> list[dict]:
    lines = DATA.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[: 10 * max(1, scale)]]


def run(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    chosen = records(scale)
    project = fresh_project(
        slug=SLUG,
        name="Replay · ReproHum #0087-01 (ranking with ties)",
        task_type="ranking",
        config={"criteria": DEFAULT_CRITERIA, "systems": list(QUALITY), "seed": seed},
        guidelines=GUIDELINES,
        annotators_per_item=ANNOTATORS,
    )
    body = "".join(json.dumps(r) + "\n" for r in chosen)
    import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    system_of_text = {o["text"]: o["system"] for r in chosen for o in r["outputs"]}
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=ANNOTATORS, prefix="reprohum-annotator")
    ]
    rngs = [rng_for(f"{NAME}:{n}", seed) for n in range(len(people))]
    criteria = [c["name"] for c in DEFAULT_CRITERIA]

    def decide(index: int, assignment: dict) -> tuple[dict, float]:
        rng = rngs[index]
        outputs = assignment["item"]["outputs"]
        ranks = {}
        for criterion in criteria:
            scores = [
                round(QUALITY[system_of_text[o["text"]]] + rng.gauss(0, 0.35), 1) for o in outputs
            ]
            # Higher score is better; competition ranks of the negated scores (ties share).
            ranks[criterion] = dict(
                zip(
                    (o["key"] for o in outputs),
                    competition_ranks([-s for s in scores]),
                    strict=True,
                )
            )
        return {"order": [o["key"] for o in outputs], "ranks": ranks}, rng.uniform(40, 120)

    work_in_turns(people, decide)
    report = project_report(project)
    names = ["alpha_levels"] + sorted(n for n in report["tables"] if n.startswith("mar_"))
    return ReplayResult(
        project=project,
        report=report,
        tables={name: report["tables"][name] for name in names},
        notes=[
            f"{len(chosen)} claims × 3 systems, {ANNOTATORS} simulated annotators, "
            f"{len(criteria)} criteria."
        ],
    )


register(
    name=NAME,
    title="ReproHum #0087-01: ranking explanations with ties",
    task_type="ranking",
    slug=SLUG,
    run=run,
)
