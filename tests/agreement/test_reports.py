"""The reports layer on a seeded project with hand-computed figures (see helpers.py).

Gold is sentence {1} on every item; the answers (a, b, c) are
c0: {1} {1} {1} · c1: {1} {1,2} {2} · c2: {0} {0} {1} · c3: {1} {1} {} (group A = c0, c1).
"""

from __future__ import annotations

import math

import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import interval_distance, jaccard_distance

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from agreement.reports.inputs import JUDGE, CoderInfo, ItemInfo, ReportInput
from metrics import krippendorff_alpha
from task_types.citation_recovery.report import claim_of
from tests import factories
from tests.agreement import helpers

OPTIONS = ReportOptions(n_boot=200)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


@pytest.fixture
def study(db, researcher):
    return helpers.seeded_study(researcher)


def report_for(project, annotator_filter=None, options=OPTIONS, **kwargs):
    annotator_filter = annotator_filter or AnnotatorFilter()
    return build_report(
        gather(project=project, annotator_filter=annotator_filter, options=options, **kwargs),
        annotator_filter,
    )


def test_sentence_agreement_matches_the_hand_computed_jaccard_alpha_and_raw_rates(study):
    project, _, users = study
    report = report_for(project)
    fields = rows_by(report["tables"]["agreement"], "field")
    sentences = fields["sentences"]
    # n = 12 values; observed ordered-pair sum 6 (units c1, c2, c3 contribute 2 each); expected
    # ordered-pair sum 80 over the value counts {1}:7 {1,2}:1 {2}:1 {0}:2 {}:1.
    # alpha = 1 - (n - 1) * 6 / 80 = 0.175.
    assert sentences["alpha"] == pytest.approx(0.175)
    assert sentences["distance"] == "jaccard"
    assert (sentences["units"], sentences["pairable_units"], sentences["coders"]) == (4, 4, 3)
    assert sentences["values"] == 12
    assert sentences["alpha_lower"] <= sentences["alpha"] <= sentences["alpha_upper"]
    # Pairs of equal sets: c0 3/3, c1 0/3, c2 1/3, c3 1/3.
    assert sentences["pairwise"] == pytest.approx((1 + 0 + 1 / 3 + 1 / 3) / 4)
    assert sentences["all_agree"] == pytest.approx(0.25)
    assert sentences["at_least_two"] == pytest.approx(0.75)
    # Independent implementation: NLTK (its Jaccard divides by zero on d(∅, ∅), which is 0).
    triples = [
        (name, claim, frozenset(helpers.ANSWERS[name][claim]))
        for name in ("a", "b", "c")
        for claim in ("c0", "c1", "c2", "c3")
    ]
    nltk_alpha = AnnotationTask(triples, lambda x, y: 0.0 if x == y else jaccard_distance(x, y))
    assert sentences["alpha"] == pytest.approx(nltk_alpha.alpha())


def test_helpfulness_agreement_is_interval_alpha_without_raw_rates(study):
    project, _, _ = study
    helpfulness = rows_by(report_for(project)["tables"]["agreement"], "field")["helpfulness"]
    triples = [
        (name, claim, helpers.HELPFULNESS[name][claim])
        for name in ("a", "b", "c")
        for claim in ("c0", "c1", "c2", "c3")
    ]
    expected = AnnotationTask(triples, interval_distance).alpha()
    assert helpfulness["alpha"] == pytest.approx(expected)
    assert helpfulness["distance"] == "interval"
    assert helpfulness["pairwise"] is None and helpfulness["all_agree"] is None


def test_attribution_scores_transparency_and_helpfulness_match_hand_computation(study):
    project, _, _ = study
    report = report_for(project)
    humans = report["tables"]["scores"]["rows"][0]
    assert humans["source"] == "Humans" and humans["answers"] == 12 and humans["n"] == 12
    # Per-answer F1: c0 1 1 1 · c1 1 2/3 0 · c2 0 0 1 · c3 1 1 0.
    f1 = [1, 1, 1, 1, 2 / 3, 0, 0, 0, 1, 1, 1, 0]
    assert humans["f1_mean"] == pytest.approx(sum(f1) / 12)
    assert humans["f1_sd"] == pytest.approx(
        math.sqrt(sum((v - sum(f1) / 12) ** 2 for v in f1) / 12)
    )
    assert humans["precision_mean"] == pytest.approx(7.5 / 12)
    assert humans["recall_mean"] == pytest.approx(8 / 12)
    # Mean F1 per item: 1, 5/9, 1/3, 2/3 → two of four reach 0.6.
    assert humans["transparency"] == pytest.approx(0.5)
    assert humans["helpfulness_mean"] == pytest.approx(700 / 12)
    assert report["section"]["summary"][0] == {"label": "Setting", "value": "sample"}


