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
    assert b"20 annotator" in content  # counted, and linked to the pages that manage them
    assert f"/p/{project.slug}/members/".encode() in content


def test_the_project_list_still_counts_items(root_client):
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.make_items(project, 3)
    response = root_client.get("/admin/projects/project/")
    assert response.status_code == 200
    assert b"0 / 6 answers" in response.content
