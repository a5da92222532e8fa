"""Replay of the citation-recovery study (Xing, Baldwin & Lau, "Evaluating Evidence Attribution
in Generated Fact Checking Explanations"): annotators find the explanation sentences that should
cite a highlighted evidence passage whose citation markers were masked (or say none should) and
rate the explanation's helpfulness 0–100; the paper's figures are attribution precision / recall
/ F1 (mean ± SD), the transparency proportion, the same per generator (Table 3) with annotation
entropy (Table 9), helpfulness after attribution filters (Table 10), calibrated utility and
set-valued agreement (Jaccard alpha).

Items: the real Transparent-FCExp explanations of GPT-4, GPT-3.5 and Llama-2-70B
(``data/transparent-fcexp``, MIT licence), 4 × ``scale`` claims per generator, one masked
evidence each ("sample" setting, seeded). Annotators: five per item as in the paper, simulated,
through the annotation API: each
finds a gold sentence with a personal recall, now and then picks a wrong one, and rates
helpfulness around a per-generator quality with personal bias and noise.

Judge: as in the paper, an LLM annotates the same items — here a simulated model behind an
OpenAI-compatible server, run through Concord's real judge pipeline
(:mod:`studies.simulated_judges`): it finds a gold sentence 80 % of the time, adds a wrong one
now and then and, like real models, sometimes answers in prose the parser refuses. Its scores
per generator appear beside the humans' (``judges_by_group``) and its agreement with the merged
humans under the paper's rule (``judge_validation``); ``prediction_powered`` the human-only,
judge-only and prediction-powered mean F1 and transparency per generator as a study whose humans
labelled a uniform random 40 % of the explanations would see them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from studies.replays import (
    ApiAnnotator,
    ReplayResult,
    fresh_project,
    judge_tables,
    prediction_powered_tables,
    project_report,
    register,
    rng_for,
    simulated_annotators,
    work_in_turns,
)
from studies.services.imports import import_items
from studies.simulated_judges import simulated_judge_run

from .formats import read_transparent_fcexp

NAME = "citation-recovery"
SLUG = "replay-citation-recovery"
FULL_SLUG = "replay-citation-recovery-full"
DATA = Path(settings.BASE_DIR) / "data" / "transparent-fcexp"
GENERATORS = {"gpt4": 75, "gpt35": 60, "llama2-70b": 45}  # simulated helpfulness centre
ANNOTATORS = 5  # as in the paper: five annotators per explanation
# Per annotator: (recall of gold sentences, chance of adding a wrong sentence, rating bias).
PEOPLE = [
    (0.85, 0.10, 5.0),
    (0.7, 0.25, -8.0),
    (0.6, 0.15, 0.0),
    (0.8, 0.20, 3.0),
    (0.65, 0.10, -4.0),
]
JUDGE = "simulated-llm (citation recovery replay)"
# The simulated judge: (recall of gold sentences, chance of adding a wrong one, chance of prose).
JUDGE_READING = (0.8, 0.15, 0.03)


def records(scale: int) -> list[dict]:
    from .citations import parse_citations  # lazily: spaCy loads only when a replay runs

    chosen = []
    for generator in GENERATORS:
        with (DATA / f"{generator}_full_data.json").open(encoding="utf-8") as stream:
            taken = 0
            for _, payload in read_transparent_fcexp(stream):
                explanation = payload["explanation"]
                text = " ".join(explanation) if isinstance(explanation, list) else explanation
                if not parse_citations(text):
                    continue
                chosen.append(
                    {**payload, "id": f"{generator}:{payload['id']}", "evidence_source": "human"}
                )
                taken += 1
                if taken >= 4 * max(1, scale):
                    break
    return chosen


def run(*, scale: int = 1, seed: int = 87) -> ReplayResult:
    chosen = records(scale)
    project = fresh_project(
        slug=SLUG,
        name="Replay · citation recovery (Xing et al.; Transparent-FCExp explanations)",
        task_type="citation_recovery",
        config={"masking": "sample", "seed": 13, "keep_other_markers": True},
        guidelines="Select every explanation sentence that should cite the highlighted evidence, "
        "or choose that none should; then rate the explanation's helpfulness.",
        annotators_per_item=ANNOTATORS,
    )
    body = "".join(json.dumps(r) + "\n" for r in chosen)
    import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    truth = _truth(project)
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=ANNOTATORS, prefix="cr-annotator")
    ]
    work_in_turns(
        people, _decider(truth, [rng_for(f"{NAME}:{n}", seed) for n in range(len(people))])
    )
    run = simulated_judge_run(
        project=project,
        name=JUDGE,
        reply=_judge_reply(truth, rng_for(f"{NAME}:judge", seed)),
        description="Simulated LLM of the citation-recovery replay (not a real model).",
    )
    report = project_report(project)
    names = ["scores", "groups", "utility_filters", "f1_distribution", "annotators", "agreement"]
    if "utility" in report["tables"]:
        names.append("utility")
    tables = {name: report["tables"][name] for name in names}
    tables |= judge_tables(project, JUDGE, ["judges_by_group"])
    tables["prediction_powered"] = prediction_powered_tables(project, JUDGE, seed=seed)[0]
    full = _full_setting(chosen, seed)
    tables["scores_full"] = project_report(full)["tables"]["scores"]
    return ReplayResult(
        project=project,
        report=report,
        tables=tables,
        notes=[
            f"{len(chosen)} explanations ({len(GENERATORS)} generators), "
            f"{ANNOTATORS} simulated annotators, one simulated LLM judge "
            f"({run.answered_count} answered, {run.unparseable_count} unparseable).",
            f"Table 7's setting (scores_full, project {FULL_SLUG}): the GPT-4 explanations with "
            f"every cited evidence masked in turn ({full.items.count()} items).",
        ],
    )


def _truth(project) -> dict:
    """What the page shows (claim and sentences) → (gold sentences, generator)."""
    return {
        (item.payload["claim"], tuple(item.prepared["sentences"])): (
            item.gold["sentences"],
            item.payload["generator"],
        )
        for item in project.items.only("payload", "prepared", "gold")
    }


def _decider(truth: dict, rngs: list) -> Callable[[int, dict], tuple[dict, float]]:
    """How each simulated annotator answers: finds a gold sentence with a personal recall, now
    and then adds a wrong one, rates helpfulness around the generator's quality."""

    def decide(index: int, assignment: dict) -> tuple[dict, float]:
        rng = rngs[index]
        recall, slip, bias = PEOPLE[index]
        shown = assignment["item"]
        gold, generator = truth[(shown["claim"], tuple(shown["sentences"]))]
        chosen = {s for s in gold if rng.random() < recall}
        others = [i for i in range(len(shown["sentences"])) if i not in gold]
        if others and rng.random() < slip:
            chosen.add(rng.choice(others))
        helpfulness = round(GENERATORS[generator] + bias + rng.gauss(0, 12))
        answer = {
            "sentences": sorted(chosen),
            "none": not chosen,
            "helpfulness": max(0, min(100, helpfulness)),
        }
        return answer, rng.uniform(45, 150)

    return decide


