"""Replay of ReproHum #0087-01 (reproduction of Atanasova et al. 2020's human evaluation of
fact-checking explanations): three systems' explanations per claim, ranked 1–3 with ties on each
criterion by three annotators, positions shuffled per annotator; the paper's figures are MAR per
system (the mean of the annotators' MARs) and Krippendorff's alpha at all four levels.

Items: the real explanations of ``data/explanation-ranking/explanations.jsonl`` (GPT-4, GPT-3.5
and Llama-2-70B explanations of PolitiHop claims, MIT licence), 10 claims per ``scale``.
Annotators: simulated, working through the annotation API. Each judges an output by a latent
quality of its system plus per-item and personal noise, rounded so that close outputs tie;
the noise gives realistic disagreement (alpha well below 1).

The original study: its raw rankings are not public, so the replay generates them (labelled so)
in the shape of the ReproHum sheet — one row per (claim, annotator), justifications shuffled per
row, rank columns ``<criterion> <n>`` and the per-row mapping file — from a different latent
quality per system, and loads them with the ``reprohum-ranks`` reader as external coders
(``import_annotations``). The report then sets the original against the reproduction as the
ReproHum paper does: MAR per system side by side (Table 1), CV* per system (Table 2) and
Spearman's rho between the MAR vectors (Table 3), per criterion.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from django.conf import settings

from agreement.reports import AnnotatorFilter
from agreement.reports.build import compare_reports
from agreement.reports.tables import column, table
from annotation.models import ExternalCoder
from projects.models import Membership
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
from studies.services.external_annotations import import_annotations
from studies.services.imports import import_items

from .ranks import competition_ranks
from .serializers import DEFAULT_CRITERIA

NAME = "reprohum"
SLUG = "replay-reprohum"
DATA = Path(settings.BASE_DIR) / "data" / "explanation-ranking" / "explanations.jsonl"
# Latent quality of each system (simulation only; higher is better).
QUALITY = {"gpt4": 1.0, "gpt35": 0.6, "llama2-70b": 0.3}
# The generated original study's latent quality: another order, so the comparison shows it.
ORIGINAL_QUALITY = {"gpt4": 0.7, "gpt35": 0.8, "llama2-70b": 0.2}
ORIGINAL_SOURCE = "ReproHum original rankings (generated: the originals are not public)"
ANNOTATORS = 3
GUIDELINES = """\
## Your task
Rank the three explanations of each claim's verdict on every criterion, **1** being the best.
Explanations of equal quality share a rank.
"""


# The reproduction's own set-up: ReproHum #0087-01 ranked Coverage only, with the original
# guideline modified to say how to rank ties. Its exact wording is not in the repository; this
# is its substance (Coverage's definition as the original's, and the tie rule).
COVERAGE_NAME = "reprohum-coverage"
COVERAGE_SLUG = "replay-reprohum-coverage"
COVERAGE_CRITERIA = [c for c in DEFAULT_CRITERIA if c["name"] == "Coverage"]
COVERAGE_GUIDELINES = """\
## Your task
Rank the three explanations of each claim's verdict on **Coverage**, **1** being the best: does
the explanation contain the important, salient information and miss no point that matters for
the fact check?

## Ties
Explanations of equal coverage share a rank, and the next rank is skipped: two best explanations
are both **1** and the third is **3** (1, 1, 3); one best and two equal are 1, 2, 2.
"""


def records(scale: int) -> list[dict]:
    lines = DATA.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[: 10 * max(1, scale)]]


def run(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    """The original study's design: all four criteria, the original guideline."""
    return _run(
        scale=scale,
        seed=seed,
        slug=SLUG,
        name="Replay · ReproHum #0087-01 (ranking with ties)",
        criteria=DEFAULT_CRITERIA,
        guidelines=GUIDELINES,
    )


def run_coverage(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    """The reproduction's own set-up: Coverage only, with the modified guideline (tie rule
    spelled out, the platform's own tie note switched off)."""
    return _run(
        scale=scale,
        seed=seed,
        slug=COVERAGE_SLUG,
        name="Replay · ReproHum #0087-01 (Coverage only, the reproduction's set-up)",
        criteria=COVERAGE_CRITERIA,
        guidelines=COVERAGE_GUIDELINES,
        tie_instructions=False,
    )


def _run(
    *,
    scale: int,
    seed: int,
    slug: str,
    name: str,
    criteria: list[dict],
    guidelines: str,
    tie_instructions: bool = True,
) -> ReplayResult:
    chosen = records(scale)
    project = fresh_project(
        slug=slug,
        name=name,
        task_type="ranking",
        config={
            "criteria": criteria,
            "systems": list(QUALITY),
            "seed": seed,
            "tie_instructions": tie_instructions,
        },
        guidelines=guidelines,
        annotators_per_item=ANNOTATORS,
    )
    criteria_names = [c["name"] for c in criteria]
    body = "".join(json.dumps(r) + "\n" for r in chosen)
    import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    people = _annotate(project, chosen, criteria_names, seed)
    sheet, mapping = original_sheet(chosen, seed=seed, criteria=criteria_names)
    import_annotations(
        project=project,
        stream=io.StringIO(sheet),
        fmt="reprohum-ranks",
        source=ORIGINAL_SOURCE,
        options={"mapping": mapping},
    )
    pseudonyms = Membership.objects.filter(
        project=project, user__in=[p.user for p in people]
    ).values_list("pseudonym", flat=True)
    originals = [c.coder_id for c in ExternalCoder.objects.filter(project=project)]
    report = project_report(project, annotator_filter=AnnotatorFilter(include=tuple(pseudonyms)))
    original = project_report(project, annotator_filter=AnnotatorFilter(include=tuple(originals)))
    names = ["alpha_levels"] + sorted(n for n in report["tables"] if n.startswith("mar_"))
    tables = {name: report["tables"][name] for name in names}
    tables["original_alpha_levels"] = original["tables"]["alpha_levels"]
    tables.update(comparison_tables(original, report))
    return ReplayResult(
        project=project,
        report=report,
        tables=tables,
        notes=[
            f"{len(chosen)} claims × 3 systems, {ANNOTATORS} simulated annotators, "
            f"{len(criteria_names)} criteria ({', '.join(criteria_names)}).",
            f"Original study: {len(originals)} external coders' rankings, generated in the "
            "ReproHum sheet's shape and loaded with the reprohum-ranks reader.",
        ],
    )


def _annotate(
    project, chosen: list[dict], criteria_names: list[str], seed: int
) -> list[ApiAnnotator]:
    """The simulated annotators rank every item through the API: each system's quality plus
    noise, competition ranks (ties share)."""
    system_of_text = {o["text"]: o["system"] for r in chosen for o in r["outputs"]}
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=ANNOTATORS, prefix="reprohum-annotator")
    ]
    rngs = [rng_for(f"{NAME}:{n}", seed) for n in range(len(people))]

    def decide(index: int, assignment: dict) -> tuple[dict, float]:
        rng = rngs[index]
        outputs = assignment["item"]["outputs"]
        ranks = {}
        for criterion in criteria_names:
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
    return people


