"""Text that ``str.isdigit()`` accepts but ``int()`` refuses (superscripts such as "²", circled
"①") and a NUL in a multipart form field reached code that assumed a number or storable text:
500s (issue 14, "bad input must give a clear error, never a 500")."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from annotation import task_types
from annotation.models import Item
from projects.models import Membership
from studies.services.imports import ImportFailed, import_items
from tests import factories

NOT_INT = ["²", "①", "1²"]  # str.isdigit() is True for each; int() raises ValueError


def page_client(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture
def annotator_membership(project):
    return Membership.objects.create(
        project=project, user=factories.UserFactory(), role="annotator", feedback="kept"
    )


@pytest.mark.parametrize("value", NOT_INT)
def test_a_quality_form_membership_that_only_looks_like_a_number_is_a_404(
    researcher, project, annotator_membership, value
):
    response = page_client(researcher).post(
        f"/p/{project.slug}/quality/", {"membership": value, "action": "disqualify"}
    )
    assert response.status_code == 404, response.content[:200]


def test_a_nul_in_the_quality_forms_feedback_sent_as_multipart_is_refused(
    postgres, researcher, project, annotator_membership
):
    """The NUL middleware reads only URL-encoded forms; a script's multipart form reached the
    database."""
    response = page_client(researcher).post(
        f"/p/{project.slug}/quality/",
        {"membership": annotator_membership.pk, "action": "feedback", "feedback": "a\x00b"},
    )
    assert response.status_code == 400, response.content[:200]
    assert "feedback" in response.content.decode() and "NUL" in response.content.decode()
    assert Membership.objects.get(pk=annotator_membership.pk).feedback == "kept"


@pytest.mark.parametrize("value", NOT_INT)
def test_a_preview_item_that_only_looks_like_a_number_shows_the_first_item(
    researcher, project, items, value
):
    first, second, third = Item.objects.filter(project=project).order_by("position", "id")[:3]
    client = page_client(researcher)
    response = client.get(f"/p/{project.slug}/preview/?item={value}")
    assert response.status_code == 200, response.content[:200]
    shown = response.context["preview"]
    assert shown["position"] == f"Preview of item {first.external_id}"
    assert shown["next"] == f"?item={second.pk}"
    # A real id is still honoured: the page is not stuck on the first item.
    chosen = client.get(f"/p/{project.slug}/preview/?item={third.pk}").context["preview"]
    assert chosen["position"] == f"Preview of item {third.external_id}"


def stance_project(researcher):
    project = factories.ProjectFactory(task_type="stance", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
@pytest.mark.parametrize("value", NOT_INT)
def test_a_stance_level_that_only_looks_like_a_number_is_a_named_import_error(
    researcher, researcher_client, celery_eager, value
):
    project = stance_project(researcher)
    record = {**task_types.get("stance").demo_payload(), "level": value}
    upload = io.BytesIO((json.dumps(record) + "\n").encode())
    upload.name = "stance.jsonl"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/", {"file": upload, "format": "jsonl"}
    )
    assert response.status_code == 400, response.content[:300]
    assert "line 1" in response.data["detail"] and "level" in response.data["detail"]
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize("value", NOT_INT)
def test_an_evidence_id_that_only_looks_like_a_number_is_a_named_import_error(project, value):
    record = factories.citation_payload(1)
    record["evidence"][0]["id"] = value
    with pytest.raises(ImportFailed, match="line 1.*evidence"):
        import_items(
            project=project, stream=io.BytesIO((json.dumps(record) + "\n").encode()), fmt="jsonl"
        )
    assert not Item.objects.filter(project=project).exists()
