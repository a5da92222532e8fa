"""Judge validation against humans (issue 11, item 3): the selector, the command and the page.

Stance (a label task with certainty) is validated on three subsets; citation recovery (a set
task) with the paper's union-and-standardise rule. Figures are hand-computed in the comments.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agreement.selectors import judge_validation
from annotation.models import Item
from tests import factories
from tests.agreement import helpers

# Humans a, b, c; "?" marks a "not sure" answer.
HUMANS = {
    "i1": ("agree", "agree", "agree"),
    "i2": ("disagree", "disagree", "disagree?"),
    "i3": ("agree", "agree", "neutral"),
    "i4": ("neutral", "disagree", "agree"),  # tied: no reference label
    "i5": ("neutral", "neutral", "neutral"),
    "i6": ("disagree", "disagree", "agree"),
}
JUDGE = {"i1": "agree", "i2": "agree", "i3": "agree", "i4": "neutral", "i5": "disagree",
         "i6": "disagree"}  # fmt: skip
PERFECT = {"i1": "agree", "i2": "disagree", "i3": "agree", "i4": "neutral", "i5": "neutral",
           "i6": "disagree"}  # fmt: skip


def _judge(project, name, labels, items):
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    judge, _ = Judge.objects.get_or_create(
        project=project, name=name, defaults={"kind": "llm", "model": "m", "prompt_version": "v1"}
    )
    setting = prompts.get(project.task_type).setting(project.config)
    for key, label in labels.items():
        JudgeResult.objects.create(
            item=items[key],
            judge=judge,
            prompt_version="v1",
            setting=setting,
            status=JudgeResult.Status.OK,
            answer={"label": label, "not_sure": False, "sentences": []},
        )


def stance_study(n_copies=1):
    project = factories.ProjectFactory(task_type="stance", config={})
    users = [factories.UserFactory() for _ in "abc"]
    for user in users:
        factories.MembershipFactory(project=project, user=user)
    items = {}
    for copy in range(n_copies):
        for n, (key, labels) in enumerate(HUMANS.items()):
            key = key if copy == 0 else f"{key}-{copy}"
            item = Item.objects.create(
                project=project,
                external_id=key,
                payload={"id": key, "claim": "c", "response": "r", "veracity": "true", "level": 0},
                prepared={"sentences": ["r"], "targets": []},
                position=copy * 10 + n,
            )
            items[key] = item
            for user, label in zip(users, labels, strict=True):
                helpers.answer(item, user, [], 0)
                answer = {"label": label.rstrip("?"), "not_sure": label.endswith("?")}
                item.annotations.filter(annotator=user).update(answer={**answer, "sentences": []})
    _judge(project, "gpt", JUDGE, items)
    _judge(project, "oracle", PERFECT, items)
    return project


def rows_by(tbl, *keys):
    return {
        tuple(row[k] for k in keys) if len(keys) > 1 else row[keys[0]]: row for row in tbl["rows"]
    }


@pytest.fixture
def stance(db):
    return stance_study()


def test_label_judge_on_all_units_by_hand(stance):
    result = judge_validation(project=stance, subset="all", n_boot=200)
    assert result["kind"] == "labels" and set(result["subsets"]) == {"all", "agreed", "certain"}
    assert result["counts"] == {"units_with_humans": 6, "units_in_subset": 5}
    gpt = rows_by(result["tables"]["judges"], "judge")["gpt"]
    # Units i1 i2 i3 i5 i6 (i4 tied). humans: agree disagree agree neutral disagree; judge: agree
    # agree agree disagree disagree. agree P 2/3 R 1 F1 0.8; disagree P R F1 1/2; neutral 0.
    assert (gpt["units"], gpt["not_in_subset"]) == (5, 1)
    assert gpt["accuracy"] == pytest.approx(3 / 5)
    assert gpt["macro_f1"] == pytest.approx((0.8 + 0.5) / 3)
    assert gpt["weighted_f1"] == pytest.approx((2 * 0.8 + 2 * 0.5) / 5)
    # Nominal alpha: n = 10 values (agree 5, disagree 4, neutral 1); 2 mismatched units →
    # D_o = 4/10, D_e = (100 - 25 - 16 - 1)/90 = 58/90 → alpha = 1 - 36/58 = 11/29.
    assert gpt["alpha"] == pytest.approx(11 / 29)
    assert gpt["weighted_f1_lower"] <= gpt["weighted_f1"] <= gpt["weighted_f1_upper"]
    per_class = rows_by(result["tables"]["per_class"], "judge", "label")
    assert per_class[("gpt", "agree")]["precision"] == pytest.approx(2 / 3)
    assert per_class[("gpt", "agree")]["recall"] == 1.0
    assert (per_class[("gpt", "neutral")]["support"], per_class[("gpt", "neutral")]["f1"]) == (1, 0)
    cells = rows_by(result["tables"]["confusion"], "judge", "reference", "predicted")
    assert cells[("gpt", "disagree", "agree")]["count"] == 1
    assert cells[("gpt", "neutral", "disagree")]["count"] == 1
    assert sum(r["count"] for r in result["tables"]["confusion"]["rows"]) == 10


def test_label_judge_on_perfect_agreement_and_certain_units_by_hand(stance):
    agreed = rows_by(
        judge_validation(project=stance, subset="agreed", n_boot=200)["tables"]["judges"],
        "judge",
    )["gpt"]
    # i1 agree, i2 disagree, i5 neutral; judge agree agree disagree: agree F1 2/3, others 0.
    assert agreed["units"] == 3 and agreed["accuracy"] == pytest.approx(1 / 3)
    assert agreed["macro_f1"] == pytest.approx(2 / 9)
    assert agreed["weighted_f1"] == pytest.approx(2 / 9)
    certain = rows_by(
        judge_validation(project=stance, subset="certain", n_boot=200)["tables"]["judges"],
        "judge",
    )["gpt"]
    # i1 agree, i3 agree, i5 neutral, i6 disagree (i2 has a "not sure", i4 is tied); judge agree
    # agree disagree disagree: agree F1 1, disagree F1 2/3, neutral 0.
    assert certain["units"] == 4 and certain["accuracy"] == pytest.approx(3 / 4)
    assert certain["macro_f1"] == pytest.approx(5 / 9)
    assert certain["weighted_f1"] == pytest.approx(2 / 3)


def test_a_perfect_judges_intervals_are_one_to_one(stance):
    for subset in ("all", "agreed", "certain"):
        result = judge_validation(project=stance, subset=subset, n_boot=300)
        oracle = rows_by(result["tables"]["judges"], "judge")["oracle"]
        for key in ("accuracy", "macro_f1", "weighted_f1", "alpha"):
            assert (oracle[key], oracle[f"{key}_lower"], oracle[f"{key}_upper"]) == (1, 1, 1)


def test_the_number_of_queries_does_not_grow_with_items(db, django_assert_max_num_queries):
    small, large = stance_study(), stance_study(n_copies=5)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small_queries:
        judge_validation(project=small, n_boot=20)
    with django_assert_max_num_queries(len(small_queries)):
        result = judge_validation(project=large, n_boot=20)
    assert result["counts"]["units_in_subset"] == 25
    assert len(small_queries) <= 12


def test_judge_report_command_prints_the_same_figures(stance):
    out = StringIO()
    call_command(
        "judge_report", "--project", stance.slug, "--json", "--subset", "certain",
        "--n-boot", "200", stdout=out,
    )  # fmt: skip
    printed = json.loads(out.getvalue())
    expected = judge_validation(project=stance, subset="certain", n_boot=200)
    assert printed["tables"] == json.loads(json.dumps(expected["tables"]))
    text = StringIO()
    call_command("judge_report", "--project", stance.slug, "--n-boot", "50", stdout=text)
    assert "Weighted F1" in text.getvalue() and "gpt" in text.getvalue()
    with pytest.raises(CommandError, match="unknown subset 'sure'"):
        call_command("judge_report", "--project", stance.slug, "--subset", "sure")


def test_citation_recovery_judge_with_the_none_rule(db, researcher):
    project, items, _ = helpers.seeded_study(researcher)
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    judge = Judge.objects.create(
        project=project, name="gpt", kind="llm", model="m", prompt_version="v1"
    )
    setting = prompts.get(project.task_type).setting(project.config)
    for claim, sentences in {"c0": [1], "c1": [2], "c2": [0, 1], "c3": [1]}.items():
        JudgeResult.objects.create(
            item=items[claim], judge=judge, prompt_version="v1", setting=setting,
            status=JudgeResult.Status.OK, answer={"sentences": sentences, "none": False},
        )  # fmt: skip
    result = judge_validation(project=project, n_boot=200)
    assert result["kind"] == "sets" and list(result["subsets"]) == ["all"]
    (row,) = result["tables"]["judges"]["rows"]
    # As in test_reports: annotator c's "none" on c3 counts (-1 → -2); alpha = 4/11.
    assert (row["judge"], row["units"]) == ("gpt", 4)
    assert row["alpha"] == pytest.approx(4 / 11)
    assert row["alpha_lower"] <= row["alpha_upper"]
    with pytest.raises(ValueError, match="use one of all"):
        judge_validation(project=project, subset="agreed")


# --- the page ------------------------------------------------------------------------------


def client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def _researcher_client(project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="researcher")
    return client_for(user)


def test_the_page_shows_every_judge_with_a_confusion_plot_and_csv_downloads(stance):
    from django.urls import reverse

    client = _researcher_client(stance)
    url = reverse("agreement-judge-validation", args=[stance.slug])
    page = client.get(url, {"subset": "certain"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Confusion matrix: gpt" in html and "Confusion matrix: oracle" in html
    assert "<svg" in html and "cdn" not in html.lower()
    assert "Weighted F1" in html and 'value="certain" checked' in html
    csv = client.get(url, {"subset": "certain", "download": "per_class"})
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    lines = csv.content.decode().splitlines()
    assert lines[0] == "judge,label,precision,recall,f1,support,predicted"
    assert "gpt,disagree,0.5,1.0,0.6666666666666666,1,2" in lines
    confusion = client.get(url, {"download": "confusion"}).content.decode().splitlines()
    assert confusion[0] == "judge,reference,predicted,count"
    assert client.get(url, {"download": "nope"}).status_code == 404
    bad = client.get(url, {"subset": "sure"})
    assert bad.status_code == 400 and "unknown subset" in bad.content.decode()
    # Linked from the judges page and the agreement dashboard.
    judges_page = client.get(reverse("project-judges", args=[stance.slug])).content.decode()
    assert url in judges_page


def test_the_page_is_for_researchers_only(stance):
    from django.urls import reverse

    annotator = stance.memberships.filter(role="annotator").first().user
    url = reverse("agreement-judge-validation", args=[stance.slug])
    assert client_for(annotator).get(url).status_code == 404
    assert client_for(factories.UserFactory()).get(url).status_code == 404


def test_the_confusion_heatmap_escapes_labels_and_draws_one_judge():
    from agreement.reports.plots import render

    rows = [
        {"judge": "g", "reference": "<b>", "predicted": "<b>", "count": 3},
        {"judge": "g", "reference": "<b>", "predicted": "x", "count": 1},
        {"judge": "h", "reference": "<b>", "predicted": "y", "count": 9},
    ]
    spec = {"kind": "heatmap", "table": "c", "row": "reference", "column": "predicted",
            "value": "count", "where": {"judge": "g"}, "title": "g"}  # fmt: skip
    svg = render(spec, {"c": {"rows": rows}})
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    assert ">3</text>" in svg and ">1</text>" in svg and ">9</text>" not in svg
    assert "75 % of the row" in svg


def test_a_task_type_without_judge_validation_says_so_once(db):
    from django.urls import reverse

    from agreement.reports.sections import judge_validation_for
    from annotation import task_types

    without = next(
        t.slug for t in task_types.all_task_types() if judge_validation_for(t.slug) is None
    )
    project = factories.ProjectFactory(task_type=without, config={})
    page = _researcher_client(project).get(
        reverse("agreement-judge-validation", args=[project.slug])
    )
    assert page.status_code == 200
    assert page.content.decode().count("This task type has no judge validation.") == 1
