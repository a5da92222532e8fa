"""What annotators may not see or do, by page and by API; CSRF; login rate limit; deploy check."""

import json
import os
import subprocess
import sys

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation import services
from tests import factories
from tests.conftest import REPO, client_for

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def walk(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk(inner)


def test_annotator_cannot_read_gold_through_the_next_item_api(annotator_client, project, items):
    response = annotator_client.post(f"/api/projects/{project.slug}/next/")
    assert response.status_code == 200
    keys = set(walk(response.data))
    assert not keys & {
        "gold",
        "group",
        "kind",
        "generator",
        "masked_evidence",
        "payload",
        "prepared",
    }
    text = json.dumps(response.data)
    assert "test-gen" not in text  # the generator (item group) is not revealed either


def test_annotator_cannot_list_items_or_export_or_see_progress(annotator_client, project, items):
    for url in ("items/", "export/", "progress/"):
        assert annotator_client.get(f"/api/projects/{project.slug}/{url}").status_code == 404
    body = {"format": "jsonl"}
    assert annotator_client.post(f"/api/projects/{project.slug}/import/", body).status_code == 404


def test_annotator_cannot_open_the_researcher_page_or_download_exports(client, annotator, project):
    client.force_login(annotator)
    assert client.get(f"/p/{project.slug}/").status_code == 404
    assert client.get(f"/p/{project.slug}/export/jsonl/").status_code == 404


def test_annotator_cannot_read_or_write_another_annotators_assignment(project, items, annotator):
    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="annotator")
    theirs = services.assignment_next(project=project, annotator=other)
    services.annotation_submit(assignment=theirs, answer=ANSWER)
    client = client_for(annotator)
    assert client.get(f"/api/assignments/{theirs.id}/").status_code == 404
    assert (
        client.put(
            f"/api/assignments/{theirs.id}/draft/", {"answer": {}, "revision": 9}, format="json"
        ).status_code
        == 404
    )
    assert (
        client.post(
            f"/api/assignments/{theirs.id}/submit/", {"answer": ANSWER}, format="json"
        ).status_code
        == 404
    )


def test_annotator_cannot_reach_other_projects(annotator_client, annotator, db):
    elsewhere = factories.ProjectFactory()
    factories.make_items(elsewhere, 2)
    assert annotator_client.post(f"/api/projects/{elsewhere.slug}/next/").status_code == 404
    assert annotator_client.get(f"/api/projects/{elsewhere.slug}/history/").status_code == 404
    listed = [p["slug"] for p in annotator_client.get("/api/projects/").data["results"]]
    assert elsewhere.slug not in listed
    client = Client()
    client.force_login(annotator)
    assert client.get(f"/p/{elsewhere.slug}/annotate/").status_code == 404


def test_researchers_annotating_page_needs_the_annotator_role(client, researcher, project):
    client.force_login(researcher)
    assert client.get(f"/p/{project.slug}/annotate/").status_code == 404


def test_anonymous_users_are_sent_to_login_and_refused_by_the_api(project, db):
    assert Client().get(f"/p/{project.slug}/annotate/").status_code == 302
    assert APIClient().post(f"/api/projects/{project.slug}/next/").status_code in (401, 403)


def test_csrf_is_enforced_on_session_authenticated_api_writes(annotator, project, items):
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator)
    response = client.post(f"/api/projects/{project.slug}/next/")
    assert response.status_code == 403 and "CSRF" in response.content.decode()


def test_login_attempts_are_rate_limited(db, settings):
    settings.LOGIN_RATE_LIMIT = 3
    user = factories.UserFactory()
    client = Client()
    for _ in range(3):
        assert (
            client.post("/login/", {"username": user.username, "password": "wrong"}).status_code
            == 200
        )
    locked = client.post("/login/", {"username": user.username, "password": factories.PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed attempts" in locked.content
    api = APIClient()
    for _ in range(3):
        api.post("/api/auth/token/", {"username": user.username + "x", "password": "wrong"})
    assert (
        api.post("/api/auth/token/", {"username": user.username + "x", "password": "w"}).status_code
        == 429
    )


def test_a_correct_login_works_and_token_auth_reaches_the_api(db, project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    response = Client().post("/login/", {"username": user.username, "password": factories.PASSWORD})
    assert response.status_code == 302
    token = (
        APIClient()
        .post("/api/auth/token/", {"username": user.username, "password": factories.PASSWORD})
        .data["token"]
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert [p["slug"] for p in api.get("/api/projects/").data["results"]] == [project.slug]


def test_production_settings_pass_the_deploy_check():
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_DEBUG="false", DJANGO_SECRET_KEY="x" * 64 + "-production-like-secret-key-for-check"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_openapi_schema_and_docs_are_served(researcher_client):
    schema = researcher_client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/projects/{slug}/next/" in schema.content
    assert researcher_client.get("/api/docs/").status_code == 200


@pytest.mark.parametrize("path", ["/healthz"])
def test_health_check_answers_without_login(db, path):
    assert Client().get(path).content == b"ok"


def test_padding_or_recasing_the_username_does_not_buy_more_login_attempts(db, settings):
    settings.LOGIN_RATE_LIMIT = 3
    user = factories.UserFactory()
    client = Client()
    for variant in (user.username, f" {user.username}", f"{user.username.upper()}\t"):
        client.post("/login/", {"username": variant, "password": "wrong"})
    locked = client.post(
        "/login/", {"username": f"  {user.username} ", "password": factories.PASSWORD}
    )
    assert locked.status_code == 429


def test_csv_export_cells_never_run_as_spreadsheet_formulas(project, annotator, items):
    from annotation.models import Item
    from studies.services.exports import export_stream

    Item.objects.filter(project=project).update(group='=HYPERLINK("http://evil.example","x")')
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    text = "".join(export_stream(project=project, fmt="csv"))
    assert ",'=HYPERLINK(" in text.replace('"', "")
    jsonl = "".join(export_stream(project=project, fmt="jsonl"))
    assert '"group":"=HYPERLINK(' in jsonl  # JSONL keeps the exact text (compact, issue 16)


def test_behind_a_proxy_failures_are_counted_per_forwarded_client(db, settings):
    settings.LOGIN_RATE_LIMIT = 2
    settings.CONCORD_CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    user = factories.UserFactory()
    client = Client()
    for _ in range(2):
        client.post(
            "/login/",
            {"username": user.username, "password": "x"},
            HTTP_X_FORWARDED_FOR="203.0.113.9",
        )
    assert (
        client.post(
            "/login/",
            {"username": user.username, "password": "x"},
            HTTP_X_FORWARDED_FOR="203.0.113.9",
        ).status_code
        == 429
    )
    other = client.post(
        "/login/",
        {"username": user.username, "password": factories.PASSWORD},
        HTTP_X_FORWARDED_FOR="198.51.100.7",
    )
    assert other.status_code == 302  # another client behind the same proxy is not locked out
