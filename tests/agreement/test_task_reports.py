"""Report sections of task types whose tests have not moved to tests/task_types/<slug>/, and the
comparison of two reports.

The sections are plain functions of a ReportInput, so most tests build the input by hand; one
test per task type reads it from the database through ``gather`` (payload facts via
``item_extra``).
"""

from __future__ import annotations

import pytest

from agreement.reports import ReportOptions, build_report, compare_reports
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


# --- comparison ----------------------------------------------------------------------------------


def test_comparison_reproduces_the_reprohum_cv_star_and_spearman_from_published_mars():
    def fake(mars):
        return {"comparison": {"scalars": {}, "vectors": {"MAR · Coverage": mars}}}

    original = fake({"Just": 1.48, "Explain-Extr": 1.89, "Explain-MT": 1.68})
    reproduction = fake({"Just": 2.18, "Explain-Extr": 1.93, "Explain-MT": 1.62})
    result = compare_reports(reproduction, original, labels=("reproduction", "original"))
    cv = {row["entry"]: row["cv_star"] for row in result["vectors"]["rows"]}
    # ReproHum #0087-01 Table 2 (reproduction vs original), to the published two decimals.
    assert cv["Just"] == pytest.approx(38.14, abs=0.01)
    assert cv["Explain-Extr"] == pytest.approx(2.09, abs=0.01)
    assert cv["Explain-MT"] == pytest.approx(3.63, abs=0.01)
    (rho,) = result["spearman"]["rows"]
    assert rho["rho"] == pytest.approx(-0.5) and rho["entries"] == 3




# --- argument structure --------------------------------------------------------------------------

REFERENCE = [{"premises": ["E1", "E2"], "conclusion": "claim"}]
PARTIAL = [{"premises": ["E1"], "conclusion": "claim"}]


def test_argument_structure_report_compares_structures_with_the_reference_and_reviews():
    items = {
        "e1": ItemInfo(key="e1", gold={"structure": REFERENCE},
                       extra={"mode": "edit", "draft": PARTIAL}),
        **{k: ItemInfo(key=k, extra={"mode": "review", "draft": None})
           for k in ("r1", "r2", "r3")},
    }
    decisions = {"a": ("retain", "retain", "discard"), "b": ("retain", "discard", "discard")}
    answers = {c: {"e1": {"steps": steps}} for c, steps in (("a", PARTIAL), ("b", REFERENCE))}
    for coder, chosen in decisions.items():
        for item, decision in zip(("r1", "r2", "r3"), chosen, strict=True):
            answers[coder][item] = {"decision": decision, "faithfulness": True,
                                    "fluency": coder == "a", "validity": True}
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
