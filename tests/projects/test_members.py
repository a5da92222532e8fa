"""Members on the project page and through the API (issue 15, onboarding): researchers add an
existing account, change roles and remove members; removal keeps the member's work."""

import json

import pytest
from django.test import Client

from annotation import services
from annotation.models import Annotation, Assignment
from crowd.models import CrowdEntry
from projects import members, selectors
from projects.models import Membership
from studies.services.exports import export_stream
from tests import factories
from tests.conftest import client_for


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def member(project, user) -> Membership:
    return Membership.objects.get(project=project, user=user)


@pytest.fixture
def expert(db):
    return factories.UserFactory(username=factories.unique("expert"))


@pytest.fixture
def reviewer(project):
    user = factories.UserFactory(username=factories.unique("reviewer"))
    factories.MembershipFactory(project=project, user=user, role="reviewer")
    return user


# --- the page -----------------------------------------------------------------------------


def test_a_researcher_adds_an_existing_account_by_username(project, researcher, expert):
    client = page_client(researcher)
    page = client.get(f"/p/{project.slug}/members/")
    assert page.status_code == 200 and researcher.username in page.content.decode()
    response = client.post(
        f"/p/{project.slug}/members/", {"username": expert.username, "role": "reviewer"}
    )
    assert response.status_code == 302
    assert member(project, expert).role == "reviewer"
    assert expert.username in client.get(f"/p/{project.slug}/members/").content.decode()


def test_adding_an_unknown_or_present_account_is_refused_with_a_message(
    project, researcher, annotator
):
    client = page_client(researcher)
    unknown = client.post(
        f"/p/{project.slug}/members/", {"username": "nobody-here", "role": "annotator"}
    )
    assert unknown.status_code == 400
    assert "No active account is named" in unknown.content.decode()
    again = client.post(
        f"/p/{project.slug}/members/", {"username": annotator.username, "role": "reviewer"}
    )
    assert again.status_code == 409 and "already a member" in again.content.decode()
    assert member(project, annotator).role == "annotator"
    bad_role = client.post(
        f"/p/{project.slug}/members/", {"username": annotator.username, "role": "owner"}
    )
    assert bad_role.status_code == 400 and "Unknown role" in bad_role.content.decode()


def test_a_researcher_changes_a_role_and_removes_a_member(project, researcher, annotator):
    client = page_client(researcher)
    m = member(project, annotator)
    assert (
        client.post(f"/p/{project.slug}/members/{m.pk}/role/", {"role": "reviewer"}).status_code
        == 302
    )
    assert member(project, annotator).role == "reviewer"
    assert client.post(f"/p/{project.slug}/members/{m.pk}/remove/").status_code == 302
    assert member(project, annotator).removed_at is not None
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert "Removed members" in page and annotator.username in page


def test_the_last_researcher_can_neither_leave_nor_be_demoted(project, researcher, expert):
    client = page_client(researcher)
    own = member(project, researcher)
    demote = client.post(f"/p/{project.slug}/members/{own.pk}/role/", {"role": "annotator"})
    assert demote.status_code == 409 and "last researcher" in demote.content.decode()
    remove = client.post(f"/p/{project.slug}/members/{own.pk}/remove/")
    assert remove.status_code == 409 and "last researcher" in remove.content.decode()
    assert member(project, researcher).role == "researcher"
    assert member(project, researcher).removed_at is None
    # With a second researcher, the first may step down (and is sent home, no longer a researcher).
    members.member_add(project=project, username=expert.username, role="researcher")
    step_down = client.post(f"/p/{project.slug}/members/{own.pk}/role/", {"role": "reviewer"})
    assert step_down.status_code == 302 and step_down.url == "/"
    assert client.get(f"/p/{project.slug}/members/").status_code == 404


