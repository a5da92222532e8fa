"""The claim-review report section (from tests/agreement/test_task_reports.py): operations,
agreement with the pipeline, final labels and agreement between annotators per claim."""

from __future__ import annotations

import pytest

from agreement.reports import ReportOptions, build_report
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


PIPELINE_CLAIMS = [
    {"id": "c1", "text": "One.", "system_label": "supported", "evidence": [True]},
    {"id": "c2", "text": "Two.", "system_label": "refuted", "evidence": [True]},
    {"id": "c3", "text": "Three.", "system_label": "supported", "evidence": [True]},
]
REVIEWS = {
    "a": [
        {"id": "c1", "action": "keep", "agreement": "agree"},
        {"id": "c2", "action": "keep", "agreement": "disagree", "label": "supported"},
        {"id": "c3", "action": "remove", "reason": "redundant"},
        {"id": "new-1", "action": "add", "text": "Four.", "label": "supported"},
    ],
    "b": [
        {"id": "c1", "action": "keep", "agreement": "agree"},
        {"id": "c2", "action": "keep", "agreement": "agree"},
        {"id": "c3", "action": "remove", "reason": "redundant"},
    ],
}


def test_claim_review_report_counts_operations_agreements_and_labels():
    inp = ReportInput(
        task_type="claim_review",
        measures={"claims": "nominal"},
        items={
            "r1": ItemInfo(
                key="r1",
                extra={"model": "gpt-4o", "prompt_source": "freshQA", "claims": PIPELINE_CLAIMS},
            )
        },
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers={c: {"r1": {"claims": claims}} for c, claims in REVIEWS.items()},
        options=OPTIONS,
    )
    report = build_report(inp)
    groups = rows_by(report["tables"]["operations"], "group")
    assert set(groups) == {"All", "gpt-4o · freshQA"}
    everything = groups["All"]
    assert everything["samples"] == 2
    assert (
        everything["unchanged"],
        everything["revised"],
        everything["removed"],
        everything["added"],
    ) == (4, 0, 2, 1)
    assert (everything["agreed"], everything["disagreed_corrected"]) == (3, 1)
    labels = rows_by(report["tables"]["labels"], "label")
    assert (
        labels["supported"]["claims"],
        labels["redundant"]["claims"],
        labels["refuted"]["claims"],
    ) == (4, 2, 1)
    agreement = rows_by(report["tables"]["claim_agreement"], "attribute")
    assert agreement["Operation"]["units"] == 3 and agreement["Operation"]["pairwise"] == 1.0
    assert agreement["Final label"]["pairwise"] == pytest.approx(2 / 3)
    assert report["comparison"]["scalars"]["Agreed with the pipeline"] == pytest.approx(3 / 4)
    # The generic table still measures the "claims" field (one unit per claim and attribute).
    assert report["tables"]["agreement"]["rows"][0]["units"] > 0


def test_factuality_after_revision_gets_human_judge_and_prediction_powered_estimates():
    import numpy as np

    from agreement.reports.inputs import JUDGE

    items = {
        f"r{n}": ItemInfo(
            key=f"r{n}",
            extra={"model": "gpt-4o", "prompt_source": "freshQA", "claims": PIPELINE_CLAIMS},
        )
        for n in range(1, 9)
    }
    # Review "a" scores 3/3 = 1.0 after revision, review "b" 1/2 = 0.5 (c2 stays refuted).
    humans = {"a": ["r1", "r2"], "b": ["r1", "r2", "r3", "r4"]}
    judged = {"r1": "a", "r2": "a", "r3": "b", "r4": "b", "r5": "a", "r6": "a", "r7": "a"}
    judged["r8"] = "b"
    answers = {c: {u: {"claims": REVIEWS[c]} for u in units} for c, units in humans.items()}
    answers["judge:j"] = {u: {"claims": REVIEWS[r]} for u, r in judged.items()}
    inp = ReportInput(
        task_type="claim_review",
        measures={"claims": "nominal"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b"), CoderInfo("judge:j", kind=JUDGE, label="j")],
        answers=answers,
        options=OPTIONS,
    )
    report = build_report(inp)
    assert report["human_items"] == 4 and report["judge_items"] == {"j": 8}
    row = rows_by(report["tables"]["prediction_powered"], "figure")[
        "Factuality after revision, All"
    ]
    y, f, fu = (
        np.array([0.75, 0.75, 0.5, 0.5]),
        np.array([1, 1, 0.5, 0.5]),
        np.array([1, 1, 1, 0.5]),
    )
    assert row["human"] == pytest.approx(y.mean()) and row["human_n"] == 4
    assert row["judge_only"] == pytest.approx(np.r_[f, fu].mean()) and row["judge_n"] == 8
    lam = min(1.0, np.cov(y, f)[0, 1] / (f.var(ddof=1) + 4 / 4 * fu.var(ddof=1)))
    theta = lam * fu.mean() + (y - lam * f).mean()
    se = np.sqrt((y - lam * f).var(ddof=1) / 4 + lam**2 * fu.var(ddof=1) / 4)
    assert row["lam"] == pytest.approx(lam) and row["ppi"] == pytest.approx(theta)
    # a share: the interval is cut to [0, 1] (Estimand.bounds)
    assert row["ppi_upper"] == pytest.approx(min(theta + 1.959963984540054 * se, 1.0))
    assert row["ppi_lower"] == pytest.approx(max(theta - 1.959963984540054 * se, 0.0))
    # The per-group figure is there too; the judge's all-items factuality row is labelled.
    assert "Factuality after revision, gpt-4o · freshQA" in rows_by(
        report["tables"]["prediction_powered"], "figure"
    )
