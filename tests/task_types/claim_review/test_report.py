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
