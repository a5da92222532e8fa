"""The argument-structure report section: structures against the reference, review figures."""

from __future__ import annotations

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
    # a: edges {E1→claim} vs {E1→claim, E2→claim} = 1/2; b matches: 1 → mean 0.75.
    assert metrics["Annotators"]["edge_similarity"] == pytest.approx(0.75)
    assert metrics["Annotators"]["leaf_f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert metrics["Drafts (starting point)"]["edge_similarity"] == pytest.approx(0.5)
    review = rows_by(report["tables"]["review"], "measure")
    assert review["Decision: retain"]["share"] == pytest.approx(0.5)
    assert review["Fluency: yes"]["share"] == pytest.approx(0.5)
    # P̄ = (1 + 0 + 1) / 3, p(retain) = 1/2 → κ = (2/3 - 1/2) / (1/2) = 1/3.
    assert review["Fleiss' κ (retain / discard)"]["kappa"] == pytest.approx(1 / 3)
