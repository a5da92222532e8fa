"""The researcher dashboard, its CSV downloads, the project comparison and the command."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from agreement.reports import AnnotatorFilter
from tests import factories
from tests.agreement import helpers


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(db, researcher):
    return helpers.seeded_study(researcher)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(project, suffix=""):
    return f"/p/{project.slug}/agreement/{suffix}"


def read_csv(response):
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_researchers_see_progress_agreement_groups_and_plots(study, researcher):
    project, _, users = study
    response = client_for(researcher).get(url(project))
    assert response.status_code == 200
    html = response.content.decode()
    assert "0.175" in html  # alpha sentences (hand-computed in test_reports)
    assert "By item group" in html and "<svg" in html
    assert "up to date" in html
    for user in users.values():
        assert user.username in html
    progress = {row["username"]: row for row in response.context["progress"]["annotators"]}
    assert progress[users["a"].username]["median_time_s"] == 25.0
    assert progress[users["b"].username]["median_time_s"] == 5.0
    assert progress[users["c"].username]["median_time_s"] == 60.0
    assert response.context["progress"]["complete_items"] == 4


def test_the_project_page_links_to_the_dashboard(study, researcher):
    project, _, _ = study
    page = client_for(researcher).get(f"/p/{project.slug}/")
    assert url(project).encode() in page.content


@pytest.mark.parametrize("role", ["annotator", "reviewer", None])
def test_anyone_but_a_researcher_gets_404(study, role):
    project, _, _ = study
    user = factories.UserFactory()
    if role:
        factories.MembershipFactory(project=project, user=user, role=role)
    client = client_for(user)
    assert client.get(url(project)).status_code == 404
    assert client.get(url(project) + "?download=agreement").status_code == 404
    assert client.get(url(project, "compare/") + f"?with={project.slug}").status_code == 404


def test_an_annotator_of_the_project_gets_404_and_anonymous_users_must_log_in(study):
    project, _, users = study
    assert client_for(users["a"]).get(url(project)).status_code == 404
    response = Client().get(url(project))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_every_table_downloads_as_csv_with_full_precision(study, researcher):
    project, _, _ = study
    client = client_for(researcher)
    page = client.get(url(project))
    names = ["agreement"] + page.context["report"]["section"]["tables"]
    assert set(names) >= {
        "agreement",
        "scores",
        "groups",
        "f1_distribution",
        "annotators",
        "utility",
    }
    for name in names:
        assert f"download={name}" in page.content.decode()
        response = client.get(url(project) + f"?download={name}")
        assert response.status_code == 200 and read_csv(response)
        assert f"{project.slug}-{name}.csv" in response["Content-Disposition"]
    rows = {r["field"]: r for r in read_csv(client.get(url(project) + "?download=agreement"))}
    assert float(rows["sentences"]["alpha"]) == pytest.approx(0.175, abs=1e-12)
    groups = {r["group"]: r for r in read_csv(client.get(url(project) + "?download=groups"))}
    assert float(groups["A"]["alpha"]) == pytest.approx(3 / 13, abs=1e-12)
    assert {"f1_mean", "f1_sd", "alpha_lower", "alpha_upper"} <= set(groups["A"])
    progress = read_csv(client.get(url(project) + "?download=progress"))
    assert {r["median_time_s"] for r in progress} == {"25.0", "5.0", "60.0"}
    assert client.get(url(project) + "?download=nothing").status_code == 404


def test_csv_cells_that_look_like_formulas_are_neutralised(db, researcher):
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    (item,) = helpers.make_item(project, "x", "=HYPERLINK(1)", 0)
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user)
    helpers.answer(item, user, [1])
    rows = read_csv(client_for(researcher).get(url(project) + "?download=groups"))
    assert rows[0]["group"] == "'=HYPERLINK(1)"


def test_the_coder_choice_comes_from_the_query_and_applies_to_downloads(study, researcher):
    project, _, users = study
    a, b = (users[n].memberships.get().pseudonym for n in "ab")
    client = client_for(researcher)
    response = client.get(url(project) + f"?select=1&include={a}&include={b}")
    assert [c["id"] for c in response.context["report"]["coders"]] == sorted(
        [a, b],
        key=lambda p: next(
            u.username for u in users.values() if u.memberships.get().pseudonym == p
        ),
    )
    assert response.context["report"]["filter"]["include"] == sorted([a, b])
    rows = read_csv(
        client.get(url(project) + f"?select=1&include={a}&include={b}&download=agreement")
    )
    assert rows[0]["coders"] == "2"
    excluded = client.get(url(project) + f"?exclude={a}")
    assert len(excluded.context["report"]["coders"]) == 2
    refused = client.get(url(project) + "?transparency_threshold=2")
    assert refused.status_code == 400
    assert b"transparency_threshold must be a number between 0 and 1" in refused.content
    assert client.get(url(project) + "?transparency_threshold=0.5").status_code == 200
    assert client.get(url(project) + "?transparency_threshold=abc").status_code == 400


def test_disqualified_annotators_are_unchecked_by_default(study, researcher):
    project, _, users = study
    users["c"].memberships.update(qualification="disqualified")
    response = client_for(researcher).get(url(project))
    counted = {m["username"]: m["counted"] for m in response.context["members"]}
    assert counted == {
        users["a"].username: True,
        users["b"].username: True,
        users["c"].username: False,
    }
    assert "disqualified" in response.content.decode()


def test_a_large_project_shows_computing_and_a_download_waits(
    study, researcher, settings, monkeypatch
):
    from agreement import celery_tasks

    settings.CONCORD_AGREEMENT_INLINE_MAX_ANSWERS = 0
    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", lambda pk: None)
    project, _, _ = study
    client = client_for(researcher)
    page = client.get(url(project))
    assert page.status_code == 200 and "in the background" in page.content.decode()
    assert '<meta http-equiv="refresh"' in page.content.decode()
    assert client.get(url(project) + "?download=agreement").status_code == 409


def test_a_failed_computation_shows_the_error_and_can_be_retried(
    study, researcher, monkeypatch, django_capture_on_commit_callbacks
):
    from agreement import celery_tasks, services

    project, _, _ = study

    def broken(**kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(services, "gather", broken)
    sent = []
    monkeypatch.setattr(celery_tasks.compute_snapshot, "delay", sent.append)
    client = client_for(researcher)
    page = client.get(url(project))
    assert "The computation failed" in page.content.decode()
    pk = page.context["state"].failed.pk
    # another project's researcher cannot retry it through their own dashboard
    other = factories.ProjectFactory()
    factories.MembershipFactory(project=other, user=researcher, role="researcher")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url(other), {"snapshot": pk, "action": "retry"})
    assert sent == []
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(project), {"snapshot": pk, "action": "retry"})
    assert response.status_code == 302
    assert sent == [pk]


def test_the_dashboard_takes_the_same_number_of_queries_as_answers_grow(
    db, researcher, django_assert_max_num_queries
):
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    users = [factories.UserFactory() for _ in range(3)]
    for user in users:
        factories.MembershipFactory(project=project, user=user)
    client = client_for(researcher)

    def add(start, count):
        for n in range(start, start + count):
            (item,) = helpers.make_item(project, f"q{n}", "G" if n % 2 else "H", n)
            for k, user in enumerate(users):
                helpers.answer(item, user, [1] if (n + k) % 3 else [2], 10 * k)

    add(0, 2)
    client.get(url(project))  # warm the session and caches
    add(2, 1)
    with django_assert_max_num_queries(40) as small:
        client.get(url(project))
    add(3, 40)
    with django_assert_max_num_queries(len(small.captured_queries)):
        response = client.get(url(project))
    assert response.context["report"]["answers"] == 129
    # A cached page is cheaper still.
    with django_assert_max_num_queries(len(small.captured_queries)):
        client.get(url(project))


def make_copy(study_project, researcher, answers_of_c):
    """A reproduction: the same four items, new annotators; c's answers replaced."""
    copy = factories.ProjectFactory(name="Reproduction")
    factories.MembershipFactory(project=copy, user=researcher, role="researcher")
    items = {}
    for n, claim in enumerate(["c0", "c1", "c2", "c3"]):
        (items[claim],) = helpers.make_item(copy, claim, "A" if n < 2 else "B", n)
    for name in "abc":
        user = factories.UserFactory()
        factories.MembershipFactory(project=copy, user=user)
        for claim, item in items.items():
            chosen = answers_of_c[claim] if name == "c" else helpers.ANSWERS[name][claim]
            helpers.answer(item, user, chosen, helpers.HELPFULNESS[name][claim])
    return copy


