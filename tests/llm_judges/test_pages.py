"""Researcher pages and API for judge runs, the annotators' pre-selection endpoint, and the
run_judge command."""

import io
import re
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from annotation import services as workflow
from llm_judges import selectors, services
from llm_judges.models import (
    Judge,
    JudgeResult,
    JudgeRun,
    ModelEndpoint,
    Preselection,
    PreselectionShown,
)
from tests import factories
from tests.conftest import client_for
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.stub_llm import Reply


@pytest.fixture
def judge(stub, api_key, project):
    return make_llm_judge(stub, project)


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_judges_page_is_for_the_projects_researchers_only(
    project, researcher, annotator, judge
):
    url = f"/p/{project.slug}/judges/"
    assert page_client(researcher).get(url).status_code == 200
    assert page_client(annotator).get(url).status_code == 404
    assert page_client(factories.UserFactory()).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_a_researcher_starts_a_run_from_the_page_and_sees_its_progress(
    project, researcher, items, judge, django_capture_on_commit_callbacks
):
    client = page_client(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/p/{project.slug}/judges/",
            {"action": "start", "judge": judge.pk, "kind": ["regular"]},
        )
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert (run.started_by, run.filters, run.status) == (researcher, {"kind": ["regular"]}, "done")
    page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "5 done (0 unparseable) · 0 failed · 5 items" in page
    assert 'class="bar answered" style="width: 100.0%"' in page
    detail = client.get(f"/p/{project.slug}/judges/runs/{run.pk}/").content.decode()
    assert "5</b>calls" in detail


def test_a_run_says_how_long_it_took_and_while_it_runs_how_long_it_needs(
    project, researcher, items, judge, django_capture_on_commit_callbacks
):
    """Elapsed time, items per second and the time left, from the run's stored times and counts:
    the runs page, the run page and the API (which the page's poller reads) all say it."""
    run = start(judge, project, django_capture_on_commit_callbacks)
    now = timezone.now()
    JudgeRun.objects.filter(pk=run.pk).update(
        started_at=now - timedelta(seconds=50), finished_at=now - timedelta(seconds=40)
    )
    client = page_client(researcher)
    runs_page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert '<div class="small muted pace">10 s · 30 items/min</div>' in runs_page
    # Running: 5 of 10 items done in 100 s, so about 100 s left.
    JudgeRun.objects.filter(pk=run.pk).update(
        status="running", total=10, started_at=now - timedelta(seconds=100), finished_at=None
    )
    detail = client.get(f"/p/{project.slug}/judges/runs/{run.pk}/").content.decode()
    assert re.search(r"1 min 4\d s · 3\.0 items/min · about 1 min 4\d s left</div>", detail)
    listed = client_for(researcher).get(f"/api/projects/{project.slug}/judge-runs/").json()
    pace = listed["results"][0]["pace"]
    assert pace["unit"] == "items" and 99 < pace["remaining_seconds"] < 130
    assert listed["results"][0]["pace_text"].endswith("left")


def test_a_runs_filters_read_as_words_not_as_a_python_dict(project, researcher, items, judge):
    run = services.judge_run_start(
        judge=judge, project=project, filters={"kind": ["regular"]}, enqueue=False
    )
    page = page_client(researcher).get(f"/p/{project.slug}/judges/runs/{run.pk}/").content
    assert " · only item kind regular" in page.decode()
    assert "{&#x27;kind&#x27;" not in page.decode() and "{'kind'" not in page.decode()
    assert selectors.filters_words(filters={"kind": ["regular", "control"], "group": "A"}) == (
        "item kind regular, control · group A"
    )


def test_a_pending_run_has_no_pace(project, items, judge):
    run = services.judge_run_start(judge=judge, project=project, enqueue=False)
    progress = selectors.progress_of(run=selectors.run_for_project(project=project, run_id=run.pk))
    assert progress["pace_text"] == "" and progress["pace"]["elapsed_seconds"] is None