def _full_setting(chosen: list[dict], seed: int):
    """The paper's Table 7 setting: the GPT-4 explanations with every cited evidence masked in
    turn (``masking: full``; the records' own masked evidence is dropped so that all are), five
    simulated annotators; transparency then needs every masked evidence of a claim to reach the
    threshold."""
    project = fresh_project(
        slug=FULL_SLUG,
        name="Replay · citation recovery, full setting (GPT-4; Table 7)",
        task_type="citation_recovery",
        config={"masking": "full", "seed": 13, "keep_other_markers": True},
        guidelines="Select every explanation sentence that should cite the highlighted evidence, "
        "or choose that none should; then rate the explanation's helpfulness.",
        annotators_per_item=ANNOTATORS,
    )
    drop = ("masked_evidence", "expected_gold_sentences")
    gpt4 = [
        {k: v for k, v in r.items() if k not in drop} for r in chosen if r["generator"] == "gpt4"
    ]
    body = "".join(json.dumps(r) + "\n" for r in gpt4)
    import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    people = [
        ApiAnnotator(project=project, user=user)
        for user in simulated_annotators(project, count=ANNOTATORS, prefix="cr-full-annotator")
    ]
    rngs = [rng_for(f"{NAME}:full:{n}", seed) for n in range(len(people))]
    work_in_turns(people, _decider(_truth(project), rngs))
    return project


def _judge_reply(truth: dict, rng) -> Callable[[str], str]:
    """The simulated model: reads the item off the prompt (claim and numbered sentences) and
    answers in the prompt's format, 1-based sentence numbers or -1."""
    recall, slip, prose = JUDGE_READING

    def reply(prompt: str) -> str:
        (gold, _), sentences = next(
            (known, shown)
            for (claim, shown), known in truth.items()
            if claim in prompt and all(sentence in prompt for sentence in shown)
        )
        if rng.random() < prose:
            return "The masked passage is most closely related to the second sentence."
        chosen = {n + 1 for n in gold if rng.random() < recall}
        others = [n + 1 for n in range(len(sentences)) if n not in gold]
        if others and rng.random() < slip:
            chosen.add(rng.choice(others))
        return json.dumps({"sentences": sorted(chosen) or [-1]})

    return reply


register(
    name=NAME,
    title="Citation recovery: evidence attribution in generated explanations (Xing et al.)",
    task_type="citation_recovery",
    slug=SLUG,
    run=run,
)