def test_two_projects_over_the_same_items_are_compared_side_by_side(study, researcher):
    project, _, _ = study
    copy = make_copy(project, researcher, {"c0": [1], "c1": [1], "c2": [1], "c3": [1]})
    client = client_for(researcher)
    dashboard = client.get(url(project))
    assert copy.slug in dashboard.content.decode()
    response = client.get(url(project, "compare/") + f"?with={copy.slug}")
    assert response.status_code == 200
    comparison = response.context["comparison"]
    vector = {row["entry"]: row for row in comparison["vectors"]["rows"]}
    # Original: group A F1 (4 + 2/3) / 6, B 0.5. Copy (c answers {1} everywhere): A (5 + 2/3) / 6,
    # B 4/6.
    assert vector["A"]["a"] == pytest.approx((4 + 2 / 3) / 6)
    assert vector["A"]["b"] == pytest.approx((5 + 2 / 3) / 6)
    assert vector["B"]["b"] == pytest.approx(4 / 6)
    (spearman,) = comparison["spearman"]["rows"]
    assert spearman["entries"] == 2 and spearman["rho"] == pytest.approx(1.0)
    scalars = {row["measure"]: row for row in comparison["scalars"]["rows"]}
    f1 = scalars["F1 (humans)"]
    from metrics import cv_star

    assert f1["cv_star"] == pytest.approx(cv_star([f1["a"], f1["b"]]))
    assert "α sentences" in scalars
    assert "<svg" in response.content.decode()
    download = client.get(url(project, "compare/") + f"?with={copy.slug}&download=vectors")
    assert {r["entry"] for r in read_csv(download)} == {"A", "B"}


