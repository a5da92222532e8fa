"""Schemathesis against the live test server (issue 14): for every operation of the published
OpenAPI schema, a bounded number of generated requests with a researcher's token and with an
annotator's token; no answer is a 5xx, every status is one the schema documents for the
operation (issue 24: 42 and 35 were not), and every answer has the content type and body the
schema declares for its status."""

from __future__ import annotations

import json

import pytest

from tests import factories
from tests.conftest import REQUIRE_SERVICES

try:
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )
except ImportError:  # a developer machine without the dev extras; CI must have them
    if REQUIRE_SERVICES:
        raise
    pytest.skip("needs schemathesis (pip install -e '.[dev]')", allow_module_level=True)

EXAMPLES_PER_OPERATION = 4  # about 20 operations × 4 examples × 2 personas (× 2 slugs)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def published_schema() -> dict:
    """The OpenAPI document ``/api/schema/`` serves, generated in-process (as JSON)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(public=True)))


RAW_SCHEMA = published_schema()
SCHEMA = schemathesis.openapi.from_dict(RAW_SCHEMA)
OPERATIONS = sorted(
    f"{method.upper()} {path}"
    for path, methods in RAW_SCHEMA["paths"].items()
    for method in methods
    if method in ("get", "post", "put", "patch", "delete")
)


@pytest.fixture
def personas(transactional_db, celery_eager):
    """A researcher and an annotator of one project with items (generated slugs and ids mostly
    miss it, which is what the 404 paths need)."""
    project = factories.ProjectFactory(annotators_per_item=2)
    researcher = factories.UserFactory(username=factories.unique("fuzz-researcher"))
    annotator = factories.UserFactory(username=factories.unique("fuzz-annotator"))
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    factories.make_items(project, 3)
    return project, [researcher, annotator]


def test_every_api_operation_is_fuzzed():
    assert len(OPERATIONS) >= 15 and "GET /api/projects/{slug}/export/" in OPERATIONS


@pytest.mark.parametrize("operation", OPERATIONS)
def test_no_server_error_and_answers_match_the_schema(operation, personas, live_server):
    from knox.models import AuthToken

    project, users = personas

    @given(case=SCHEMA.find_operation_by_label(operation).as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def as_each_persona(case):
        variants = [dict(case.path_parameters or {})]
        if "slug" in variants[0]:  # the generated slug, and the project the personas are in
            variants.append({**variants[0], "slug": project.slug})
        for path_parameters in variants:
            case.path_parameters = path_parameters
            for user in users:
                # A fresh token per request: a generated logout would revoke a shared one.
                _, token = AuthToken.objects.create(user)
                case.call_and_validate(
                    base_url=live_server.url,
                    headers={"Authorization": f"Token {token}"},
                    checks=CHECKS,
                )

    as_each_persona()
