"""Sentences built from data read as English: "an annotator", "An embedding judge", "1 item"."""

import io
import json

from django.test import Client

from core.wording import counted, indefinite
from llm_judges import selectors
from llm_judges.models import Judge
from studies.services.imports import import_items
from tests import factories


def test_indefinite_and_counted():
    assert indefinite("annotator") == "an annotator"
    assert indefinite("researcher") == "a researcher"
    assert indefinite("embedding", capital=True) == "An embedding"
    assert indefinite("llm") == "an llm" and indefinite("user") == "a user"
    assert [counted(n, "item") for n in (0, 1, 2)] == ["0 items", "1 item", "2 items"]


def test_a_role_change_says_an_annotator(project, researcher):
    member = factories.MembershipFactory(
        project=project, user=factories.UserFactory(), role="researcher"
    )
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/members/{member.pk}/role/", {"role": "annotator"}, follow=True
    )
    assert f"{member.user.username} is now an annotator." in response.content.decode()


def test_an_embedding_judges_estimate_says_an(project):
    factories.make_items(project, 1)
    judge = Judge.objects.create(project=project, name="mini", kind="embedding", model="m")
    estimate = selectors.run_estimate(project=project, judge=judge)
    assert estimate["method"].startswith("An embedding judge runs on the workers")


def test_one_item_one_record_one_annotator_in_the_singular(researcher):
    project = factories.ProjectFactory(annotators_per_item=1)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    body = json.dumps(factories.citation_payload(1)).encode() + b"\n"
    report = import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    assert report.summary().startswith("1 record read, 1 item created")
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert "1 annotator per item" in page and "1 item in all" in page
    assert " 1 items" not in page and "1 annotators" not in page
