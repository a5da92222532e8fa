"""The argument-structure report section: structures against the reference, review figures."""

from __future__ import annotations

import json

import pytest

from agreement.reports import ReportOptions, build_report
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput

OPTIONS = ReportOptions(n_boot=100)


REFERENCE = [{"premises": ["E1", "E2"], "conclusion": "claim"}]
PARTIAL = [{"premises": ["E1"], "conclusion": "claim"}]


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


PARTIAL = [{"premises": ["E1"], "conclusion": "claim"}]


def test_argument_structure_report_compares_structures_with_the_reference_and_reviews():
    items = {
        "e1": ItemInfo(
            key="e1", gold={"structure": REFERENCE}, extra={"mode": "edit", "draft": PARTIAL}
        ),
        **{k: ItemInfo(key=k, extra={"mode": "review", "draft": None}) for k in ("r1", "r2", "r3")},
    }
    decisions = {"a": ("retain", "retain", "discard"), "b": ("retain", "discard", "discard")}
    answers = {c: {"e1": {"steps": steps}} for c, steps in (("a", PARTIAL), ("b", REFERENCE))}
    for coder, chosen in decisions.items():
        for item, decision in zip(("r1", "r2", "r3"), chosen, strict=True):
            answers[coder][item] = {
                "decision": decision,
                "faithfulness": True,
                "fluency": coder == "a",
                "validity": True,
            }
    inp = ReportInput(
        task_type="argument_structure",
        measures={"edges": "jaccard", "decision": "nominal"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers=answers,
        options=OPTIONS,
    )
    report = build_report(inp)
    metrics = rows_by(report["tables"]["structure_metrics"], "source")
    # a: edge "E1 → claim" vs "E1 & E2 → claim" do not match: 0; b matches: 1 → mean 0.5.
    assert metrics["Annotators"]["exact_match_similarity"] == pytest.approx(0.5)
    assert metrics["Annotators"]["leaf_f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert metrics["Drafts (starting point)"]["exact_match_similarity"] == 0.0
    # b is the reference itself: Structure Similarity 1 with any scorer; a scores in between.
    similarity = metrics["Annotators"]["structure_similarity"]
    assert 0.5 < similarity < 1.0
    section = report["sections"][0] if "sections" in report else report
    assert "all-MiniLM-L6-v2" in json.dumps(section)
    review = rows_by(report["tables"]["review"], "measure")
    assert review["Decision: retain"]["share"] == pytest.approx(0.5)
    assert review["Fluency: yes"]["share"] == pytest.approx(0.5)
    # P̄ = (1 + 0 + 1) / 3, p(retain) = 1/2 → κ = (2/3 - 1/2) / (1/2) = 1/3.
    assert review["Fleiss' κ (retain / discard)"]["kappa"] == pytest.approx(1 / 3)


def test_discarded_claims_are_counted_and_left_out_of_the_structure_metrics():
    items = {"e1": ItemInfo(key="e1", gold={"structure": REFERENCE}, extra={"mode": "edit"})}
    answers = {
        "a": {"e1": {"steps": REFERENCE}},
        "b": {"e1": {"steps": [], "invalid_causal_relation": True}},
    }
    inp = ReportInput(
        task_type="argument_structure",
        measures={"edges": "jaccard"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers=answers,
        options=OPTIONS,
        config={"mode": "edit", "similarity_scorer": "none"},
    )
    report = build_report(inp)
    table = report["tables"]["structure_metrics"]
    (row,) = table["rows"]
    # Only a's structure is compared (it is the reference): 1.0, not a mean with a zero.
    assert row["structures"] == 1 and row["exact_match_similarity"] == 1.0
    assert row["structure_similarity"] is None
    assert "1 answer(s) discarded the claim as not a valid causal relation" in table["note"]
    assert "configured off" in table["note"]


def test_human_evaluation_is_reported_per_model_and_task():
    def item(key, model, task):
        return ItemInfo(key=key, extra={"mode": "review", "model": model, "task": task})

    items = {
        "g1": item("g1", "gpt-4", "T3"),
        "g2": item("g2", "gpt-4", "T3"),
        "l1": item("l1", "llama", "T3"),
    }
    answers = {
        "a": {
            "g1": {"validity": True, "outcome": "win"},
            "g2": {"validity": False, "outcome": "lose"},
            "l1": {"validity": True, "outcome": "tie"},
        },
        "b": {
            "g1": {"validity": True, "outcome": "tie"},
            "g2": {"validity": True, "outcome": "lose"},
        },
    }
    inp = ReportInput(
        task_type="argument_structure",
        measures={"validity": "nominal", "outcome": "nominal"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers=answers,
        options=OPTIONS,
        config={"mode": "review", "similarity_scorer": "none"},
    )
    rows = rows_by(build_report(inp)["tables"]["human_evaluation"], "model")
    # gpt-4 / T3: 4 answers, 3 valid; win 1, tie 1, lose 2.
    assert rows["gpt-4"]["task"] == "T3" and rows["gpt-4"]["answers"] == 4
    assert rows["gpt-4"]["validity"] == pytest.approx(3 / 4)
    assert (rows["gpt-4"]["win"], rows["gpt-4"]["tie"], rows["gpt-4"]["lose"]) == (0.25, 0.25, 0.5)
    assert rows["llama"]["answers"] == 1 and rows["llama"]["tie"] == 1.0