def test_comparison_is_restricted_to_shared_items(study, researcher):
    project, _, _ = study
    copy = factories.ProjectFactory()
    factories.MembershipFactory(project=copy, user=researcher, role="researcher")
    helpers.make_item(copy, "c0", "A", 0)
    response = client_for(researcher).get(url(project, "compare/") + f"?with={copy.slug}")
    assert response.context["shared_items"] == (1, 1)


def test_comparing_with_a_project_one_is_not_a_researcher_of_gives_404(study, researcher):
    project, _, _ = study
    foreign = factories.ProjectFactory()
    response = client_for(researcher).get(url(project, "compare/") + f"?with={foreign.slug}")
    assert response.status_code == 404


def test_the_command_prints_the_dashboard_figures_as_json_and_text(study, capsys):
    project, _, users = study
    call_command("agreement", "--project", project.slug, "--json", "--n-boot", "100")
    report = json.loads(capsys.readouterr().out)
    assert report["tables"]["agreement"]["rows"][0]["alpha"] == pytest.approx(0.175)
    assert report["tables"]["groups"]["rows"][0]["alpha"] == pytest.approx(3 / 13)
    call_command("agreement", "--project", project.slug, "--n-boot", "100")
    text = capsys.readouterr().out
    assert "Agreement per answer field" in text and "0.175" in text
    assert "By item group" in text and "0.231" in text
    pseudonym = users["c"].memberships.get().pseudonym
    call_command(
        "agreement",
        "--project",
        project.slug,
        "--json",
        "--exclude",
        pseudonym,
        "--table",
        "agreement",
    )
    report = json.loads(capsys.readouterr().out)
    assert list(report["tables"]) == ["agreement"]
    assert report["excluded"][0]["id"] == pseudonym
    assert report["filter"] == {
        **AnnotatorFilter(exclude=(pseudonym,)).__dict__,
        "exclude": [pseudonym],
        "judges": [],
    }


def test_the_command_takes_the_task_types_report_parameters(study, capsys):
    project, _, _ = study
    args = ("agreement", "--project", project.slug, "--json", "--n-boot", "10", "--table", "scores")
    call_command(*args)
    assert json.loads(capsys.readouterr().out)["tables"]["scores"]["rows"][0]["transparency"] == (
        pytest.approx(0.5)
    )
    call_command(*args, "--param", "transparency_threshold=0.5")
    report = json.loads(capsys.readouterr().out)
    assert report["tables"]["scores"]["rows"][0]["transparency"] == pytest.approx(0.75)
    assert report["options"]["parameters"] == [["transparency_threshold", 0.5]]
    with pytest.raises(CommandError, match="unknown report parameter 'threshold'.*transparency"):
        call_command(*args, "--param", "threshold=0.5")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command(*args, "--param", "transparency_threshold=3")


def test_the_command_names_an_unknown_project_or_table(study):
    project, _, _ = study
    with pytest.raises(CommandError, match="nope"):
        call_command("agreement", "--project", "nope")
    with pytest.raises(CommandError, match="No table 'x'"):
        call_command("agreement", "--project", project.slug, "--table", "x")


def test_judges_with_answers_are_offered_and_compared_with_the_humans(study, researcher):
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    project, items, _ = study
    judge = Judge.objects.create(
        project=project, name="gpt-judge", kind="llm", model="m", prompt_version="v1"
    )
    setting = prompts.get(project.task_type).setting(project.config)
    for item in items.values():
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version="v1",
            setting=setting,
            status=JudgeResult.Status.OK,
            answer={"sentences": [1], "none": False, "helpfulness": 50},
        )
    client = client_for(researcher)
    page = client.get(url(project)).content.decode()
    assert 'name="judge" value="gpt-judge"' in page and "Judges versus humans" not in page
    page = client.get(url(project) + "?judge=gpt-judge").content.decode()
    assert "Judges versus humans" in page
    rows = read_csv(client.get(url(project) + "?judge=gpt-judge&download=judges"))
    assert rows[0]["judge"] == "gpt-judge" and rows[0]["items"] == "4"