def original_sheet(
    chosen: list[dict], *, seed: int, criteria: list[str] | None = None
) -> tuple[str, str]:
    """The generated original rankings in the ReproHum sheet's shape, and its per-row mapping
    file: justifications shuffled per row, one row per (claim, original annotator), ranks as
    standard competition ranks of a noisy latent quality (:data:`ORIGINAL_QUALITY`), on
    ``criteria`` (default: all four)."""
    rng = rng_for(f"{NAME}:original", seed)
    if criteria is None:
        criteria = [c["name"] for c in DEFAULT_CRITERIA]
    k = max(len(r["outputs"]) for r in chosen)
    sheet, mapping = io.StringIO(), io.StringIO()
    sheet_writer, mapping_writer = csv.writer(sheet), csv.writer(mapping)
    sheet_writer.writerow(
        ["id", "annotator", "claim", *[f"{c} {n}" for c in criteria for n in range(1, k + 1)]]
    )
    mapping_writer.writerow(["id", "column", "system"])
    for record in chosen:
        systems = [o["system"] for o in record["outputs"]]
        rng.shuffle(systems)
        for n, system in enumerate(systems, start=1):
            mapping_writer.writerow([record["id"], f"justification {n}", system])
        for annotator in range(1, ANNOTATORS + 1):
            cells = []
            for _criterion in criteria:
                scores = [round(ORIGINAL_QUALITY[s] + rng.gauss(0, 0.35), 1) for s in systems]
                cells.extend(competition_ranks([-score for score in scores]))
            sheet_writer.writerow([record["id"], f"original-{annotator}", record["claim"], *cells])
    return sheet.getvalue(), mapping.getvalue()


def comparison_tables(original: dict, reproduction: dict) -> dict[str, dict]:
    """The ReproHum paper's comparison per criterion: MAR per system of the original and the
    reproduction (Table 1), CV* per system (Table 2), Spearman's rho between the two MAR vectors
    (Table 3); from the dashboard's own comparison (``compare_reports``)."""
    compared = compare_reports(original, reproduction, labels=("Original", "Reproduction"))
    prefix = "MAR · "
    mar_rows, cv_rows, rho_rows = [], [], []
    for row in compared["vectors"]["rows"]:
        if row["vector"].startswith(prefix):
            criterion = row["vector"][len(prefix) :]
            base = {"criterion": criterion, "system": row["entry"]}
            mar_rows.append({**base, "original": row["a"], "reproduction": row["b"]})
            cv_rows.append({**base, "cv_star": row["cv_star"]})
    for row in compared["spearman"]["rows"]:
        if row["vector"].startswith(prefix):
            rho_rows.append(
                {
                    "criterion": row["vector"][len(prefix) :],
                    "systems": row["entries"],
                    "rho": row["rho"],
                }
            )
    criterion, system = column("criterion", "Criterion", "text"), column("system", "System", "text")
    return {
        "original_vs_reproduction_mar": table(
            "MAR per system: original and reproduction",
            [
                criterion,
                system,
                column("original", "Original", "num"),
                column("reproduction", "Reproduction", "num"),
            ],
            mar_rows,
            note="Mean of the annotators' MARs; lower is better. Original: the external coders "
            "loaded from the original study's sheet.",
        ),
        "cv_star": table(
            "CV* per system (reproduction vs original)",
            [criterion, system, column("cv_star", "CV*", "num")],
            cv_rows,
            note="Small-sample coefficient of variation of the two MARs (Belz, Popović & Mille "
            "2022), in percent, unshifted as in ReproHum #0087-01 Table 2; lower means closer.",
        ),
        "spearman": table(
            "Spearman's rho between the original and reproduction MAR vectors",
            [criterion, column("systems", "Systems", "int"), column("rho", "Spearman's ρ", "num")],
            rho_rows,
            note="Rank correlation of the systems' MARs (ReproHum #0087-01 Table 3).",
        ),
    }


register(
    name=NAME,
    title="ReproHum #0087-01: ranking explanations with ties",
    task_type="ranking",
    slug=SLUG,
    run=run,
)
register(
    name=COVERAGE_NAME,
    title="ReproHum #0087-01, the reproduction's set-up: Coverage only, modified guideline",
    task_type="ranking",
    slug=COVERAGE_SLUG,
    run=run_coverage,
)
