"""Issue 27: the dashboard shows how the active estimate's interval narrowed as human answers
arrived as a chart (inline SVG drawn on the server: no script, no CDN), one per figure with a
line per judge, with axis titles, a text alternative and the table of its numbers below."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agreement.reports.build import build_report
from agreement.reports.estimates import ACTIVE_CI_TABLE
from agreement.reports.gather import gather
from agreement.reports.inputs import AnnotatorFilter
from agreement.reports.page import report_page
from annotation.models import Item
from tests.agreement.test_judge_validation import _researcher_client
from tests.agreement.test_labels_needed import need_study


def active_need_study(items=40, labelled=20):
    """The labels-needed stance study dealt actively: every item weighed 1, priorities falling
    with the position, so the humans' first ``labelled`` responses are the order's prefix."""
    project = need_study(items, labelled)
    project.crowd = {**(project.crowd or {}), "assignment_strategy": "active"}
    project.save(update_fields=["crowd"])
    for item in Item.objects.filter(project=project):
        Item.objects.filter(pk=item.pk).update(
            sampling_weight=1.0, sampling_priority=float(items - item.position)
        )
    return project


@pytest.mark.django_db
def test_the_report_draws_the_interval_narrowing_for_each_figure():
    project = active_need_study()
    report = build_report(
        gather(project=project, annotator_filter=AnnotatorFilter(judges=("gpt",)))
    )
    table = report["tables"][ACTIVE_CI_TABLE]
    specs = [s for s in report["section"]["plots"] if s["table"] == ACTIVE_CI_TABLE]
    figures = list(dict.fromkeys(row["figure"] for row in table["rows"]))
    assert [s["where"] for s in specs] == [{"figure": f} for f in figures][:6]
    page = report_page(report)
    (block,) = [b for b in page["blocks"] if b["table"]["name"] == ACTIVE_CI_TABLE]
    svg = block["plots"][0]["svg"]
    assert svg.startswith("<svg") and 'role="img"' in svg and "<desc>" in svg
    assert "human-labelled items" in svg and "95 % CI width" in svg  # the axes' titles
    (points,) = re.findall(r'<polyline points="([^"]*)"', svg)
    first = [row for row in table["rows"] if row["figure"] == figures[0]]
    assert len(points.split()) == len(first)  # one vertex per row of the table
    ys = [float(p.split(",")[1]) for p in points.split()]
    widths = [row["width"] for row in first]
    # SVG y grows downwards: the widest interval is the highest vertex, the narrowest the lowest
    assert ys.index(min(ys)) == widths.index(max(widths))
    assert ys.index(max(ys)) == widths.index(min(widths))


@pytest.mark.django_db
def test_the_dashboard_shows_the_chart_above_its_table():
    project = active_need_study()
    client = _researcher_client(project)
    html = client.get(reverse("agreement-dashboard", args=[project.slug]), {"judge": "gpt"})
    assert html.status_code == 200
    text = html.content.decode()
    block = text[text.index(f'id="block-{ACTIVE_CI_TABLE}"') :]
    block = block[: block.index("</section>")]
    assert block.index("<svg") < block.index("<table")  # the chart, then its numbers
    assert "How the interval narrowed: Factual accuracy, level 0" in block
    assert "<script" not in block and "cdn" not in block.lower()
