"""Every error under /api/ is JSON ``{"detail": …, "code": …}``; pages keep their HTML (issue 14).

An outside probe found the HTML error page on a 500 under /api/; unknown API URLs were HTML 404s.
"""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import client_for


def assert_json_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert body["code"] == code, body
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


def test_an_unknown_api_url_is_a_json_404_and_an_unknown_page_stays_html(researcher):
    client = client_for(researcher)
    assert_json_error(client.get("/api/no-such-thing/"), 404, "not_found")
    assert_json_error(APIClient().post("/api/projects/a/b/c/"), 404, "not_found")
    page = Client().get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_an_unhandled_exception_under_the_api_is_a_json_500(researcher, monkeypatch):
    from studies import api

    def explode(*args, **kwargs):
        raise RuntimeError("boom: a secret detail that must not leak")

    monkeypatch.setattr(api.ProjectListView, "get", explode)
    client = client_for(researcher)
    client.raise_request_exception = False
    body = assert_json_error(client.get("/api/projects/"), 500, "server_error")
    assert "secret" not in body["detail"]


def test_an_unhandled_exception_on_a_page_keeps_the_html_500(researcher, monkeypatch):
    from projects import selectors

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(selectors, "memberships_for_user", explode)
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    response = client.get("/")
    assert response.status_code == 500 and response["Content-Type"].startswith("text/html")


def test_drf_errors_carry_a_code_too(researcher, annotator_client, project):
    client = client_for(researcher)
    assert_json_error(client.get("/api/projects/no-such-project/progress/"), 404, "not_found")
    assert_json_error(client.delete("/api/projects/"), 405, "method_not_allowed")
    assert_json_error(APIClient().get("/api/projects/"), 401, "not_authenticated")
    bad_token = APIClient(HTTP_AUTHORIZATION="Token nope")
    assert_json_error(bad_token.get("/api/projects/"), 401, "authentication_failed")
    assert_json_error(
        annotator_client.get(f"/api/projects/{project.slug}/progress/"), 404, "not_found"
    )


def test_a_validation_error_keeps_its_fields_and_gains_detail_and_code(researcher, project):
    # two required fields (the items import detects its format by default)
    response = client_for(researcher).post(f"/api/projects/{project.slug}/annotations/import/", {})
    body = assert_json_error(response, 400, "invalid")
    assert "file" in body and "format" in body  # the per-field errors stay where clients read them
    assert body["detail"].startswith(("file:", "format:"))


def test_a_bad_request_outside_drf_is_json_under_the_api(db):
    response = Client().get("/api/projects/", HTTP_HOST="evil.example")  # DisallowedHost
    assert_json_error(response, 400, "invalid")
    page = Client().get("/", HTTP_HOST="evil.example")
    assert page.status_code == 400 and not page["Content-Type"].startswith("application/json")


def test_a_wrong_password_at_the_token_endpoint_is_a_json_400_with_a_code(db):
    response = APIClient().post("/api/auth/token/", {"username": "nobody", "password": "x"})
    body = assert_json_error(response, 400, "invalid")
    assert "Unable to log in" in body["detail"]


@pytest.mark.parametrize("path", ["/api/auth/token/"])
def test_the_locked_token_endpoint_is_a_json_429(db, settings, path):
    settings.LOGIN_RATE_LIMIT = 1
    client = APIClient()
    client.post(path, {"username": "someone", "password": "wrong"})
    response = client.post(path, {"username": "someone", "password": "wrong"})
    body = assert_json_error(response, 429, "too_many_requests")
    assert "Too many failed attempts" in body["detail"]
    assert response["Retry-After"]


@pytest.mark.parametrize(
    "path",
    [
        "/p/{slug}/agreement/?exclude=%00",
        "/p/{slug}/agreement/?include=a%00b",
        "/p/{slug}/agreement/?judge=%00",
        "/p/{slug}/agreement/compare/?with=x%00",
        "/api/projects/{slug}/items/?group=%00",
    ],
)
def test_a_nul_in_a_query_string_is_a_400_not_a_500(researcher, project, path):
    from django.test import Client

    client = Client()
    client.force_login(researcher)
    response = client.get(path.format(slug=project.slug))
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_a_nul_or_garbage_in_the_quality_form_is_refused_not_a_500(researcher, project):
    from urllib.parse import urlencode

    from django.test import Client

    client = Client()
    client.force_login(researcher)
    url = f"/p/{project.slug}/quality/"
    form = urlencode({"membership": "1\x00", "action": "qualify"})
    posted = client.post(url, form, content_type="application/x-www-form-urlencoded")
    assert posted.status_code == 400  # as a browser sends it
    for membership in ("1\x00", "abc", "-1"):  # multipart, as a script might send it
        response = client.post(url, {"membership": membership, "action": "qualify"})
        assert response.status_code == 404


@pytest.mark.parametrize(
    "path", ["/api/assignments/abc/", "/api/nonexistent/", "/api/assignments/-1/"]
)
def test_api_404s_are_json_even_with_debug_pages_on(settings, annotator_client, path):
    settings.DEBUG = True  # `make run`: Django's own debug 404 page would be HTML
    response = annotator_client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "not_found"


# --- one error contract (issues 24 and 25) -----------------------------------------------------


def test_creating_a_project_without_the_right_is_a_403_with_a_code(researcher):
    body = assert_json_error(
        client_for(researcher).post("/api/projects/", {}, format="json"), 403, "forbidden"
    )
    assert "staff" in body["detail"]


