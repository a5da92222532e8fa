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


# --- UPHILL's breakdowns: certain-only agreement, similarity ranks, veracity × level ------------


def certain_input():
    """Coder c is not sure on t1 only; sentences of t0 carry similarity ranks 1 and 2."""
    answers = stance_answers()
    for item in answers["c"]:
        answers["c"][item]["not_sure"] = item == "t1"
    for coder, (first, second) in zip(
        "abc", (("agree", "neutral"), ("agree", "agree"), ("agree", "neutral")), strict=True
    ):
        answers[coder]["t0"]["sentences"] = [
            {"index": 3, "label": first, "not_sure": False},
            {"index": 5, "label": second, "not_sure": coder == "b"},
        ]
    items = {k: ItemInfo(key=k, extra=dict(v)) for k, v in STANCE_ITEMS.items()}
    items["t0"] = ItemInfo(key="t0", extra={**STANCE_ITEMS["t0"], "ranks": {"3": 1, "5": 2}})
    return ReportInput(
        task_type="stance",
        measures={"label": "nominal"},
        items=items,
        coders=[CoderInfo(c) for c in "abc"],
        answers=answers,
        options=OPTIONS,
    )


def test_certain_only_agreement_leaves_out_units_with_a_not_sure_answer():
    report = build_report(certain_input())
    rows = rows_by(report["tables"]["label_agreement"], "labels")
    certain = rows["Response (all certain)"]
    # t1 is left out (c not sure); t0 (a a n), f0 (d d d), f1 (a a d) remain.
    assert certain["units"] == 3 and certain["left_out"] == 1
    assert certain["pairwise"] == pytest.approx((1 / 3 + 1 + 1 / 3) / 3)
    assert certain["all_agree"] == pytest.approx(1 / 3)
    kept = {u: dict(zip("abc", STANCE_LABELS[u], strict=True)) for u in ("t0", "f0", "f1")}
    assert certain["alpha"] == pytest.approx(krippendorff_alpha(kept, "nominal"))
    assert rows["Response"]["units"] == 4  # all answers, as before
    # The sentence at rank 2 has b not sure: left out of the certain-only sentence rates.
    assert rows["Sentences (all certain)"]["units"] == 1
    assert rows["Sentences (all certain)"]["left_out"] == 1
    assert any(
        "1 response(s)" in note and "not sure" in note for note in report["section"]["notes"]
    )


def test_sentence_agreement_is_reported_per_similarity_rank():
    report = build_report(certain_input())
    ranks = rows_by(report["tables"]["sentence_ranks"], "rank")
    # rank 1: a a a (all certain) → full agreement; rank 2: b not sure → left out.
    assert ranks["1"]["units"] == 1 and ranks["1"]["pairwise"] == pytest.approx(1.0)
    assert ranks["2"]["units"] == 0 and ranks["2"]["left_out"] == 1


def test_accuracy_and_consistency_by_veracity_and_level():
    report = build_report(stance_input())
    rows = {(r["model"], r["veracity"]): r for r in report["tables"]["accuracy_veracity"]["rows"]}
    # Majorities: t0 agree (true, level 0: correct), t1 tie (left out), f0 disagree (correct),
    # f1 agree (false, level 1: wrong).
    assert rows[("m", "true")]["level_0"] == pytest.approx(1.0)
    assert rows[("m", "true")]["level_1"] is None
    assert rows[("m", "false")]["level_0"] == pytest.approx(1.0)
    assert rows[("m", "false")]["level_1"] == pytest.approx(0.0)
    assert rows[("m", "false")]["overall"] == pytest.approx(0.5)
    assert rows[("m", "false")]["consistency"] == pytest.approx(0.0)  # F: disagree, then agree
    assert rows[("m", "true")]["consistency"] is None  # T has no majority at level 1
    levels = rows_by(report["tables"]["consistency_levels"], "level")
    # Level 1 against the neutral level 0: only F has both, and it flips.
    assert levels["1"]["claims"] == 1 and levels["1"]["consistency"] == pytest.approx(0.0)
    assert levels["0"]["consistency"] == pytest.approx(1.0)


