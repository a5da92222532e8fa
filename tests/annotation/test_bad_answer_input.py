"""Bad input to the annotator API is a JSON 400 naming the field, never a 500 (issue 14)."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Annotation, Draft
from tests.conftest import client_for

DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture
def assignment(project, annotator, items):
    return services.assignment_next(project=project, annotator=annotator)


def send(client, url, raw: str):
    return client.generic(
        "POST" if url.endswith("submit/") else "PUT", url, raw, content_type="application/json"
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"answer": {}, "revision": 2147483648}', "revision"),
        (
            '{"answer": {}, "revision": 1, "time_spent_ms": 1000000000000000000000000000000}',
            "time_spent_ms",
        ),
        ('{"answer": {"note": "a\\u0000b"}, "revision": 1}', "answer"),
        ('{"answer": {"note": "\\ud800"}, "revision": 1}', "answer"),
        ('{"answer": {"a\\u0000": 1}, "revision": 1}', "answer"),
        # Refused while parsing the body (a 400 "JSON parse error" for the whole request):
        ('{"answer": {"x": NaN}, "revision": 1}', None),
        ('{"answer": {"x": -Infinity}, "revision": 1}', None),
        ('{"answer": {"x": ' + "9" * 5000 + '}, "revision": 1}', None),
        ('{"answer": {"x": ' + "9" * 30 + '}, "revision": 1}', "answer"),
        ('{"answer": ' + DEEP + ', "revision": 1}', None),
    ],
)
@pytest.mark.parametrize("endpoint", ["draft", "submit"])
def test_bad_answers_are_a_400_naming_the_field(annotator, assignment, body, field, endpoint):
    client = client_for(annotator)
    response = send(client, f"/api/assignments/{assignment.pk}/{endpoint}/", body)
    assert response.status_code == 400, response.content[:300]
    data = response.json()
    assert data["detail"]
    if field:
        assert field in (data.get("field") or "") or field in data, data
    assert not Draft.objects.exists() and not Annotation.objects.exists()


def test_the_json_check_names_where_the_problem_is():
    from core.json_safety import json_problem

    assert json_problem({"claims": [{"id": "c1", "text": "ok"}], "n": 3.5}) is None
    assert (
        json_problem({"claims": [{"text": "a\x00"}]}) == "claims.0.text: contains a NUL character"
    )
    assert json_problem([float("nan")]).startswith("0: numbers must be finite")
    assert "nested more than 64" in json_problem(eval("[" * 70 + "]" * 70))  # noqa: S307


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"answer": {}, "revision": 2147483648}', "revision"),
        ('{"answer": {}, "revision": 1, "time_spent_ms": 1' + "0" * 30 + "}", "time_spent_ms"),
        ('{"answer": {"\\ud800": 1}, "revision": 1}', "answer"),
        ('{"revision": 1, "answer": {"x": ' + DEEP + "}}", "answer"),
        ('{"revision": 1, "answer": ' + "[" * 200 + "]" * 200 + "}", "answer"),
    ],
)
@pytest.mark.parametrize("endpoint", ["draft", "submit"])
def test_the_error_body_names_the_field_in_field(annotator, assignment, body, field, endpoint):
    """``field`` (beside ``detail`` and ``code``) names the field, as for every refusal, also
    for DRF's own validation errors and for JSON too deep to parse."""
    response = send(client_for(annotator), f"/api/assignments/{assignment.pk}/{endpoint}/", body)
    assert response.status_code == 400, response.content[:300]
    data = response.json()
    assert data["field"] == field, data
    assert data["detail"] and data["code"] == "invalid", data


def test_a_body_too_deep_to_parse_without_a_top_level_object_is_a_400(annotator, assignment):
    response = send(client_for(annotator), f"/api/assignments/{assignment.pk}/submit/", DEEP)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"] and "field" not in response.json()


def test_the_top_level_key_of_json_too_deep_to_parse():
    from core.parsers import top_level_key

    assert top_level_key('{"a": 1, "b\\"c": ' + "[" * 100) == 'b"c'
    assert top_level_key('{"a": {"x": ' + "[" * 100) == "a"
    assert top_level_key('{"\\ud800": ' + "[" * 100) == "\\ud800"
    assert top_level_key("[" * 100) == ""
