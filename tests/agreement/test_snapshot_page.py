"""The dashboard renders the page stored with its snapshot: nothing is computed on a view, the
query count of a fresh page does not grow with the answers, and CSV downloads read one table."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agreement.models import AgreementSnapshot
from agreement.reports import page as page_module
from agreement.reports.page import PAGE_VERSION, report_page
from tests import factories
from tests.agreement import helpers


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def dashboard(project) -> str:
    return f"/p/{project.slug}/agreement/"


def refuse(*args, **kwargs):
    raise AssertionError("the dashboard computed something on a view")


def test_a_done_snapshot_stores_its_page_and_the_dashboard_renders_it_without_computing(
    db, researcher, monkeypatch
):
    project, _, _ = helpers.seeded_study(researcher)
    client = client_for(researcher)
    first = client.get(dashboard(project))  # computes the report inline
    assert first.status_code == 200
    snapshot = AgreementSnapshot.objects.get(project=project, status="done")
    assert snapshot.page["version"] == PAGE_VERSION
    stored = dict(snapshot.page)
    assert sorted(stored.pop("median_times").values()) == [5.0, 25.0, 60.0]
    assert stored == report_page(snapshot.result)
    # Any computation on the next view would fail it.
    monkeypatch.setattr("agreement.services.build_report", refuse)
    monkeypatch.setattr("agreement.services.report_page", refuse)
    monkeypatch.setattr(page_module, "render_plot", refuse)
    monkeypatch.setattr("agreement.views.render_plot", refuse)
    # Nor read every answer for the median times: they come with the page.
    monkeypatch.setattr("agreement.selectors._median_times_ms", refuse)
    again = client.get(dashboard(project))
    assert again.status_code == 200
    html = again.content.decode()
    assert "0.175" in html and "<svg" in html and "up to date" in html
    assert again.content.count(b"<svg") == first.content.count(b"<svg")
    assert b"download=agreement" in again.content


def test_the_view_reads_the_page_not_the_report(db, researcher):
    project, _, _ = helpers.seeded_study(researcher)
    client = client_for(researcher)
    client.get(dashboard(project))
    with CaptureQueriesContext(connection) as queries:
        client.get(dashboard(project))
    snapshot_reads = [
        q["sql"]
        for q in queries.captured_queries
        if '"agreement_agreementsnapshot"."page"' in q["sql"]
    ]
    assert snapshot_reads, "the page is read"
    assert not any(
        '"agreement_agreementsnapshot"."result"' in q["sql"] for q in queries.captured_queries
    )


def test_a_snapshot_stored_before_pages_is_shown_from_its_result(db, researcher):
    project, _, _ = helpers.seeded_study(researcher)
    client = client_for(researcher)
    client.get(dashboard(project))
    AgreementSnapshot.objects.filter(project=project).update(page=None)
    response = client.get(dashboard(project))
    assert response.status_code == 200
    assert "0.175" in response.content.decode()


def test_a_csv_download_reads_one_table_of_the_snapshot(db, researcher):
    project, _, _ = helpers.seeded_study(researcher)
    client = client_for(researcher)
    client.get(dashboard(project))
    snapshot = AgreementSnapshot.objects.get(project=project, status="done")
    for name in snapshot.result["tables"]:
        response = client.get(dashboard(project) + f"?download={name}")
        assert response.status_code == 200, name
        assert response["Content-Type"].startswith("text/csv")
    missing = client.get(dashboard(project) + "?download=no-such-table")
    assert missing.status_code == 404
    assert "no-such-table" in missing.content.decode()
    quoted = client.get(dashboard(project) + "?download=a'b\"c")
    assert quoted.status_code == 404


def test_a_fresh_page_takes_the_same_number_of_queries_however_many_answers(db, researcher):
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    users = [factories.UserFactory() for _ in range(3)]
    for user in users:
        factories.MembershipFactory(project=project, user=user)
    client = client_for(researcher)

    def add(start, count):
        for n in range(start, start + count):
            (item,) = helpers.make_item(project, f"q{n}", "G" if n % 2 else "H", n)
            for k, user in enumerate(users):
                helpers.answer(item, user, [1] if (n + k) % 3 else [2], 10 * k)

    def fresh_page_queries() -> int:
        client.get(dashboard(project))  # computes (inline: small projects)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(dashboard(project))
        assert "up to date" in response.content.decode()
        return len(queries.captured_queries)

    add(0, 3)
    small = fresh_page_queries()
    add(3, 60)
    assert fresh_page_queries() == small


def test_median_times_from_the_database_equal_those_computed_in_python(db, researcher, monkeypatch):
    from agreement import selectors

    project, _, _ = helpers.seeded_study(researcher)
    in_database = selectors._median_times_ms(project)
    monkeypatch.setattr(selectors.connection, "vendor", "other")
    in_python = selectors._median_times_ms(project)
    assert in_database == in_python
    assert sorted(in_database.values()) == [5000.0, 25000.0, 60000.0]


def test_the_progress_table_shows_the_median_times_stored_with_the_page(db, researcher):
    project, _, users = helpers.seeded_study(researcher)
    client = client_for(researcher)
    client.get(dashboard(project))
    snapshot = AgreementSnapshot.objects.get(project=project, status="done")
    page = dict(snapshot.page)
    pseudonym = next(iter(page["median_times"]))
    page["median_times"] = {**page["median_times"], pseudonym: 123.4}
    AgreementSnapshot.objects.filter(pk=snapshot.pk).update(page=page)
    response = client.get(dashboard(project))
    rows = {row["pseudonym"]: row for row in response.context["progress"]["annotators"]}
    assert rows[pseudonym]["median_time_s"] == 123.4
