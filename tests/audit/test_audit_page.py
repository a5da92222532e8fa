"""The audit log page and API: researchers of the project only, newest first, filtered by kind,
person and days, paged by the last id shown, in a constant number of queries."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from projects.audit import AuditKind, audit_record
from projects.models import AuditEntry
from tests import factories
from tests.conftest import client_for


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def record(project, actor, kind=AuditKind.EXPORTED, summary="Exported."):
    return audit_record(project=project, actor=actor, kind=kind, summary=summary)


@pytest.fixture
def log(project, researcher):
    """Three entries by the researcher, one by the system, one of another kind."""
    rows = [record(project, researcher, summary=f"Export {n}.") for n in range(3)]
    rows.append(record(project, None, AuditKind.ITEMS_IMPORTED, "Imported by a worker."))
    rows.append(record(project, researcher, AuditKind.MEMBER_ADDED, "Added someone."))
    return rows


def test_a_researcher_sees_the_log_newest_first_and_the_project_page_links_it(
    project, researcher, log
):
    client = logged_in(researcher)
    assert f"/p/{project.slug}/audit/" in client.get(f"/p/{project.slug}/").content.decode()
    page = client.get(f"/p/{project.slug}/audit/")
    html = page.content.decode()
    assert page.status_code == 200
    positions = [html.index(e.summary) for e in reversed(log)]
    assert positions == sorted(positions)
    assert "Member added" in html and "system" in html


def test_only_the_projects_researchers_see_its_log(project, researcher, annotator, log):
    assert logged_in(annotator).get(f"/p/{project.slug}/audit/").status_code == 404
    assert client_for(annotator).get(f"/api/projects/{project.slug}/audit/").status_code == 404
    assert Client().get(f"/p/{project.slug}/audit/").status_code == 302  # to the login page
    assert Client().get(f"/api/projects/{project.slug}/audit/").status_code in (401, 403)


def test_a_researcher_of_another_project_never_sees_this_ones_log(project, log):
    other = factories.ProjectFactory()
    stranger = factories.UserFactory()
    factories.MembershipFactory(project=other, user=stranger, role="researcher")
    record(other, stranger, summary="Their own export.")
    client = logged_in(stranger)
    assert client.get(f"/p/{project.slug}/audit/").status_code == 404
    assert client_for(stranger).get(f"/api/projects/{project.slug}/audit/").status_code == 404
    own = client.get(f"/p/{other.slug}/audit/").content.decode()
    assert "Their own export." in own and not any(e.summary in own for e in log)
    api = client_for(stranger).get(f"/api/projects/{other.slug}/audit/").json()
    assert [e["summary"] for e in api["results"]] == ["Their own export."]


def test_the_filters_narrow_by_kind_person_and_days(project, researcher, log):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/audit/"
    by_kind = api.get(url, {"kind": "exported"}).json()["results"]
    assert [e["summary"] for e in by_kind] == ["Export 2.", "Export 1.", "Export 0."]
    by_system = api.get(url, {"actor": "system"}).json()["results"]
    assert [e["summary"] for e in by_system] == ["Imported by a worker."]
    by_person = api.get(url, {"actor": researcher.username}).json()["results"]
    assert len(by_person) == 4 and all(e["actor"] == researcher.username for e in by_person)
    old = log[0]
    AuditEntry.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))
    today = timezone.now().date()
    recent = api.get(url, {"since": str(today - timedelta(days=1))}).json()["results"]
    assert old.summary not in [e["summary"] for e in recent] and len(recent) == 4
    earlier = api.get(url, {"until": str(today - timedelta(days=5))}).json()["results"]
    assert [e["summary"] for e in earlier] == [old.summary]
    page = logged_in(researcher).get(f"/p/{project.slug}/audit/", {"kind": "member_added"})
    html = page.content.decode()
    assert "Added someone." in html and "Export 1." not in html


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"kind": "annotation"}, "kind"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-02-30"}, "until"),
        ({"until": "9999-12-31"}, "until"),  # no day after it (a 500, found by the probe)
        ({"since": "0001-01-01"}, "since"),
        ({"since": "2026-03-02", "until": "2026-03-01"}, "since"),
        ({"before": "12abc"}, "before"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_parameter(project, researcher, params, field):
    response = client_for(researcher).get(f"/api/projects/{project.slug}/audit/", params)
    assert response.status_code == 400 and response.json()["field"] == field
    page = logged_in(researcher).get(f"/p/{project.slug}/audit/", params)
    assert page.status_code == 400 and f"<code>{field}</code>" in page.content.decode()


def test_pages_follow_the_last_id_shown_and_keep_the_filter(project, researcher, monkeypatch):
    monkeypatch.setattr("projects.selectors.AUDIT_PAGE", 2)
    for n in range(5):
        record(project, researcher, summary=f"Export {n}.")
    record(project, researcher, AuditKind.MEMBER_ADDED, "Added someone.")
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/audit/"
    seen, before, requests = [], None, []
    while True:
        params = {"kind": "exported", **({"before": before} if before else {})}
        body = api.get(url, params).json()
        requests.append(params)
        seen += [e["summary"] for e in body["results"]]
        before = body["next_before"]
        if before is None:
            break
    assert seen == [f"Export {n}." for n in (4, 3, 2, 1, 0)]
    assert len(requests) == 3  # two entries a page
    html = logged_in(researcher).get(f"/p/{project.slug}/audit/?kind=exported").content.decode()
    assert "kind=exported&amp;before=" in html and "Older entries" in html


def test_the_page_and_the_api_read_the_same_number_of_queries_for_3_or_50_entries(
    project, researcher
):
    def queries(path: str, client) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(path).status_code == 200
        return len(captured)

    page, api = logged_in(researcher), client_for(researcher)
    others = [factories.UserFactory() for _ in range(3)]
    for user in others:
        record(project, user)
    few = (
        queries(f"/p/{project.slug}/audit/", page),
        queries(f"/api/projects/{project.slug}/audit/", api),
    )
    for n in range(47):
        record(project, others[n % 3] if n % 2 else factories.UserFactory())
    many = (
        queries(f"/p/{project.slug}/audit/", page),
        queries(f"/api/projects/{project.slug}/audit/", api),
    )
    assert few == many


def test_crowd_workers_are_left_out_of_the_person_list_but_can_be_asked_for(project, researcher):
    worker = factories.UserFactory(username=factories.unique("prolific-worker"))
    record(project, worker, AuditKind.CROWD_SESSION_OPENED, "A Prolific worker opened a session.")
    record(project, researcher)
    html = logged_in(researcher).get(f"/p/{project.slug}/audit/").content.decode()
    assert f'<option value="{researcher.username}"' in html
    assert f'<option value="{worker.username}"' not in html
    api = client_for(researcher).get(
        f"/api/projects/{project.slug}/audit/", {"actor": worker.username}
    )
    assert [e["kind"] for e in api.json()["results"]] == ["crowd_session_opened"]
