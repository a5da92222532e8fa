"""Random JSON at every JSON endpoint of the annotator and researcher API: never a 5xx.

Bodies are written as raw bytes so the server really receives NaN, infinities, huge integers,
NUL, lone surrogates and deep nesting (a client's JSON encoder would refuse some of them)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation import services
from tests.conftest import client_for

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=20)
    | st.sampled_from(["\x00", "a\x00b", "\ud800", "x" * 300])
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.just("\x00"), children, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = ["answer", "revision", "time_spent_ms", "submission_id", "start_batch", "judge", "filters"]
BODIES = st.one_of(
    JSON,
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5),
    st.integers(min_value=1, max_value=6000).map(lambda n: "[" * n + "]" * n),
)


def raw(body) -> str:
    if isinstance(body, str) and body.startswith("["):
        return body  # deep nesting, already JSON text
    return json.dumps(body, allow_nan=True, ensure_ascii=True)


@pytest.fixture
def endpoints(project, researcher, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    return {
        "annotator": (
            client_for(annotator),
            [
                ("post", f"/api/projects/{project.slug}/next/"),
                ("put", f"/api/assignments/{assignment.pk}/draft/"),
                ("post", f"/api/assignments/{assignment.pk}/submit/"),
                ("post", f"/api/assignments/{assignment.pk}/preselection/"),
            ],
        ),
        "researcher": (
            client_for(researcher),
            [
                ("post", f"/api/projects/{project.slug}/judge-runs/"),
                ("post", f"/api/projects/{project.slug}/import/"),
                ("post", "/api/auth/token/"),
            ],
        ),
    }


@pytest.mark.parametrize("who", ["annotator", "researcher"])
def test_random_json_never_gets_a_server_error(endpoints, who):
    client, routes = endpoints[who]

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(body=BODIES, route=st.sampled_from(routes))
    @example(body="[" * 5000 + "]" * 5000, route=routes[1])  # past the parser's recursion limit
    @example(body={"answer": {"a": "\x00"}, "revision": 1}, route=routes[1])
    @example(body={"answer": {}, "revision": 2**31}, route=routes[1])
    def check(body, route):
        method, url = route
        response = getattr(client, method)(url, raw(body), content_type="application/json")
        assert response.status_code < 500, (url, raw(body)[:200], response.content[:300])
        if response.status_code != 204:  # every answer with a body is JSON, errors included
            assert response["Content-Type"].startswith("application/json"), url

    check()
