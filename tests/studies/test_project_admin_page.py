"""Issue 31: the admin's project change page reads as many queries with many members and items
as with few (members are counted and linked, not an inline of widgets; the list's item and
answer counts are not computed for one project's page)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests import factories


def change_page(client: Client, project) -> tuple[int, bytes]:
    url = f"/admin/projects/project/{project.pk}/change/"
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content


@pytest.fixture
def root_client(db) -> Client:
    client = Client()
    client.force_login(factories.UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_project_change_page_reads_as_many_queries_with_10x_the_members(root_client):
    project = factories.ProjectFactory()

    def grow(count: int) -> None:
        for _ in range(count):
            user = factories.UserFactory()
            factories.MembershipFactory(project=project, user=user, role="annotator")
        factories.make_items(project, count, start=project.items.count())

    grow(2)
    small, _ = change_page(root_client, project)
    grow(18)
    big, content = change_page(root_client, project)
    assert big == small
    assert b"20 annotators" in content  # counted, and linked to the pages that manage them
    assert f"/p/{project.slug}/members/".encode() in content


def test_the_project_list_still_counts_items(root_client):
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.make_items(project, 3)
    response = root_client.get("/admin/projects/project/")
    assert response.status_code == 200
    assert b"0 / 6 answers" in response.content


# --- seen at 1280 and 390 px (the page's look is checked in tests/e2e/test_project_admin_browser.py)


def _add(client: Client, slug: str):
    return client.post(
        "/admin/projects/project/add/",
        {
            "slug": slug,
            "name": "A study",
            "task_type": "citation_recovery",
            "config_for": "citation_recovery",
            "guidelines": "",
            "annotators_per_item": 3,
            "status": "active",
        },
    )


def test_the_admins_slug_is_compared_ignoring_case_and_a_new_one_kept_in_lower_case(root_client):
    from projects.models import Project

    factories.ProjectFactory(slug="demo", name="Someone's study")
    refused = _add(root_client, "Demo")
    assert refused.status_code == 200
    assert b"The address /p/demo/ is not available; choose another slug." in refused.content
    assert _add(root_client, "New-Study").status_code == 302
    assert Project.objects.filter(slug="new-study").exists()
    assert not Project.objects.filter(slug="New-Study").exists()


def test_members_are_counted_in_words_and_codes_are_one_line_fields(root_client):
    project = factories.ProjectFactory()
    for role in ("annotator", "annotator", "researcher"):
        factories.MembershipFactory(project=project, user=factories.UserFactory(), role=role)
    _, content = change_page(root_client, project)
    page = content.decode()
    assert "2 annotators, 1 researcher" in page
    assert "css/admin_project.css" in page
    for name, length in (("currency", 3), ("prolific_completion_code", 64)):
        assert f'<input type="text" name="crowd__{name}"' in page
        assert f'maxlength="{length}"' in page.split(f'name="crowd__{name}"', 1)[1].split(">")[0]
    reasons = page.split('name="crowd__flag_reasons"', 1)[1].split(">", 1)[0]
    assert 'rows="5"' in reasons  # the four default reasons and a line to add one
