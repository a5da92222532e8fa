"""Argument-structure report (CheckWhy): structures against the reference, and the review
figures (retain / discard with Fleiss' kappa, faithfulness, fluency, validity, win / tie / lose).

Rules:

* edit mode: every answer's final structure is compared with the item's reference structure
  (its gold) by :func:`metrics.argument_structure.structure_metrics`; the metrics are averaged
  over answers (humans) and, as a baseline, over the items' draft structures (the structure the
  annotators started from, when there was one);
* review mode: shares of "yes" / of each decision and outcome over the humans' answers; Fleiss'
  kappa over the retain / discard decisions of the items that have the most common number of
  decisions (Fleiss' kappa needs the same number of raters per item; CheckWhy reports 0.75).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean

from agreement.reports.inputs import HUMAN, ReportInput
from agreement.reports.sections import Figure, SectionResult, register
from agreement.reports.tables import Table, column, table
from metrics.argument_structure import EdgeScorer, scorer_name, structure_metrics
from metrics.kappa import fleiss_kappa_from_labels

from .scoring import answer_texts, edge_scorer, evidence_texts
from .task import ArgumentStructure

METRICS = (
    ("structure_similarity", "Structure Similarity"),
    ("exact_match_similarity", "Exact Match Similarity"),
    ("leaf_f1", "Leaves F1"),
    ("leaf_all_correct", "Leaves AllCorrect"),
    ("step_f1", "Steps F1"),
    ("step_all_correct", "Steps AllCorrect"),
    ("intermediate_f1", "Intermediates F1"),
    ("intermediate_all_correct", "Intermediates AllCorrect"),
)
BINARY = ("faithfulness", "fluency", "validity", "reference_validity")


def item_extra(payload: dict, prepared: dict) -> dict:
    return {
        "mode": prepared.get("mode"),
        "draft": payload.get("structure") or None,
        "evidence": [{"id": e["id"], "text": e["text"]} for e in payload.get("evidence") or []],
        "model": payload.get("structure_source") or "",
        "task": payload.get("structure_task") or "",
    }


def _reference(item) -> list | None:
    gold = item.gold if isinstance(item.gold, Mapping) else {}
    return gold.get("structure") or None


def _means(results: list[dict]) -> dict:
    means = {}
    for key, _ in METRICS:
        values = [float(r[key]) for r in results if r.get(key) is not None]
        means[key] = fmean(values) if values else None
    return means


def _metrics(steps: list, item, scorer: EdgeScorer | None, answer: Mapping | None = None) -> dict:
    """The structure's metrics against the item's reference, nodes read as text (an answer's
    structure with the answer's added evidence)."""
    evidence = item.extra.get("evidence") or []
    texts = evidence_texts(evidence)
    return structure_metrics(
        steps,
        _reference(item),
        predicted_texts=answer_texts(evidence, answer) if answer is not None else texts,
        reference_texts=texts,
        scorer=scorer,
    )


@dataclass
class _Answers:
    """The humans' answers, sorted by what the tables need."""

    metrics: list[dict]  # structure_metrics of each edited structure against its reference
    reviews: list[Mapping]  # every review answer
    decisions: dict[str, list[str]]  # unit -> retain / discard decisions
    not_causal: int = 0  # edit answers that discard the claim as not a valid causal relation


def _human_answers(inp: ReportInput, scorer: EdgeScorer | None) -> _Answers:
    found = _Answers([], [], {})
    for answers in inp.answers_of(HUMAN).values():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            reference = _reference(item)
            if answer.get("invalid_causal_relation"):
                found.not_causal += 1
            elif "steps" in answer and reference:
                found.metrics.append(_metrics(answer["steps"], item, scorer, answer))
            if item.extra.get("mode") == "review" or "decision" in answer or "outcome" in answer:
                found.reviews.append(answer)
                if answer.get("decision") is not None:
                    found.decisions.setdefault(unit, []).append(answer["decision"])
    return found


def _structure_table(
    inp: ReportInput, human_metrics: list[dict], scorer: EdgeScorer | None, not_causal: int
) -> Table:
    draft_metrics = [
        _metrics(item.extra["draft"], item, scorer)
        for item in inp.items.values()
        if item.extra.get("draft") and _reference(item) and item.extra.get("mode") != "review"
    ]
    rows = []
    if human_metrics:
        rows.append(
            {"source": "Annotators", "structures": len(human_metrics), **_means(human_metrics)}
        )
    if draft_metrics:
        rows.append(
            {
                "source": "Drafts (starting point)",
                "structures": len(draft_metrics),
                **_means(draft_metrics),
            }
        )
    return table(
        "Structures against the reference",
        [
            column("source", "Structures", "text"),
            column("structures", "Count", "int"),
            *[column(key, label, "num") for key, label in METRICS],
        ],
        rows,
        note="Means over structures, nodes read as text. Exact Match and Structure Similarity: "
        "edge F1 over the optimal one-to-one alignment of edges read as sentences; Structure "
        f"Similarity scores aligned pairs with {_scorer_words(scorer)}. AllCorrect is the share "
        "of structures whose leaves (steps, intermediate conclusions) all match the reference."
        + (
            f" {not_causal} answer(s) discarded the claim as not a valid causal relation and "
            "have no structure to compare."
            if not_causal
            else ""
        ),
    )


def _scorer_words(scorer: EdgeScorer | None) -> str:
    if scorer is None:
        return "no scorer (configured off; the column stays empty)"
    return f"{scorer_name(scorer)} (the paper: BERTScore with DeBERTa-large)"


def _share_rows(reviews: list[Mapping]) -> list[dict]:
    """Shares of decisions, of "yes" per binary criterion, and of win / tie / lose."""
    rows = []
    counts = Counter(a.get("decision") for a in reviews if a.get("decision"))
    for decision in ("retain", "discard"):
        if counts:
            rows.append(
                {
                    "measure": f"Decision: {decision}",
                    "answers": sum(counts.values()),
                    "share": counts[decision] / sum(counts.values()),
                }
            )
    for criterion in BINARY:
        given = [a[criterion] for a in reviews if isinstance(a.get(criterion), bool)]
        if given:
            rows.append(
                {
                    "measure": f"{criterion.replace('_', ' ').capitalize()}: yes",
                    "answers": len(given),
                    "share": sum(given) / len(given),
                }
            )
    outcomes = Counter(a.get("outcome") for a in reviews if a.get("outcome"))
    for outcome in ("win", "tie", "lose"):
        if outcomes:
            rows.append(
                {
                    "measure": f"Generated vs reference: {outcome}",
                    "answers": sum(outcomes.values()),
                    "share": outcomes[outcome] / sum(outcomes.values()),
                }
            )
    return rows


def _kappa_row(decisions: dict[str, list[str]]) -> tuple[dict | None, str]:
    """Fleiss' kappa over the items with the most common number of decisions, and its note."""
    if not decisions:
        return None, ""
    raters = Counter(len(v) for v in decisions.values()).most_common(1)[0][0]
    subjects = [v for v in decisions.values() if len(v) == raters]
    if raters < 2:
        return None, ""
    kappa = fleiss_kappa_from_labels(subjects, categories=["retain", "discard"])
    row = {
        "measure": "Fleiss' κ (retain / discard)",
        "answers": len(subjects) * raters,
        "share": None,
        "kappa": kappa,
    }
    return row, f" Fleiss' κ over the {len(subjects)} items with {raters} decisions each."


def _review_table(answers: _Answers) -> Table:
    rows = _share_rows(answers.reviews) if answers.reviews else []
    kappa, kappa_note = _kappa_row(answers.decisions)
    if kappa is not None:
        rows.append(kappa)
    return table(
        "Review figures",
        [
            column("measure", "Measure", "text"),
            column("answers", "Answers", "int"),
            column("share", "Share", "pct"),
            column("kappa", "κ", "num"),
        ],
        rows,
        note="Shares over the humans' review answers." + kappa_note,
    )


def _human_evaluation_table(inp: ReportInput) -> Table | None:
    """CheckWhy's human evaluation (Table 4): per model and task, the share of generated
    structures judged valid and their win / tie / lose against the reference."""
    cells: dict[tuple[str, str], list[Mapping]] = {}
    for answers in inp.answers_of(HUMAN).values():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping) or not answer.get("outcome"):
                continue
            key = (item.extra.get("model") or item.group or "—", item.extra.get("task") or "—")
            cells.setdefault(key, []).append(answer)
    if not cells:
        return None
    rows = []
    for (model, task), given in sorted(cells.items()):
        outcomes = Counter(a["outcome"] for a in given)
        valid = [a["validity"] for a in given if isinstance(a.get("validity"), bool)]
        rows.append(
            {
                "model": model,
                "task": task,
                "answers": len(given),
                "validity": sum(valid) / len(valid) if valid else None,
                **{o: outcomes[o] / len(given) for o in ("win", "tie", "lose")},
            }
        )
    return table(
        "Human evaluation per model and task",
        [
            column("model", "Model", "text"),
            column("task", "Task", "text"),
            column("answers", "Answers", "int"),
            column("validity", "Validity", "pct"),
            column("win", "Win", "pct"),
            column("tie", "Tie", "pct"),
            column("lose", "Lose", "pct"),
        ],
        rows,
        note="Shares over the humans' answers on generated structures compared with the provided "
        "reference: Validity = judged logically coherent; Win = the generated structure preferred.",
    )


