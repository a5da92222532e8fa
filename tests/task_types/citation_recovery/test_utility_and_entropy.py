"""Xing et al.'s Table 9 (annotation entropy per generator × evidence source) and Table 10
(utility after filtering explanations by attribution: F1 = 1.0 and F1 ≥ 0.9)."""

import math

import pytest

from agreement.reports import ReportOptions, build_report
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput
from metrics.sets import annotation_entropy


def test_annotation_entropy_is_zero_for_unanimity_and_largest_for_a_uniform_spread():
    assert annotation_entropy([0, 0, 4, 0]) == 0.0
    assert annotation_entropy([1, 1, 1, 1]) == pytest.approx(2.0)  # log2(4) bits, the maximum
    assert annotation_entropy([2, 1, 1, 0]) == pytest.approx(1.5)
    assert math.isnan(annotation_entropy([0, 0]))  # nobody chose anything


def entry(sentences, helpfulness):
    return {"sentences": sentences, "none": not sentences, "helpfulness": helpfulness}


def study():
    """Two groups; item gold is sentence 1 of 3. Coders a, b, c."""
    items = {
        "x1": ItemInfo(key="x1", group="gpt-4 / human", gold={"evidence_id": 2, "sentences": [1]}),
        "x2": ItemInfo(key="x2", group="gpt-4 / human", gold={"evidence_id": 2, "sentences": [1]}),
        "y1": ItemInfo(key="y1", group="llama / auto", gold={"evidence_id": 2, "sentences": [1]}),
    }
    answers = {
        # x1: everyone exact (F1 1.0 each) → passes both filters.
        # x2: a exact, b {1, 2} (F1 2/3), c exact → mean F1 (1 + 2/3 + 1) / 3 = 0.889: fails both.
        # y1: a {0} (F1 0), b exact, c exact → mean 2/3: fails both.
        "a": {"x1": entry([1], 90), "x2": entry([1], 60), "y1": entry([0], 30)},
        "b": {"x1": entry([1], 80), "x2": entry([1, 2], 50), "y1": entry([1], 40)},
        "c": {"x1": entry([1], 70), "x2": entry([1], 40), "y1": entry([1], 50)},
    }
    for item in items:
        answers.setdefault(item, {})
    return ReportInput(
        task_type="citation_recovery",
        measures={"sentences": "jaccard", "helpfulness": "interval"},
        items=items,
        coders=[CoderInfo(c) for c in "abc"],
        answers={c: answers[c] for c in "abc"},
        config={"masking": "sample"},
        options=ReportOptions(n_boot=50),
    )


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


def test_utility_after_attribution_filters():
    report = build_report(study())
    rows = rows_by(report["tables"]["utility_filters"], "filter")
    assert rows["All explanations"]["items"] == 3
    assert rows["All explanations"]["helpfulness_mean"] == pytest.approx(510 / 9)
    assert rows["F1 = 1.0"]["items"] == 1
    assert rows["F1 = 1.0"]["helpfulness_mean"] == pytest.approx(80.0)
    assert rows["F1 ≥ 0.9"]["items"] == 1  # x2's 0.889 is below 0.9
    assert rows["F1 ≥ 0.9"]["helpfulness_mean"] == pytest.approx(80.0)
    assert rows["F1 = 1.0"]["utility"] is not None  # calibrated utility of the kept items


def test_annotation_entropy_per_group():
    report = build_report(study())
    groups = rows_by(report["tables"]["groups"], "group")
    # Options per item: sentences 0..2 and "none". x1: [0, 3, 0, 0] → 0 bits;
    # x2: sentence 1 ×3, sentence 2 ×1 → [0, 3, 1, 0] → H(3/4, 1/4); y1: [1, 2, 0, 0] → H(1/3, 2/3).
    h = lambda *p: -sum(q * math.log2(q) for q in p)  # noqa: E731
    assert groups["gpt-4 / human"]["entropy"] == pytest.approx((0 + h(0.75, 0.25)) / 2)
    assert groups["llama / auto"]["entropy"] == pytest.approx(h(1 / 3, 2 / 3))