def test_a_missing_judge_run_is_a_404_with_a_code(researcher, project):
    client = client_for(researcher)
    for path in ("judge-runs/999999/", "judge-runs/999999/cancel/"):
        url = f"/api/projects/{project.slug}/{path}"
        response = client.post(url) if path.endswith("cancel/") else client.get(url)
        body = assert_json_error(response, 404, "not_found")
        assert body["detail"] == "No such run."


def test_an_unknown_item_format_is_a_400_naming_the_field(researcher, project):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/import/",
        {"file": SimpleUploadedFile("a.xyz", b"x"), "format": "xyz"},
        format="multipart",
    )
    body = assert_json_error(response, 400, "invalid")
    assert body["field"] == "format" and "Unknown format 'xyz'" in body["detail"]


def test_a_django_validation_error_is_a_json_400_with_its_fields(researcher, monkeypatch):
    from django.core.exceptions import ValidationError

    from studies import api

    def refuse(*args, **kwargs):
        raise ValidationError({"name": ["Too long.", "Odd."], "slug": "Taken."})

    monkeypatch.setattr(api.ProjectListView, "get_queryset", refuse)
    body = assert_json_error(client_for(researcher).get("/api/projects/"), 400, "invalid")
    assert body["name"] == ["Too long.", "Odd."] and body["slug"] == ["Taken."]
    assert body["field"] == "name" and body["detail"] == "name: Too long."
    monkeypatch.setattr(
        api.ProjectListView,
        "get_queryset",
        lambda self: (_ for _ in ()).throw(ValidationError("Not now.")),
    )
    body = assert_json_error(client_for(researcher).get("/api/projects/"), 400, "invalid")
    assert body["detail"] == "Not now."


@pytest.mark.parametrize(
    "path", ["/api/projects/", "/api/projects/{slug}/progress/", "/api/projects/nope/progress/"]
)
def test_trace_is_a_405_wherever_it_is_sent(researcher, project, path):
    response = client_for(researcher).generic("TRACE", path.format(slug=project.slug))
    assert_json_error(response, 405, "method_not_allowed")
    assert "TRACE" not in response["Allow"] and "GET" in response["Allow"]
    page = Client().generic("TRACE", "/")
    assert page.status_code == 405 and "TRACE" not in page["Allow"]


def test_page_refusals_go_through_the_refusal_type_as_text(study_with_a_waiting_report):
    """The dashboard's CSV downloads refuse with a Refusal (409 while computing, 404 for an
    unknown table), shown as plain text with the code's status."""
    client, url = study_with_a_waiting_report
    waiting = client.get(url + "?download=agreement")
    assert waiting.status_code == 409
    assert waiting["Content-Type"].startswith("text/plain")
    assert "still being computed" in waiting.content.decode()


@pytest.fixture
def study_with_a_waiting_report(researcher, project, items, monkeypatch):
    from types import SimpleNamespace

    from agreement import views

    waiting = SimpleNamespace(snapshot=None, page=None, report=None)
    monkeypatch.setattr(views.services, "snapshot_request", lambda **kwargs: waiting)
    client = Client()
    client.force_login(researcher)
    return client, f"/p/{project.slug}/agreement/"


def test_every_operation_documents_its_error_answers_with_the_error_body():
    """schemathesis (tests/test_api_schema_fuzz.py) holds the live answers to this schema."""
    from tests.test_api_schema_fuzz import published_schema

    schema = published_schema()
    error = {"$ref": "#/components/schemas/Error"}
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            for status in ("400", "401", "403", "404", "429"):
                assert status in responses, (method, path, status)
            if method in ("post", "put", "patch", "delete"):
                assert {"409", "413", "503"} <= set(responses), (method, path)
    upload = schema["paths"]["/api/projects/{slug}/import/"]["post"]["responses"]
    assert upload["503"]["content"]["application/json"]["schema"] == error
    assert {"201", "202"} <= set(upload)


def test_a_body_that_gives_a_key_twice_is_a_400_naming_the_key_and_changes_nothing(researcher):
    # Found by an outside probe: {"slug": "a", "slug": "b"} created "b" without a word.
    from projects.models import Project

    researcher.is_staff = True  # may create projects
    researcher.save(update_fields=["is_staff"])
    body = '{"slug": "first-of-two", "name": "N", "task_type": "stance", "slug": "second-of-two"}'
    response = client_for(researcher).post("/api/projects/", body, content_type="application/json")
    refused = assert_json_error(response, 400, "invalid")
    assert refused["field"] == "slug" and "given twice" in refused["detail"]
    assert not Project.objects.filter(slug__in=["first-of-two", "second-of-two"]).exists()
    nested = '{"answer": {"label": "a", "label": "b"}}'
    response = client_for(researcher).post(
        "/api/projects/", nested, content_type="application/json"
    )
    assert assert_json_error(response, 400, "invalid")["field"] == "label"


def test_a_huge_integer_in_a_body_says_so_without_pythons_advice(researcher):
    researcher.is_staff = True
    researcher.save(update_fields=["is_staff"])
    response = client_for(researcher).post(
        "/api/projects/", '{"n": ' + "9" * 5001 + "}", content_type="application/json"
    )
    body = assert_json_error(response, 400, "invalid")
    assert "4300 digits" in body["detail"] and "sys.set_int_max_str_digits" not in body["detail"]