def section(inp: ReportInput) -> SectionResult:
    scorer = edge_scorer(inp.config.get("similarity_scorer"))
    answers = _human_answers(inp, scorer)
    evaluation = _human_evaluation_table(inp)
    review = _review_table(answers)
    means = _means(answers.metrics) if answers.metrics else None
    summary = []
    if means:
        summary.append(Figure("Exact Match Similarity", f"{means['exact_match_similarity']:.2f}"))
        if means["structure_similarity"] is not None:
            summary.append(
                Figure(
                    f"Structure Similarity ({scorer_name(scorer)})",
                    f"{means['structure_similarity']:.2f}",
                )
            )
    if answers.not_causal:
        summary.append(Figure("Claims discarded as not causal", str(answers.not_causal)))
    for row in review["rows"]:
        if row.get("kappa") is not None:
            summary.append(Figure("Fleiss' κ (filtering)", f"{row['kappa']:.2f}"))
    return SectionResult(
        title="Argument structure",
        summary=summary,
        tables={
            "structure_metrics": _structure_table(inp, answers.metrics, scorer, answers.not_causal),
            **({"human_evaluation": evaluation} if evaluation is not None else {}),
            # Review figures only where annotators review (an edit project has none to show).
            **(
                {"review": review}
                if answers.reviews or inp.config.get("mode", "edit") == "review"
                else {}
            ),
        },
        plots=[
            {
                "kind": "grouped",
                "table": "structure_metrics",
                "label": "source",
                "series": [key for key, _ in METRICS],
                "series_labels": dict(METRICS),
                "title": "Structures against the reference",
                "domain": [0.0, 1.0],
            },
        ],
        notes=[f"Structure Similarity scorer: {_scorer_words(scorer)}."],
        scalars={
            f"{label} (annotators)": (means[key] if means else None) for key, label in METRICS
        },
    )


register(ArgumentStructure.slug, section=section, item_extra=item_extra)
