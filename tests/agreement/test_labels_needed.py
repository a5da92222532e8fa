"""The question "How many human annotations do I need?" on the judge-validation page (issue 27,
item 4): the selector (its numbers against metrics.projection computed by hand from the same
units, and a fixed number of queries) and the page's form, plot, table, CSV and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agreement.selectors import BadProjectionQuery, labels_needed
from annotation.models import Item
from metrics.projection import labels_needed as needed_from
from metrics.projection import pilot, projected_widths
from tests import factories
from tests.agreement import helpers
from tests.agreement.test_judge_validation import _judge, _researcher_client

FIGURE = "Factual accuracy, level 0"


def _human_label(n: int) -> str:
    """The human's stance on response n: right ("agree") on about 60 %."""
    return "agree" if n % 5 in (0, 1, 3) else "disagree"


def _judge_label(n: int) -> str:
    """The judge: the human's label except on every 7th response, where it says "agree"."""
    return "agree" if n % 7 == 0 else _human_label(n)


def need_study(items=40, labelled=20):
    """Stance, level 0, every response true (the right stance: "agree"). One annotator labels
    the first ``labelled`` responses; the judge "gpt" labels all of them."""
    project = factories.ProjectFactory(task_type="stance", config={})
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user)
    made = {}
    for n in range(items):
        key = f"r{n}"
        made[key] = Item.objects.create(
            project=project,
            external_id=key,
            payload={"id": key, "claim": f"c{n}", "response": "r", "veracity": "true", "level": 0},
            prepared={"sentences": ["r"], "targets": []},
            position=n,
        )
        if n < labelled:
            helpers.answer(made[key], user, [], 0)
            made[key].annotations.filter(annotator=user).update(
                answer={"label": _human_label(n), "not_sure": False, "sentences": []}
            )
    _judge(project, "gpt", {f"r{n}": _judge_label(n) for n in range(items)}, made)
    return project


def by_hand(items=40, labelled=20):
    y = [float(_human_label(n) == "agree") for n in range(labelled)]
    f = [float(_judge_label(n) == "agree") for n in range(labelled)]
    f_u = [float(_judge_label(n) == "agree") for n in range(labelled, items)]
    return pilot(y, f, f_u)


@pytest.mark.django_db
def test_the_selector_projects_the_figure_from_the_units_so_far():
    project = need_study()
    result = labels_needed(project=project, figure=FIGURE, judge="gpt", target_width=0.35)
    assert result.figure == FIGURE and result.judge == "gpt" and result.judges == ["gpt"]
    assert FIGURE in result.figures and result.bounds == (0.0, 1.0)
    p = result.projection
    assert (p.labelled, p.judged_only, p.reason) == (20, 20, "")
    expected = by_hand()
    now = projected_widths(expected, [20])
    assert p.current_alone == pytest.approx(now["humans_alone"][0])
    assert p.current_with_judge == pytest.approx(now["with_judge"][0])
    need = needed_from(expected, 0.35)
    assert (p.need.humans_alone, p.need.with_judge) == (need.humans_alone, need.with_judge)
    # Humans alone: ⌈Var(y) (2 · 1.96 / 0.35)²⌉ with Var(y) of 12 ones in 20 = 0.2526.
    assert p.need.humans_alone == math.ceil(
        np.var([1] * 12 + [0] * 8, ddof=1) * (2 * 1.959964 / 0.35) ** 2
    )
    assert p.need.with_judge < p.need.humans_alone
    rows = p.tables["projection"]["rows"]
    assert rows[0]["labels"] == 2 and any(r["labels"] == 20 for r in rows)
    assert p.plot["kind"] == "lines" and p.plot["marks"]["y"][0]["value"] == 0.35


@pytest.mark.django_db
def test_the_selector_refuses_a_tiny_pilot_with_a_reason():
    result = labels_needed(project=need_study(labelled=6), target_width=0.35)
    assert result.figure == FIGURE  # the task type's first figure by default
    assert result.projection.need is None and not result.projection.tables
    assert "only 6 items are labelled by both" in result.projection.reason