def test_only_researchers_reach_the_members_page_and_its_actions(
    project, researcher, annotator, reviewer, expert
):
    target = member(project, annotator)
    urls = [
        ("get", f"/p/{project.slug}/members/", {}),
        (
            "post",
            f"/p/{project.slug}/members/",
            {"username": expert.username, "role": "researcher"},
        ),
        ("post", f"/p/{project.slug}/members/{target.pk}/role/", {"role": "researcher"}),
        ("post", f"/p/{project.slug}/members/{target.pk}/remove/", {}),
        ("post", f"/p/{project.slug}/invitations/", {"role": "researcher"}),
    ]
    for user in (annotator, reviewer, expert):
        client = page_client(user)
        for method, url, data in urls:
            assert getattr(client, method)(url, data).status_code == 404, (user, url)
    for method, url, data in urls:
        response = getattr(Client(), method)(url, data)
        assert response.status_code == 302 and response.url.startswith("/login/")
    assert member(project, annotator).role == "annotator"
    assert not Membership.objects.filter(project=project, user=expert).exists()
    # A member of another project cannot act on this project's memberships through theirs.
    other = factories.ProjectFactory()
    factories.MembershipFactory(project=other, user=expert, role="researcher")
    client = page_client(expert)
    response = client.post(f"/p/{other.slug}/members/{target.pk}/remove/")
    assert response.status_code == 404 and member(project, annotator).removed_at is None


# --- removal keeps the work ---------------------------------------------------------------


def test_removing_a_member_keeps_their_work_and_ends_their_access(
    project, researcher, annotator, items
):
    pseudonym = member(project, annotator).pseudonym
    for _ in range(2):
        assignment = services.assignment_next(project=project, annotator=annotator)
        services.annotation_submit(
            assignment=assignment, answer={"sentences": [0], "helpfulness": 50}
        )
    open_assignment = services.assignment_next(project=project, annotator=annotator)
    before = list(export_stream(project=project, fmt="jsonl"))

    response = client_for(researcher).delete(
        f"/api/projects/{project.slug}/members/{annotator.username}/"
    )
    assert response.status_code == 204

    assert Assignment.objects.filter(project=project, annotator=annotator).count() == 3
    assert Annotation.objects.filter(assignment__annotator=annotator).count() == 2
    after = list(export_stream(project=project, fmt="jsonl"))
    assert after == before
    assert {json.loads(line)["annotator"] for line in "".join(after).splitlines()} == {pseudonym}
    # No more access: no page, no new item, no writes on the reservation they still hold.
    worker = client_for(annotator)
    assert page_client(annotator).get(f"/p/{project.slug}/annotate/").status_code == 404
    assert worker.post(f"/api/projects/{project.slug}/next/").status_code == 404
    submit = worker.post(
        f"/api/assignments/{open_assignment.pk}/submit/",
        {"answer": {"sentences": [1], "helpfulness": 9}},
        format="json",
    )
    assert submit.status_code in (403, 404)
    assert Annotation.objects.filter(assignment__annotator=annotator).count() == 2
    assert project not in list(selectors.projects_for_user(user=annotator))
    # Added again: the same membership row, pseudonym and history.
    again = client_for(researcher).post(
        f"/api/projects/{project.slug}/members/",
        {"username": annotator.username, "role": "annotator"},
        format="json",
    )
    assert again.status_code == 201 and again.json()["pseudonym"] == pseudonym
    assert Membership.objects.filter(project=project, user=annotator).count() == 1
    assert services.assignment_next(project=project, annotator=annotator) is not None


def test_a_removed_researcher_loses_the_project_pages(project, researcher, expert):
    members.member_add(project=project, username=expert.username, role="researcher")
    members.member_remove(membership=member(project, expert))
    assert page_client(expert).get(f"/p/{project.slug}/").status_code == 404
    assert client_for(expert).get(f"/api/projects/{project.slug}/items/").status_code == 404
    assert client_for(expert).get("/api/projects/").json()["count"] == 0


# --- the API ------------------------------------------------------------------------------


