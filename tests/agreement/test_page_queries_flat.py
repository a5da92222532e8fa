"""Researcher pages read counters and cached figures (issue 31): the same number of queries on
a project six times the size, judge results included, once the cached figures are computed."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.agreement.test_judge_validation import _researcher_client, stance_study

PAGES = {
    "items list": "/p/{slug}/items/",
    "item browser (filtered)": "/p/{slug}/items/?status=complete&sort=agreement",
    "agreement dashboard": "/p/{slug}/agreement/",
    "judge validation": "/p/{slug}/agreement/judges/",
    "quality": "/p/{slug}/quality/",
}


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.django_db
@pytest.mark.parametrize("page", list(PAGES))
def test_a_pages_queries_do_not_grow_with_items_answers_or_judge_results(
    page, django_assert_num_queries
):
    small, large = stance_study(), stance_study(n_copies=6)
    clients = {project.pk: _researcher_client(project) for project in (small, large)}
    counts = []
    for project in (small, large):
        url = PAGES[page].format(slug=project.slug)
        assert clients[project.pk].get(url).status_code == 200  # computes what it caches
        with CaptureQueriesContext(connection) as captured:
            assert clients[project.pk].get(url).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1], counts
    with django_assert_num_queries(counts[0]):
        clients[large.pk].get(PAGES[page].format(slug=large.slug))