def test_the_transparency_threshold_is_an_option(study):
    project, _, _ = study
    report = report_for(
        project, options=ReportOptions(n_boot=10, parameters=(("transparency_threshold", 0.5),))
    )
    # 5/9 ≥ 0.5 too: three of four.
    assert report["tables"]["scores"]["rows"][0]["transparency"] == pytest.approx(0.75)


def test_group_table_has_scores_and_agreement_per_group(study):
    project, _, _ = study
    groups = rows_by(report_for(project)["tables"]["groups"], "group")
    assert list(groups) == ["A", "B"]
    a, b = groups["A"], groups["B"]
    assert (a["items"], a["answers"]) == (2, 6)
    assert a["f1_mean"] == pytest.approx((4 + 2 / 3) / 6)
    assert b["f1_mean"] == pytest.approx(0.5)
    assert a["transparency"] == pytest.approx(0.5) and b["transparency"] == pytest.approx(0.5)
    # Group A: counts {1}:4 {1,2}:1 {2}:1, observed 2, expected 13 → 1 - 5·2/13 = 3/13.
    assert a["alpha"] == pytest.approx(3 / 13)
    # Group B: counts {0}:2 {1}:3 {}:1, observed 4, expected 22 → 1 - 5·4/22 = 1/11.
    assert b["alpha"] == pytest.approx(1 / 11)
    assert a["utility"] is not None


def test_f1_distribution_counts_answers_per_bin(study):
    project, _, _ = study
    rows = report_for(project)["tables"]["f1_distribution"]["rows"]
    counts = {row["bin"]: row["Humans"] for row in rows}
    assert len(rows) == 10
    assert counts["0.0–0.1"] == 4  # four F1 = 0
    assert counts["0.6–0.7"] == 1  # 2/3
    assert counts["0.9–1.0"] == 7  # F1 = 1 falls in the last bin
    assert sum(counts.values()) == 12


def test_per_coder_table_gives_scores_calibration_and_leave_one_out_alpha(study):
    project, _, users = study
    report = report_for(project)
    coders = rows_by(report["tables"]["annotators"], "coder")
    a = coders[users["a"].username]
    assert a["answers"] == 4
    assert a["f1_mean"] == pytest.approx(0.75)  # 1, 1, 0, 1
    assert a["reliability"] is not None and a["reliability"] > 0
    # Without c, a and b agree on c0, c2, c3 and differ on c1.
    without_c = {
        claim: {n: frozenset(helpers.ANSWERS[n][claim]) for n in ("a", "b")}
        for claim in ("c0", "c1", "c2", "c3")
    }
    assert coders[users["c"].username]["alpha_without"] == pytest.approx(
        krippendorff_alpha(without_c, "jaccard")
    )
    utility = report["tables"]["utility"]["rows"]
    assert len(utility) == 4
    assert utility[0]["utility_mean"] >= utility[-1]["utility_mean"]


def test_disqualified_annotators_are_left_out_by_default_and_can_be_kept(study):
    project, items, users = study
    bad = factories.UserFactory()
    factories.MembershipFactory(
        project=project, user=bad, role="annotator", qualification="disqualified"
    )
    for _claim, item in items.items():
        helpers.answer(item, bad, [3], 0)
    default = report_for(project)
    assert len(default["coders"]) == 3
    assert default["excluded"][0]["reason"] == "disqualified"
    assert rows_by(default["tables"]["agreement"], "field")["sentences"]["alpha"] == pytest.approx(
        0.175
    )
    kept = report_for(project, AnnotatorFilter(exclude_disqualified=False))
    assert len(kept["coders"]) == 4


def test_annotators_can_be_excluded_or_chosen_by_pseudonym(study):
    project, _, users = study
    pseudonym = {u.username: u.memberships.get().pseudonym for u in users.values()}
    a, b, c = (pseudonym[users[n].username] for n in "abc")
    without_c = report_for(project, AnnotatorFilter(exclude=(c,)))
    assert {x["id"] for x in without_c["coders"]} == {a, b}
    only_ac = report_for(project, AnnotatorFilter(include=(a, c)))
    assert {x["id"] for x in only_ac["coders"]} == {a, c}
    assert {x["reason"] for x in only_ac["excluded"]} == {"not selected"}
    # An explicit choice counts a disqualified annotator too.
    users["c"].memberships.update(qualification="disqualified")
    assert {x["id"] for x in report_for(project, AnnotatorFilter(include=(c,)))["coders"]} == {c}