@pytest.mark.parametrize("snapshot", ["abc", "1\x00", "99999999999999999999999", "-1"])
def test_a_retry_of_a_snapshot_that_is_not_a_number_retries_nothing(study, researcher, snapshot):
    project, _, _ = study
    client = client_for(researcher)
    client.raise_request_exception = False
    response = client.post(url(project), {"snapshot": snapshot, "action": "retry"})
    assert response.status_code == 302, response.content[:300]
    messages = [str(m) for m in response.wsgi_request._messages]
    assert messages == ["Nothing to retry."]


NO_VARIATION = "undefined: every value is the same"


def test_alpha_without_variation_reads_undefined_on_the_page_in_the_command_and_csv(
    db, researcher, capsys
):
    # Every annotator selects sentence 1 with helpfulness 50 on both items: the expected
    # disagreement is 0, alpha 0/0. It was shown "1.000 [1.00, 1.00]".
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    items = [helpers.make_item(project, claim, "A", n)[0] for n, claim in enumerate(["x", "y"])]
    for name in ("p", "q"):
        user = factories.UserFactory(username=factories.unique(name))
        factories.MembershipFactory(project=project, user=user)
        for item in items:
            helpers.answer(item, user, [1], helpfulness=50)
    page = client_for(researcher).get(url(project))
    html = page.content.decode()
    assert html.count(NO_VARIATION) >= 2  # the headline tile and the agreement table
    assert "1.000 [1.00, 1.00]" not in html
    rows = {
        r["field"]: r
        for r in read_csv(client_for(researcher).get(url(project) + "?download=agreement"))
    }
    assert rows["sentences"]["alpha_no_variation"] == "True"
    call_command("agreement", "--project", project.slug, "--n-boot", "50", "--table", "agreement")
    text = capsys.readouterr().out
    assert NO_VARIATION in text and "1.000" not in text
    call_command("agreement", "--project", project.slug, "--json", "--n-boot", "50")
    report = json.loads(capsys.readouterr().out)
    assert report["tables"]["agreement"]["rows"][0]["alpha_no_variation"] is True


def test_alpha_with_variation_is_not_flagged(study, researcher):
    project, _, _ = study
    rows = {
        r["field"]: r
        for r in read_csv(client_for(researcher).get(url(project) + "?download=agreement"))
    }
    assert rows["sentences"]["alpha_no_variation"] == "False"
    assert NO_VARIATION not in client_for(researcher).get(url(project)).content.decode()


def test_a_judge_on_more_items_than_the_humans_is_compared_on_theirs_and_labelled_beyond(
    study, researcher, django_assert_max_num_queries
):
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    project, items, _ = study
    judge = Judge.objects.create(
        project=project, name="minilm", kind="llm", model="m", prompt_version="v1"
    )
    setting = prompts.get(project.task_type).setting(project.config)

    def judged(more):
        found = list(more)
        for item in found:
            JudgeResult.objects.create(
                item=item,
                judge=judge,
                prompt_version="v1",
                setting=setting,
                status=JudgeResult.Status.OK,
                answer={"sentences": [1], "none": False, "helpfulness": 50},
            )

    judged(items.values())
    judged(helpers.make_item(project, f"extra{n}", "G", n)[0] for n in range(6))
    client = client_for(researcher)
    page = client.get(url(project) + "?judge=minilm").content.decode()
    assert "Units · human coders" in page and "judge minilm: 10 items" in page
    assert (
        "the 4 items with human answers" in page and "judge&#x27;s all items (minilm: 10)" in page
    )
    assert "Human-only, judge-only and prediction-powered estimates" in page
    rows = read_csv(client.get(url(project) + "?judge=minilm&download=scores"))
    shared = next(r for r in rows if r["source"] == "minilm" and "4 items" in r["items_basis"])
    beyond = next(r for r in rows if r["source"] == "minilm" and "all items" in r["items_basis"])
    assert shared["answers"] == "4" and beyond["answers"] == "10"  # one answer per item
    judged(helpers.make_item(project, "one-more", "H", 99))
    with django_assert_max_num_queries(60) as small:
        client.get(url(project) + "?judge=minilm")
    judged(helpers.make_item(project, f"more{n}", "H", n)[0] for n in range(20))
    with django_assert_max_num_queries(len(small.captured_queries)):
        page = client.get(url(project) + "?judge=minilm").content.decode()
    assert "judge minilm: 31 items" in page