def test_stance_shares_by_model_veracity_and_level_count_every_answer():
    report = build_report(stance_input())
    rows = {
        (r["model"], r["veracity"], r["level"]): r
        for r in report["tables"]["shares_veracity"]["rows"]
    }
    assert rows[("m", "true", "0")]["answers"] == 3
    assert rows[("m", "true", "0")]["agree"] == pytest.approx(2 / 3)
    assert rows[("m", "true", "0")]["neutral"] == pytest.approx(1 / 3)
    assert rows[("m", "false", "1")]["agree"] == pytest.approx(2 / 3)
    assert rows[("m", "false", "1")]["disagree"] == pytest.approx(1 / 3)


def test_accuracy_is_also_computed_from_each_selected_judges_labels():
    from agreement.reports.inputs import JUDGE

    inp = stance_input()
    correct = {"t0": "agree", "t1": "agree", "f0": "disagree", "f1": "disagree"}
    inp.answers["judge:oracle"] = {unit: {"label": label} for unit, label in correct.items()}
    inp.coders.append(CoderInfo("judge:oracle", kind=JUDGE, label="oracle"))
    report = build_report(inp)
    rows = {(r["labeller"], r["model"]): r for r in report["tables"]["accuracy"]["rows"]}
    oracle = rows[("oracle", "m")]
    assert oracle["overall"] == pytest.approx(1.0) and oracle["responses"] == 4
    assert oracle["consistency"] == pytest.approx(1.0)  # T and F keep one stance across levels
    humans = rows[("Humans (majority)", "m")]
    assert humans["overall"] == pytest.approx(0.5)  # unchanged by the judge
    assert report["section"]["summary"][0]["value"] == "50.0 %"  # the headline stays human
    veracity = {
        (r["labeller"], r["veracity"]) for r in report["tables"]["accuracy_veracity"]["rows"]
    }
    assert ("oracle", "false") in veracity


def test_consistency_over_all_models_counts_each_models_claims_apart():
    # Issue 28: the pooled row took both models' responses of a claim as one claim's (0 % where
    # the models had 100 % and 0 %; level 0 read 83 % where the definition gives 100 %).
    items, answers = {}, {c: {} for c in "abc"}
    stances = {  # model -> (level 0, level 1) stance of claim C, given by all three coders
        "m1": ("agree", "agree"),
        "m2": ("disagree", "agree"),
    }
    for model, by_level in stances.items():
        for level, stance in enumerate(by_level):
            key = f"{model}-{level}"
            items[key] = ItemInfo(
                key=key, extra={"claim_id": "C", "veracity": "true", "level": level, "model": model}
            )
            for coder in "abc":
                answers[coder][key] = {"label": stance, "not_sure": False, "sentences": []}
    report = build_report(
        ReportInput(
            task_type="stance",
            measures={"label": "nominal"},
            items=items,
            coders=[CoderInfo(c) for c in "abc"],
            answers=answers,
            options=OPTIONS,
        )
    )
    rows = rows_by(report["tables"]["accuracy"], "model")
    assert rows["m1"]["consistency"] == 1.0 and rows["m2"]["consistency"] == 0.0
    assert rows["All models"]["consistency"] == pytest.approx(0.5)  # two (model, claim) pairs
    assert report["comparison"]["scalars"]["Consistency"] == pytest.approx(0.5)
    levels = {(r["model"], r["level"]): r for r in report["tables"]["consistency_levels"]["rows"]}
    assert levels[("All models", "0")]["consistency"] == 1.0
    assert levels[("All models", "0")]["claims"] == 2
    assert levels[("All models", "1")]["consistency"] == pytest.approx(0.5)
    by_veracity = {r["model"]: r for r in report["tables"]["accuracy_veracity"]["rows"]}
    assert by_veracity["All models"]["consistency"] == pytest.approx(0.5)