def test_only_current_versions_and_regular_items_count(study):
    project, items, users = study
    helpers.answer(items["c1"], users["c"], [1], 40)  # c revises c1 from {2} to {1}
    (control,) = helpers.make_item(project, "ctrl", "A", 9)
    control.kind = "control"
    control.save()
    helpers.answer(control, users["a"], [0])
    report = report_for(project)
    assert report["items"] == 4 and report["answers"] == 12
    sentences = rows_by(report["tables"]["agreement"], "field")["sentences"]
    data = {
        claim: {n: frozenset(helpers.ANSWERS[n][claim]) for n in "abc"}
        for claim in ("c0", "c1", "c2", "c3")
    }
    data["c1"]["c"] = frozenset({1})
    assert sentences["alpha"] == pytest.approx(krippendorff_alpha(data, "jaccard"))


def _items_of_group(project, group):
    from annotation.models import Item

    return set(
        Item.objects.filter(project=project, group=group).values_list("external_id", flat=True)
    )


scores_f1 = {"c0": 1.0, "c1": 0.0, "c2": 2 / 3, "c3": 1.0}  # the judge below against gold {1}


def test_judge_answers_are_compared_with_merged_humans_by_the_union_and_standardise_rule(study):
    project, _, _ = study
    judge = {"c0": [1], "c1": [2], "c2": [0, 1], "c3": [1]}
    answers = {k: {"sentences": v, "none": not v, "helpfulness": 50} for k, v in judge.items()}
    report = report_for(project, AnnotatorFilter(judges=("gpt",)), extra_judges={"gpt": answers})
    row = report["tables"]["judges"]["rows"][0]
    # Standardised (gold {1}, other → -2; annotator c's "none" on c3 is -1, outside gold → -2):
    # judge {1} {-2} {-2,1} {1}; humans {1} {1,-2} {-2,1} {-2,1}. n = 8; observed ordered-pair
    # sum 2 (c1 and c3 each 2 × 1/2); expected: values {1}×3, {-2}×1, {-2,1}×4, unordered sum
    # 3·1 + 12·1/2 + 4·1/2 = 11, ordered 22 → alpha = 1 - 7 · 2 / 22 = 4/11.
    assert row["judge"] == "gpt" and row["items"] == 4
    assert row["alpha"] == pytest.approx(4 / 11)
    scores = rows_by(report["tables"]["scores"], "source")
    assert scores["gpt"]["f1_mean"] == pytest.approx((1 + 0 + 2 / 3 + 1) / 4)
    assert any(c["kind"] == JUDGE for c in report["coders"])
    # Per generator / evidence source, beside the humans (the paper's judge tables).
    grouped = report["tables"]["judges_by_group"]["rows"]
    judge_rows = [r for r in grouped if r["source"] == "gpt"]
    assert sum(r["answers"] for r in judge_rows) == 4
    assert {r["source"] for r in grouped} == {"Humans", "gpt"}
    for row in judge_rows:
        units = [k for k, item in judge.items() if k in _items_of_group(project, row["group"])]
        mine = [scores_f1[k] for k in units]
        assert row["f1_mean"] == pytest.approx(sum(mine) / len(mine))
    # Without choosing the judge, it is only offered.
    plain = report_for(project, extra_judges={"gpt": answers})
    assert "judges" not in plain["tables"] and plain["available_judges"] == ["gpt"]


def test_full_setting_averages_each_claim_over_its_evidences_first(db):
    project = factories.ProjectFactory(config={"masking": "full", "seed": 13})
    first = helpers.make_item(project, "k1", "G", 0, masked=None, sentences=2)
    second = helpers.make_item(project, "k2", "G", 1, masked=None, sentences=2)
    assert [i.external_id for i in first] == ["k1#1", "k1#2"]
    assert claim_of("k1#2", first[1].gold) == "k1"
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user)
    # Gold: k#1 → {0}, k#2 → {1}. k1: F1 1 and 0 (mean 0.5); k2: F1 1 and 1 (mean 1).
    helpers.answer(first[0], user, [0])
    helpers.answer(first[1], user, [0])
    helpers.answer(second[0], user, [0])
    helpers.answer(second[1], user, [1])
    humans = report_for(project)["tables"]["scores"]["rows"][0]
    assert humans["n"] == 2  # claims
    assert humans["f1_mean"] == pytest.approx(0.75)
    assert humans["f1_sd"] == pytest.approx(0.25)
    assert humans["transparency"] == pytest.approx(0.5)  # k1 has an evidence below 0.6


def test_a_field_without_pairable_units_reports_why_instead_of_failing(db):
    project = factories.ProjectFactory()
    (item,) = helpers.make_item(project, "solo", "G", 0)
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user)
    helpers.answer(item, user, [1])
    row = rows_by(report_for(project)["tables"]["agreement"], "field")["sentences"]
    assert row["alpha"] is None and "no pairable unit" in row["alpha_error"]


