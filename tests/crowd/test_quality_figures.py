"""The quality page's per-annotator answer figures, cached per data version (issue 31): read
from the answers once per change, never inside a request on a large project, shown with their
time when out of date."""

from __future__ import annotations

import pytest

from annotation.models import Item
from crowd import celery_tasks, quality_figures
from crowd.models import QualityFigures
from tests import factories
from tests.agreement import helpers


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(db):
    project = factories.ProjectFactory(task_type="citation_recovery")
    people = [factories.UserFactory(username=f"coder-{n}") for n in range(2)]
    for user in people:
        factories.MembershipFactory(project=project, user=user)
    items = [
        Item.objects.create(
            project=project, external_id=f"c{n}", payload={"id": f"c{n}"}, position=n
        )
        for n in range(3)
    ]
    for item in items:
        helpers.answer(item, people[0], [1], time_ms=2000)
    helpers.answer(items[0], people[1], [1], time_ms=4000)
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    from django.test import Client

    client = Client()
    client.force_login(researcher)
    return project, items, people, client


@pytest.fixture
def counted(monkeypatch):
    calls: list[int] = []
    real = quality_figures.answer_figures

    def counting(**kwargs):
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(quality_figures, "answer_figures", counting)
    return calls


def _row(html: str, username: str) -> str:
    start = html.index(username)
    return html[start : html.index("</tr>", start)]


def test_a_small_project_computes_inline_once_per_data_version(study, counted):
    project, items, people, client = study
    url = f"/p/{project.slug}/quality/"
    html = client.get(url).content.decode()
    assert 'data-label="Answers">3<' in _row(html, "coder-0") and "answers-stale" not in html
    assert "2.0 s" in _row(html, "coder-0")
    client.get(url)
    assert len(counted) == 1
    helpers.answer(items[1], people[1], [2], time_ms=6000)  # a new answer: computed again
    html = client.get(url).content.decode()
    assert 'data-label="Answers">2<' in _row(html, "coder-1") and "5.0 s" in _row(html, "coder-1")
    assert len(counted) == 2


def test_a_large_project_shows_the_last_figures_marked_and_refreshes_on_the_worker(
    study, settings, monkeypatch, counted, django_capture_on_commit_callbacks
):
    settings.CONCORD_QUALITY_INLINE_MAX_ANSWERS = 0
    project, items, people, client = study
    url = f"/p/{project.slug}/quality/"
    sent: list[int] = []
    monkeypatch.setattr(celery_tasks.refresh_quality_figures, "delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.get(url).content.decode()
    assert not counted and sent == [project.pk]
    assert "not computed yet" in html and "an update is being computed" in html
    assert 'data-label="Answers"><span class="muted">–</span>' in _row(html, "coder-0")
    assert quality_figures.quality_figures_run(project_id=project.pk) == "done"
    html = client.get(url).content.decode()
    assert "answers-stale" not in html and 'data-label="Answers">3<' in _row(html, "coder-0")

    helpers.answer(items[2], people[1], [1], time_ms=1000)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.get(url).content.decode()
    assert len(counted) == 1  # nothing read inside the request
    assert "out of date" in html and 'data-label="Answers">1<' in _row(html, "coder-1")
    assert sent == [project.pk, project.pk]
    client.get(url)  # a refresh under way is joined, not queued twice
    assert len(sent) == 2
    quality_figures.quality_figures_run(project_id=project.pk)
    html = client.get(url).content.decode()
    assert "answers-stale" not in html and 'data-label="Answers">2<' in _row(html, "coder-1")


def test_a_minimum_time_change_changes_the_version(study):
    project, _, _, _ = study
    before, _, _ = quality_figures.quality_version(project=project)
    project.crowd = {**(project.crowd or {}), "min_seconds_per_item": 3}
    project.save()
    project = type(project).objects.get(pk=project.pk)  # settings are parsed once per instance
    after, _, fast_ms = quality_figures.quality_version(project=project)
    assert after != before and fast_ms == 3000
    status = quality_figures.quality_figures_ensure(project=project)
    assert status.fresh
    assert {row["fast"] for row in status.figures.values()} == {3, 0}


def test_a_broker_outage_is_recorded_and_the_next_visit_tries_again(
    study, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.CONCORD_QUALITY_INLINE_MAX_ANSWERS = 0
    project, _, _, client = study

    def refuse(project_id):
        raise ConnectionError("broker away")

    monkeypatch.setattr(celery_tasks.refresh_quality_figures, "delay", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        client.get(f"/p/{project.slug}/quality/")
    state = QualityFigures.objects.get(project=project)
    assert state.refreshing_since is None and "Could not queue" in state.error
    html = client.get(f"/p/{project.slug}/quality/").content.decode()
    assert "Could not queue the refresh" in html