def test_members_through_the_api(project, researcher, annotator, expert):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/members/"
    listed = api.get(url).json()
    assert {m["username"]: m["role"] for m in listed} == {
        researcher.username: "researcher",
        annotator.username: "annotator",
    }
    added = api.post(url, {"username": expert.username, "role": "reviewer"}, format="json")
    assert added.status_code == 201 and added.json()["role"] == "reviewer"
    changed = api.patch(f"{url}{expert.username}/", {"role": "researcher"}, format="json")
    assert changed.status_code == 200 and member(project, expert).role == "researcher"
    assert api.delete(f"{url}{annotator.username}/").status_code == 204
    assert [m["username"] for m in api.get(url + "?removed=1").json()] == [annotator.username]
    assert api.delete(f"{url}{annotator.username}/").status_code == 404  # already removed


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "annotator"}, "username"),
        ({"username": "nobody-here", "role": "annotator"}, "username"),
        ({"username": "x", "role": "owner"}, "role"),
        ({"username": "x"}, "role"),
    ],
)
def test_bad_member_input_is_a_400_naming_the_field(project, researcher, body, field):
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/members/", body, format="json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_the_api_refuses_to_drop_the_last_researcher(project, researcher):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/members/{researcher.username}/"
    demote = api.patch(url, {"role": "annotator"}, format="json")
    assert demote.status_code == 409 and "last researcher" in demote.json()["detail"]
    assert api.delete(url).status_code == 409
    bad = api.patch(url, {"role": "boss"}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "role"


def test_the_members_api_is_for_researchers_only(project, annotator, reviewer, expert):
    url = f"/api/projects/{project.slug}/members/"
    for user in (annotator, reviewer, expert):
        api = client_for(user)
        assert api.get(url).status_code == 404
        assert api.post(url, {"username": expert.username, "role": "researcher"}).status_code == 404
        assert api.delete(f"{url}{annotator.username}/").status_code == 404
        assert (
            api.post(
                f"/api/projects/{project.slug}/invitations/", {"role": "researcher"}
            ).status_code
            == 404
        )
    assert Client().get(url).status_code in (401, 403)
    assert member(project, annotator).removed_at is None


def test_crowd_accounts_join_only_through_their_platform(project, researcher):
    assert {f"{p}-" for p in CrowdEntry.Platform.values} == set(members.CROWD_USERNAME_PREFIXES)
    worker = factories.UserFactory(username="prolific-abc.1.study")
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/members/",
        {"username": worker.username, "role": "reviewer"},
        format="json",
    )
    assert response.status_code == 400 and response.json()["field"] == "username"


@pytest.mark.parametrize("leaves", ["removed", "made a reviewer"])
def test_an_annotator_who_leaves_gives_their_reserved_items_back_at_once(project, leaves):
    # Found by an outside probe: the item stayed held until the reservation expired (an hour).
    project.annotators_per_item = 1
    project.save(update_fields=["annotators_per_item"])
    (item,) = factories.make_items(project, 1)
    alice, bob = (factories.UserFactory() for _ in range(2))
    for user in (alice, bob):
        factories.MembershipFactory(project=project, user=user, role="annotator")
    held = services.assignment_next(project=project, annotator=alice)
    services.draft_save(assignment=held, answer={"helpfulness": 10}, time_spent_ms=5, revision=1)
    assert services.assignment_next(project=project, annotator=bob) is None  # the item is held
    if leaves == "removed":
        members.member_remove(membership=member(project, alice))
    else:
        members.member_role_set(membership=member(project, alice), role="reviewer")
    held.refresh_from_db()
    assert held.state == Assignment.State.EXPIRED
    assert held.draft.answer == {"helpfulness": 10}  # their unfinished work is kept
    dealt = services.assignment_next(project=project, annotator=bob)
    assert dealt is not None and dealt.item_id == item.pk


def test_a_researcher_given_another_role_releases_nothing(project, researcher):
    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    factories.make_items(project, 1)
    held = services.assignment_next(project=project, annotator=annotator)
    members.member_role_set(membership=member(project, other), role="reviewer")
    held.refresh_from_db()
    assert held.state == Assignment.State.RESERVED