def test_a_project_without_answers_still_gives_a_report(db):
    project = factories.ProjectFactory()
    helpers.make_item(project, "x", "G", 0)
    report = report_for(project)
    assert report["answers"] == 0 and report["tables"]["scores"]["rows"][0]["answers"] == 0


def test_dict_valued_fields_become_one_unit_per_key_for_task_types_without_a_report_module():
    answers = {
        "x": {"i1": {"rank": {"s1": 1, "s2": 2}}, "i2": {"rank": {"s1": 2, "s2": 1}}},
        "y": {"i1": {"rank": {"s1": 1, "s2": 2}}, "i2": {"rank": {"s1": 1, "s2": 2}}},
    }
    inp = ReportInput(
        task_type="no_such_report_module",
        measures={"rank": "ordinal"},
        items={k: ItemInfo(key=k) for k in ("i1", "i2")},
        coders=[CoderInfo("x"), CoderInfo("y")],
        answers=answers,
        options=OPTIONS,
    )
    report = build_report(inp)
    row = report["tables"]["agreement"]["rows"][0]
    assert row["units"] == 4
    expected = krippendorff_alpha(
        {
            "i1::s1": {"x": 1, "y": 1},
            "i1::s2": {"x": 2, "y": 2},
            "i2::s1": {"x": 2, "y": 1},
            "i2::s2": {"x": 1, "y": 2},
        },
        "ordinal",
    )
    assert row["alpha"] == pytest.approx(expected)
    assert report["section"] is None


def test_reports_are_json_safe_with_undefined_figures_as_null(study):
    import json

    project, _, _ = study
    report = report_for(project)
    json.dumps(report, allow_nan=False)  # raises on NaN


def test_gathering_and_building_take_the_same_number_of_queries_as_answers_grow(
    db, django_assert_max_num_queries
):
    project = factories.ProjectFactory(annotators_per_item=3)
    users = [factories.UserFactory() for _ in range(3)]
    for user in users:
        factories.MembershipFactory(project=project, user=user)

    def add(start, count):
        for n in range(start, start + count):
            (item,) = helpers.make_item(project, f"q{n}", "G" if n % 2 else "H", n)
            for k, user in enumerate(users):
                helpers.answer(item, user, [1] if (n + k) % 3 else [0, 1], 10 * k)

    # Memberships, items, current annotations, annotations collected elsewhere, judges offered.
    add(0, 3)
    with django_assert_max_num_queries(5):
        report_for(project)
    add(3, 30)
    with django_assert_max_num_queries(5):
        report = report_for(project)
    assert report["answers"] == 99


def test_judge_answers_come_from_llm_judges_results_when_a_judge_is_selected(study):
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    project, items, _ = study
    judge = Judge.objects.create(
        project=project, name="gpt-judge", kind="llm", model="m", prompt_version="v1"
    )
    setting = prompts.get(project.task_type).setting(project.config)
    chosen = {"c0": [1], "c1": [2], "c2": [0, 1], "c3": [1]}
    for claim, sentences in chosen.items():
        JudgeResult.objects.create(
            item=items[claim],
            judge=judge,
            prompt_version="v1",
            setting=setting,
            status=JudgeResult.Status.OK,
            answer={"sentences": sentences, "none": False, "helpfulness": 50},
        )
    JudgeResult.objects.create(
        item=items["c0"],
        judge=judge,
        prompt_version="v0",
        setting=setting,
        status=JudgeResult.Status.OK,
        answer={"sentences": [3], "none": False, "helpfulness": 1},
    )
    offered = report_for(project)
    assert offered["available_judges"] == ["gpt-judge"] and "judges" not in offered["tables"]
    report = report_for(project, AnnotatorFilter(judges=("gpt-judge",)))
    (row,) = report["tables"]["judges"]["rows"]
    assert row["alpha"] == pytest.approx(4 / 11)  # as with the same answers given by hand
    assert [c["id"] for c in report["coders"] if c["kind"] == "judge"] == ["judge:gpt-judge"]


def test_the_generic_alpha_ignores_free_wording_and_keeps_decisions():
    from agreement.reports.generic import reliability_data

    def answer(text, action="revise"):
        return {
            "claims": [{"id": "c1", "action": "keep"}, {"id": "c2", "action": action, "text": text}]
        }

    same = {"A": {"i1": answer("It is 324 metres tall.")}, "B": {"i1": answer("It is 324 m tall.")}}
    data = reliability_data(same, "claims", "nominal")
    assert not any(unit.endswith("text") for unit in data)
    assert all(len(set(coders.values())) == 1 for coders in data.values())
    different = {"A": {"i1": answer("x")}, "B": {"i1": answer("x", action="remove")}}
    assert any(
        len(set(c.values())) == 2 for c in reliability_data(different, "claims", "nominal").values()
    )
