"""The stance report section: shares and factual accuracy by presupposition level, consistency,
label agreement, and the comparison of two reports.

The section is a plain function of a ReportInput, so most tests build the input by hand; one
reads it from the database through ``gather`` (payload facts via ``item_extra``).
"""

from __future__ import annotations

import pytest

from agreement.reports import ReportOptions, build_report, compare_reports
from agreement.reports.gather import gather
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput
from annotation.models import Item
from metrics import cv_star, krippendorff_alpha
from tests import factories
from tests.agreement import helpers

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


STANCE_ITEMS = {
    "t0": {"claim_id": "T", "veracity": "true", "level": 0, "model": "m"},
    "t1": {"claim_id": "T", "veracity": "true", "level": 1, "model": "m"},
    "f0": {"claim_id": "F", "veracity": "false", "level": 0, "model": "m"},
    "f1": {"claim_id": "F", "veracity": "false", "level": 1, "model": "m"},
}
STANCE_LABELS = {  # a, b, c
    "t0": ("agree", "agree", "neutral"),
    "t1": ("agree", "disagree", "neutral"),
    "f0": ("disagree", "disagree", "disagree"),
    "f1": ("agree", "agree", "disagree"),
}


def stance_answers():
    answers = {c: {} for c in "abc"}
    for item, labels in STANCE_LABELS.items():
        for coder, label in zip("abc", labels, strict=True):
            answers[coder][item] = {"label": label, "not_sure": coder == "c", "sentences": []}
    for coder, label in zip("abc", ("agree", "agree", "disagree"), strict=True):
        answers[coder]["t0"]["sentences"] = [{"index": 0, "label": label, "not_sure": False}]
    return answers


def stance_input():
    return ReportInput(
        task_type="stance",
        measures={"label": "nominal"},
        items={k: ItemInfo(key=k, extra=v) for k, v in STANCE_ITEMS.items()},
        coders=[CoderInfo(c) for c in "abc"],
        answers=stance_answers(),
        options=OPTIONS,
    )


def test_stance_shares_by_level_count_every_answer():
    report = build_report(stance_input())
    shares = rows_by(report["tables"]["shares"], "level")
    assert shares["0"]["answers"] == 6
    assert shares["0"]["agree"] == pytest.approx(2 / 6)
    assert shares["0"]["disagree"] == pytest.approx(3 / 6)
    assert shares["0"]["neutral"] == pytest.approx(1 / 6)
    assert shares["1"]["agree"] == pytest.approx(3 / 6)
    assert shares["1"]["not_sure"] == pytest.approx(2 / 6)
    assert shares["0"]["name"] == "Neutral"


def test_stance_accuracy_and_consistency_use_the_majority_label_and_skip_ties():
    report = build_report(stance_input())
    (row,) = report["tables"]["accuracy"]["rows"]
    # Majorities: t0 agree (correct), t1 tie (left out), f0 disagree (correct), f1 agree (wrong).
    assert row["responses"] == 3
    assert row["level_0"] == pytest.approx(1.0) and row["level_1"] == pytest.approx(0.0)
    assert row["overall"] == pytest.approx(0.5)
    # Only claim F has both levels: disagree then agree → inconsistent.
    assert row["consistency"] == pytest.approx(0.0)
    assert any("tied labels" in note for note in report["section"]["notes"])
    assert report["comparison"]["scalars"]["Factual accuracy"] == pytest.approx(0.5)


def test_stance_label_agreement_on_responses_and_sentences():
    report = build_report(stance_input())
    rows = rows_by(report["tables"]["label_agreement"], "labels")
    response = rows["Response"]
    assert response["pairwise"] == pytest.approx((1 / 3 + 0 + 1 + 1 / 3) / 4)
    assert response["all_agree"] == pytest.approx(0.25)
    assert response["at_least_two"] == pytest.approx(0.75)
    data = {i: dict(zip("abc", labels, strict=True)) for i, labels in STANCE_LABELS.items()}
    assert response["alpha"] == pytest.approx(krippendorff_alpha(data, "nominal"))
    assert rows["Sentences"]["units"] == 1 and rows["Both"]["units"] == 5
    generic = report["tables"]["agreement"]["rows"][0]
    assert generic["alpha"] == pytest.approx(response["alpha"])


def test_stance_report_reads_levels_and_veracity_from_the_database(db):
    project = factories.ProjectFactory(task_type="stance", config={})
    users = {c: factories.UserFactory() for c in "abc"}
    for user in users.values():
        factories.MembershipFactory(project=project, user=user)
    answers = stance_answers()
    for n, (item_id, facts) in enumerate(STANCE_ITEMS.items()):
        item = Item.objects.create(
            project=project,
            external_id=item_id,
            payload={"id": item_id, "claim": "c", "response": "r", **facts},
            prepared={"sentences": ["r"], "targets": [{"index": 0}]},
            position=n,
        )
        for coder, user in users.items():
            helpers.answer(item, user, [], 0)
            item.annotations.filter(annotator=user).update(answer=answers[coder][item_id])
    report = build_report(gather(project=project, options=OPTIONS))
    (row,) = report["tables"]["accuracy"]["rows"]
    assert row["overall"] == pytest.approx(0.5)


def test_two_stance_reports_compare_accuracy_by_level():
    first = build_report(stance_input())
    result = compare_reports(first, first, labels=("a", "b"))
    rows = rows_by(result["vectors"], "entry")
    assert set(rows) == {"level 0", "level 1"}
    scalars = rows_by(result["scalars"], "measure")
    assert scalars["Factual accuracy"]["cv_star"] == pytest.approx(cv_star([0.5, 0.5]))