def test_a_run_of_another_project_cannot_be_opened_or_cancelled(
    project, researcher, items, judge, stub
):
    other = factories.ProjectFactory()
    factories.make_items(other, 1)
    # The other project's own judge of the same name (judges belong to projects).
    theirs = make_llm_judge(stub, other, name=judge.name)
    run = services.judge_run_start(judge=theirs, project=other, enqueue=False)
    client = page_client(researcher)
    assert client.get(f"/p/{project.slug}/judges/runs/{run.pk}/").status_code == 404
    response = client.post(f"/p/{project.slug}/judges/", {"action": "cancel", "run": run.pk})
    assert response.status_code == 404
    run.refresh_from_db()
    assert run.status == "pending"
    api = client_for(researcher)
    assert api.get(f"/api/projects/{project.slug}/judge-runs/{run.pk}/").status_code == 404
    assert api.post(f"/api/projects/{project.slug}/judge-runs/{run.pk}/cancel/").status_code == 404


def test_the_api_starts_lists_and_cancels_runs(project, researcher, annotator, items, judge):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/judge-runs/"
    nobody = api.post(url, {"judge": "nobody"}, format="json")
    assert (nobody.status_code, nobody.json()["code"], nobody.json()["field"]) == (
        400,
        "invalid",
        "judge",
    )
    bad_filter = api.post(url, {"judge": judge.name, "filters": {"kind": ["x"]}}, format="json")
    assert (bad_filter.status_code, bad_filter.json()["field"]) == (400, "filters.kind.0")
    assert bad_filter.json()["detail"].startswith("Filter kind.0: ")
    # A misspelt filter is refused, never dropped (which would run the judge on everything).
    typo = api.post(url, {"judge": judge.name, "filters": {"groups": "A"}}, format="json")
    assert (typo.status_code, typo.json()["field"]) == (400, "filters.groups")
    assert "Unknown filter 'groups'" in typo.json()["detail"]
    not_object = api.post(url, {"judge": judge.name, "filters": ["kind"]}, format="json")
    assert not_object.status_code == 400 and "filters" in not_object.json()
    created = api.post(url, {"judge": judge.name}, format="json")  # not committed: stays pending
    assert created.status_code == 201
    body = created.json()
    assert (body["judge"], body["total"], body["status"]) == (judge.name, 5, "pending")
    again = api.post(url, {"judge": judge.name}, format="json")
    assert again.status_code == 409
    assert "already running" in again.json()["detail"]
    assert again.json()["code"] == "conflict"
    listed = api.get(url).json()["results"]
    assert [r["id"] for r in listed] == [body["id"]]
    cancelled = api.post(f"{url}{body['id']}/cancel/").json()
    assert (cancelled["cancelled"], cancelled["status"]) == (True, "cancelled")
    assert client_for(annotator).get(url).status_code == 404


def test_pre_selection_is_off_by_default(
    project, annotator, items, judge, django_capture_on_commit_callbacks
):
    start(judge, project, django_capture_on_commit_callbacks)
    assignment = workflow.assignment_next(project=project, annotator=annotator)
    response = client_for(annotator).post(f"/api/assignments/{assignment.pk}/preselection/")
    assert response.status_code == 204
    assert not PreselectionShown.objects.exists()


def test_a_shown_pre_selection_is_recorded_once_per_assignment(
    project, researcher, annotator, items, judge, django_capture_on_commit_callbacks
):
    start(judge, project, django_capture_on_commit_callbacks)
    response = page_client(researcher).post(
        f"/p/{project.slug}/judges/", {"action": "preselection", "judge": judge.pk}
    )
    assert response.status_code == 302
    assert Preselection.objects.get(project=project).judge == judge
    assignment = workflow.assignment_next(project=project, annotator=annotator)
    client = client_for(annotator)

    first = client.post(f"/api/assignments/{assignment.pk}/preselection/").json()
    again = client.post(f"/api/assignments/{assignment.pk}/preselection/").json()

    assert first["judge"] == judge.name
    assert first["answer"] == {"sentences": [1], "none": False}
    assert again == first
    shown = PreselectionShown.objects.get()
    assert (shown.assignment, shown.judge, shown.answer) == (assignment, judge, first["answer"])
    assert selectors.preselections_shown(project=project) == {
        (assignment.item_id, annotator.pk): judge.name
    }
    raw = JudgeResult.objects.get(item=assignment.item).raw
    assert raw not in str(first)  # the annotator gets the answer, not the judge's reply


