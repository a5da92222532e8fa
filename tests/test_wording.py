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


def test_a_statistic_that_rounds_to_zero_has_no_minus_sign():
    from django.template import Context, Template

    from agreement.reports.tables import fmt_number, render_cell
    from core.wording import fixed

    assert [fixed(v) for v in (-0.0001, -0.0, 0.0004, -0.0005, -0.25)] == [
        "0.000",
        "0.000",
        "0.000",
        "-0.001",
        "-0.250",
    ]
    assert fmt_number(-0.00002) == "0.000"
    cell = {"alpha": -0.0002, "alpha_lower": -0.004, "alpha_upper": 0.3}
    assert render_cell(cell, {"key": "alpha", "fmt": "ci"}) == "0.000 [0.00, 0.30]"
    page = Template("{% load concord %}{{ a|number }} {{ b|number:2 }}").render(
        Context({"a": -0.0003, "b": -1e-9})
    )
    assert page == "0.000 0.00"