@pytest.mark.django_db
def test_the_selector_refuses_what_it_cannot_use():
    project = need_study()
    with pytest.raises(BadProjectionQuery) as bad:
        labels_needed(project=project, figure="Nope")
    assert bad.value.field == "figure"
    with pytest.raises(BadProjectionQuery) as bad:
        labels_needed(project=project, judge="claude")
    assert bad.value.field == "judge"
    with pytest.raises(BadProjectionQuery, match="whole range") as bad:
        labels_needed(project=project, target_width=1.5)
    assert bad.value.field == "width"


@pytest.mark.django_db
def test_the_selector_without_judges_or_figures():
    from llm_judges.models import JudgeResult

    project = need_study()
    JudgeResult.objects.filter(item__project=project).delete()
    result = labels_needed(project=project)
    assert result.projection is None and result.judges == [] and result.figures == []


@pytest.mark.django_db
def test_the_selectors_queries_do_not_grow_with_the_items():
    counts = []
    for items, labelled in ((30, 15), (90, 45)):
        project = need_study(items, labelled)
        with CaptureQueriesContext(connection) as queries:
            result = labels_needed(project=project, target_width=0.2)
        assert result.projection.labelled == labelled
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert counts[0] <= 12, counts


@pytest.mark.django_db
def test_the_page_shows_the_labels_needed_the_plot_and_its_table():
    project = need_study()
    client = _researcher_client(project)
    url = reverse("agreement-judge-validation", args=[project.slug])
    page = client.get(url, {"figure": FIGURE, "judge": "gpt", "width": "0.35"})
    assert page.status_code == 200
    html = page.content.decode()
    need = labels_needed(project=project, target_width=0.35).projection.need
    assert "How many human annotations do I need?" in html
    assert f'<span class="big-number">{need.humans_alone}</span> human labels' in html
    assert f'<span class="big-number">{need.with_judge}</span> human labels' in html
    assert "<title>Interval width against human labels: Factual accuracy, level 0</title>" in html
    assert "<desc>" in html and "cdn" not in html.lower()
    assert "Projected interval width: Factual accuracy, level 0 (gpt)" in html  # the table
    csv = client.get(url, {"figure": FIGURE, "width": "0.35", "download": "projection"})
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    lines = csv.content.decode().splitlines()
    assert lines[0] == "labels,humans_alone,with_judge,lam"
    # Without a target: the curve and the widths now, no answer.
    plain = client.get(url).content.decode()
    assert "the interval is now about" in plain and 'id="need-answer"' not in plain


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"width": "abc"}, "Target width: &#x27;abc&#x27; is not a number"),
        ({"width": "-1"}, "it must be a positive number"),
        ({"width": "nan"}, "it must be a positive number"),
        ({"width": "2"}, "not narrower than the figure"),
        ({"figure": "Nope", "width": "0.1"}, "There is no figure &#x27;Nope&#x27; here."),
        ({"judge": "claude"}, "There is no judge &#x27;claude&#x27; here."),
    ],
)
def test_the_page_says_what_is_wrong_with_the_form(query, message):
    project = need_study()
    client = _researcher_client(project)
    page = client.get(reverse("agreement-judge-validation", args=[project.slug]), query)
    assert page.status_code == 400
    html = page.content.decode()
    assert message in html
    assert 'aria-invalid="true"' in html and 'role="alert"' in html
    assert "Judges against the humans" in html  # the rest of the page is there


@pytest.mark.django_db
def test_figures_of_one_name_are_numbered_so_each_can_be_chosen(monkeypatch):
    from agreement.reports import sections

    project = need_study()
    declared = sections.estimands_for(project.task_type)
    twice = lambda inp: [*declared(inp), *declared(inp)]  # noqa: E731
    monkeypatch.setattr(sections, "estimands_for", lambda slug: twice)
    result = labels_needed(project=project, figure=f"{FIGURE} (2)")
    assert result.figures.count(FIGURE) == 1 and f"{FIGURE} (2)" in result.figures
    assert result.projection.figure == FIGURE and result.projection.labelled == 20
