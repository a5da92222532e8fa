"""Issue 31: every researcher page reads a number of queries that does not grow with the project.

One study is grown in place from N items to 3N (items, annotators' answers, judge verdicts,
controls), and each page is counted at both sizes after a first visit (which may refresh cached
figures). The item browser and the agreement dashboard are counted in their own tests
(tests/studies/test_item_browser.py, tests/agreement/test_dashboard.py and
tests/agreement/test_snapshot_page.py).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests import factories
from tests.agreement.helpers import answer
from tests.studies.test_item_browser import judge_answer, judge_for

N_ITEMS = 6

PAGES = [
    ("project-detail", ""),
    ("crowd-quality", ""),
    ("review-list", ""),
    ("review-list", "?show=all"),
    ("project-judges", ""),
    ("agreement-judge-validation", ""),
    ("project-members", ""),
]


class GrowingStudy:
    """A citation-recovery study with three annotators and a judge, grown by ``add``: every
    regular item gets three answers (the second annotator disagrees on every other item) and a
    judge verdict; every fourth item is a control item answered by all three."""

    def __init__(self, researcher):
        self.project = factories.ProjectFactory(annotators_per_item=3)
        factories.MembershipFactory(project=self.project, user=researcher, role="researcher")
        self.annotators = [factories.UserFactory() for _ in range(3)]
        for user in self.annotators:
            factories.MembershipFactory(project=self.project, user=user, role="annotator")
        self.judge = judge_for(self.project)
        self.size = 0

    def add(self, count: int) -> None:
        start = self.size
        regular = factories.make_items(self.project, count, start=start)
        controls = factories.make_items(
            self.project, count // 4 or 1, kind="control", start=start + 10_000
        )
        for n, item in enumerate(regular):
            first, second, third = self.annotators
            answer(item, first, [1])
            answer(item, second, [1] if n % 2 else [2, 3])
            answer(item, third, [1])
            judge_answer(self.project, self.judge, item, [1])
        for item in controls:
            for user in self.annotators:
                answer(item, user, [1])
        self.size += count


def page_queries(client: Client, url: str) -> int:
    client.get(url)  # the first visit may refresh cached figures
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries)


@pytest.mark.parametrize(("page", "query"), PAGES)
def test_a_researcher_page_reads_as_many_queries_at_3n_items_as_at_n(db, researcher, page, query):
    study = GrowingStudy(researcher)
    client = Client()
    client.force_login(researcher)
    url = reverse(page, args=[study.project.slug]) + query

    study.add(N_ITEMS)
    small = page_queries(client, url)
    study.add(2 * N_ITEMS)
    assert study.size == 3 * N_ITEMS
    assert page_queries(client, url) == small


def test_the_review_list_walks_only_as_far_as_its_page(db, researcher, monkeypatch):
    """Pages of disputed items by keyset: a full page reads as many queries at 3N items as at N,
    and the pages together are every disputed item, in queue order, once."""
    from annotation import review

    monkeypatch.setattr(review, "WALK_CHUNK", 4)
    monkeypatch.setattr(review, "REVIEW_PAGE", 2)
    study = GrowingStudy(researcher)
    client = Client()
    client.force_login(researcher)
    url = reverse("review-list", args=[study.project.slug])
    study.add(N_ITEMS)
    small = page_queries(client, url)
    study.add(2 * N_ITEMS)
    assert page_queries(client, url) == small

    every = [row["item_id"] for row in review.disputed_items(project=study.project)]
    assert len(every) == 3 * N_ITEMS // 2  # the second annotator disagrees on every other item
    paged, after = [], (-1, 0)
    while True:
        page = review.disputed_page(project=study.project, after=after, limit=2)
        paged += [row["item_id"] for row in page.rows]
        if page.next_after is None:
            break
        after = page.next_after
    assert paged == every
    response = client.get(f"{url}?after={after[0]}.{after[1]}")  # the last page's cursor
    assert response.status_code == 200
    assert client.get(url + "?after=x.%C2%B2").status_code == 200  # a bad cursor: the first page


@pytest.mark.parametrize("page", ["review-list", "crowd-quality"])
def test_items_with_fewer_than_two_answers_are_never_walked_for_disputes(
    db, researcher, monkeypatch, page
):
    """Found by an outside probe: on a 100k-item study with few answers the review and quality
    pages took 8-16 s, walking every item (600 queries) to find no dispute. Only items with two
    or more submitted answers can be disputed; the walk reads those alone."""
    from annotation import review

    monkeypatch.setattr(review, "WALK_CHUNK", 4)
    study = GrowingStudy(researcher)
    client = Client()
    client.force_login(researcher)
    url = reverse(page, args=[study.project.slug])
    study.add(N_ITEMS)
    before = page_queries(client, url)
    unanswered = factories.make_items(study.project, 40, start=50_000)
    for item in unanswered[:20]:  # one answer each: still nothing to dispute
        answer(item, study.annotators[0], [1])
    assert page_queries(client, url) == before


def test_the_judges_page_counts_no_items(db, researcher):
    """The judges page's item count is the maintained counter, not a COUNT over the items."""
    study = GrowingStudy(researcher)
    study.add(N_ITEMS)
    client = Client()
    client.force_login(researcher)
    url = reverse("project-judges", args=[study.project.slug])
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert response.context["item_count"] == study.project.items.count()
    counting = [
        q["sql"]
        for q in queries.captured_queries
        if "COUNT(" in q["sql"].upper() and 'FROM "annotation_item"' in q["sql"]
    ]
    assert counting == []


def test_the_judges_page_lists_the_groups_without_reading_every_item(db, researcher):
    """The run form's groups: the project's own, not empty, sorted (by the database's
    collation), each once; read by one probe per group (``item_groups``), not a DISTINCT over
    the project's items."""
    from annotation.models import Item
    from annotation.selectors import item_groups

    study = GrowingStudy(researcher)
    study.add(N_ITEMS)
    other = factories.ProjectFactory()
    factories.make_items(other, 2)
    Item.objects.filter(project=other).update(group="z-other")
    assert item_groups(project=study.project) == ["test-gen"]  # every generated item's
    Item.objects.filter(project=study.project).update(group="")
    assert item_groups(project=study.project) == []
    names = ["b", "a", "", "b", "Ünïcode 'quoted'", "a"]
    for item, name in zip(study.project.items.order_by("id"), names, strict=False):
        item.group = name
        item.save(update_fields=["group"])
    # what the page read before: a DISTINCT over the items, in the database's order
    expected = list(
        Item.objects.filter(project=study.project)
        .exclude(group="")
        .order_by("group")
        .values_list("group", flat=True)
        .distinct()
    )
    assert sorted(expected) == sorted({"a", "b", "Ünïcode 'quoted'"})
    assert item_groups(project=study.project) == expected
    client = Client()
    client.force_login(researcher)
    url = reverse("project-judges", args=[study.project.slug])
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert [c[0] for c in response.context["start_form"].fields["group"].choices][1:] == expected
    distinct = [
        q["sql"]
        for q in queries.captured_queries
        if "DISTINCT" in q["sql"].upper() and '"annotation_item"' in q["sql"]
    ]
    assert distinct == []
