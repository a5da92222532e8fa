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
from statistics import fmean

from agreement.reports.inputs import HUMAN, ReportInput
from agreement.reports.tables import column, table
from metrics.argument_structure import structure_metrics
from metrics.kappa import fleiss_kappa_from_labels

METRICS = (
    ("edge_similarity", "Edge similarity"),
    ("step_similarity", "Step similarity"),
    ("leaf_f1", "Leaf F1"),
    ("leaf_all_correct", "Leaf AllCorrect"),
    ("step_f1", "Step F1"),
    ("step_all_correct", "Step AllCorrect"),
)
BINARY = ("faithfulness", "fluency", "validity", "reference_validity")


def item_extra(payload: dict, prepared: dict) -> dict:
    return {"mode": prepared.get("mode"), "draft": payload.get("structure") or None}


def _reference(item) -> list | None:
    gold = item.gold if isinstance(item.gold, Mapping) else {}
    return gold.get("structure") or None


def _means(results: list[dict]) -> dict:
    return {key: fmean(float(r[key]) for r in results) if results else None for key, _ in METRICS}


def section(inp: ReportInput) -> dict:
    humans = inp.answers_of(HUMAN)
    tables: dict[str, dict] = {}
    human_metrics: list[dict] = []
    review_answers: list[Mapping] = []
    decisions: dict[str, list[str]] = {}
    for answers in humans.values():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            reference = _reference(item)
            if "steps" in answer and reference:
                human_metrics.append(structure_metrics(answer["steps"], reference))
            if item.extra.get("mode") == "review" or "decision" in answer or "outcome" in answer:
                review_answers.append(answer)
                if answer.get("decision") is not None:
                    decisions.setdefault(unit, []).append(answer["decision"])
    draft_metrics = [
        structure_metrics(item.extra["draft"], _reference(item))
        for item in inp.items.values()
        if item.extra.get("draft") and _reference(item) and item.extra.get("mode") != "review"
    ]
    metric_rows = []
    if human_metrics:
        metric_rows.append({"source": "Annotators", "structures": len(human_metrics),
                            **_means(human_metrics)})
    if draft_metrics:
        metric_rows.append({"source": "Drafts (starting point)", "structures": len(draft_metrics),
                            **_means(draft_metrics)})
    tables["structure_metrics"] = table(
        "Structures against the reference",
        [column("source", "Structures", "text"), column("structures", "Count", "int"),
         *[column(key, label, "num") for key, label in METRICS]],
        metric_rows,
        note="Means over structures; AllCorrect is the share of structures whose leaves (steps) "
        "all match the reference.",
    )

    review_rows = []
    total = len(review_answers)
    if total:
        counts = Counter(a.get("decision") for a in review_answers if a.get("decision"))
        for decision in ("retain", "discard"):
            if counts:
                review_rows.append({"measure": f"Decision: {decision}", "answers": sum(
                    counts.values()), "share": counts[decision] / sum(counts.values())})
        for criterion in BINARY:
            given = [a[criterion] for a in review_answers if isinstance(a.get(criterion), bool)]
            if given:
                review_rows.append({"measure": f"{criterion.replace('_', ' ').capitalize()}: yes",
                                    "answers": len(given), "share": sum(given) / len(given)})
        outcomes = Counter(a.get("outcome") for a in review_answers if a.get("outcome"))
        for outcome in ("win", "tie", "lose"):
            if outcomes:
                review_rows.append({"measure": f"Generated vs reference: {outcome}",
                                    "answers": sum(outcomes.values()),
                                    "share": outcomes[outcome] / sum(outcomes.values())})
    kappa_note = ""
    if decisions:
        raters = Counter(len(v) for v in decisions.values()).most_common(1)[0][0]
        subjects = [v for v in decisions.values() if len(v) == raters]
        if raters >= 2:
            kappa = fleiss_kappa_from_labels(subjects, categories=["retain", "discard"])
            review_rows.append({"measure": "Fleiss' κ (retain / discard)",
                                "answers": len(subjects) * raters, "share": None, "kappa": kappa})
            kappa_note = (f" Fleiss' κ over the {len(subjects)} items with {raters} decisions "
                          "each.")
    tables["review"] = table(
        "Review figures",
        [column("measure", "Measure", "text"), column("answers", "Answers", "int"),
         column("share", "Share", "pct"), column("kappa", "κ", "num")],
        review_rows,
        note="Shares over the humans' review answers." + kappa_note,
    )
    summary = []
    if human_metrics:
        summary.append({"label": "Edge similarity",
                        "value": f"{_means(human_metrics)['edge_similarity']:.2f}"})
    for row in review_rows:
        if row.get("kappa") is not None:
            summary.append({"label": "Fleiss' κ (filtering)", "value": f"{row['kappa']:.2f}"})
    return {
        "title": "Argument structure",
        "summary": summary,
        "tables": tables,
        "plots": [
            {"kind": "grouped", "table": "structure_metrics", "label": "source",
             "series": [key for key, _ in METRICS],
             "series_labels": dict(METRICS), "title": "Structures against the reference",
             "domain": [0.0, 1.0]},
        ],
        "notes": [],
        "comparison": {
            "scalars": {f"{label} (annotators)": (_means(human_metrics)[key] if human_metrics
                                                   else None) for key, label in METRICS},
            "vectors": {},
        },
    }