def test_an_annotator_cannot_fetch_the_pre_selection_of_someone_elses_assignment(
    project, annotator, items, judge
):
    services.preselection_enable(project=project, judge=judge)
    assignment = workflow.assignment_next(project=project, annotator=annotator)
    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="annotator")
    assert (
        client_for(other).post(f"/api/assignments/{assignment.pk}/preselection/").status_code == 404
    )
    assert not PreselectionShown.objects.exists()


def test_no_pre_selection_is_recorded_when_the_judge_has_no_answer_for_the_item(
    project, annotator, items, judge, stub, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: Reply(content="no idea")
    start(judge, project, django_capture_on_commit_callbacks)
    services.preselection_enable(project=project, judge=judge)
    assignment = workflow.assignment_next(project=project, annotator=annotator)
    response = client_for(annotator).post(f"/api/assignments/{assignment.pk}/preselection/")
    assert response.status_code == 204
    assert not PreselectionShown.objects.exists()


def test_switching_pre_selection_off_from_the_page(project, researcher, judge):
    services.preselection_enable(project=project, judge=judge)
    page_client(researcher).post(
        f"/p/{project.slug}/judges/", {"action": "preselection", "judge": ""}
    )
    assert not Preselection.objects.exists()


def test_run_judge_processes_the_batches_and_prints_progress(project, items, judge):
    out = io.StringIO()
    call_command("run_judge", project=project.slug, judge=judge.name, stdout=out)
    text = out.getvalue()
    assert "5 items (5 to judge)" in text
    assert "[##############################] 5/5 · 5 answered, 0 unparseable, 0 failed" in text
    assert JudgeRun.objects.get().status == "done"


def test_run_judge_names_the_known_judges_when_one_is_missing(project, judge, stub):
    other = factories.ProjectFactory()
    make_llm_judge(stub, other, name="not-this-projects")
    with pytest.raises(CommandError, match=r"no judge named 'nope' \(its judges: stub-llm\)"):
        call_command("run_judge", project=project.slug, judge="nope")
    # Another project's judge is not this project's, whatever its name.
    with pytest.raises(CommandError, match=r"no judge named 'not-this-projects'"):
        call_command("run_judge", project=project.slug, judge="not-this-projects")


def test_run_judge_exits_with_an_error_when_the_run_fails(project, items, judge, stub):
    stub.responder = lambda request: Reply(status=401)
    err = io.StringIO()
    with pytest.raises(CommandError, match="failed"):
        call_command(
            "run_judge", project=project.slug, judge=judge.name, stdout=io.StringIO(), stderr=err
        )
    assert "HTTP 401" in err.getvalue()


def test_the_admin_lists_judges_runs_results_and_calls_and_freezes_a_used_judge(
    project, items, judge, django_capture_on_commit_callbacks
):
    start(judge, project, django_capture_on_commit_callbacks)
    admin = factories.UserFactory(is_staff=True, is_superuser=True)
    client = page_client(admin)
    for model in (
        "judge",
        "judgerun",
        "judgeresult",
        "judgecall",
        "preselection",
        "preselectionshown",
    ):
        assert client.get(f"/admin/llm_judges/{model}/").status_code == 200, model
    change = client.get(f"/admin/llm_judges/judge/{judge.pk}/change/").content.decode()
    assert 'name="model"' not in change  # read-only once the judge has runs
    response = client.post(
        "/admin/llm_judges/judge/add/",
        {
            "name": "bad",
            "kind": "llm",
            "model": "m",
            "prompt_version": "v1",
            "parameters": '{"base_url": "http://x/v1", "api_key_env": "DJANGO_SECRET_KEY"}',
        },
    )
    # Refused: where a judge's calls go is its endpoint's, never a parameter.
    assert "Not a judge parameter" in response.content.decode()
    assert not Judge.objects.filter(name="bad").exists()
    response = client.post(
        "/admin/llm_judges/modelendpoint/add/",
        {"name": "bad", "base_url": "http://x/v1", "api_key_env": "DJANGO_SECRET_KEY"},
    )
    assert "_API_KEY" in response.content.decode()  # refused: not an API-key variable
    assert not ModelEndpoint.objects.filter(name="bad").exists()
