"""The OpenAPI schema's error answers (drf-spectacular's ``DEFAULT_SCHEMA_CLASS``): every
operation documents the refusals it can give, with the one error body of
:mod:`core.errors` — ``{"detail", "code", "field"?}`` — so a client (and schemathesis's
status-code check in tests/test_api_schema_fuzz.py) meets no undocumented status."""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

from core.errors import STATUS_BY_CODE


class ErrorSerializer(serializers.Serializer):
    """An API error: a refusal, or DRF's and Django's own errors in the same shape."""

    detail = serializers.CharField(help_text="What is wrong, for a person.")
    code = serializers.CharField(
        help_text="For programs: " + ", ".join(STATUS_BY_CODE) + ", not_authenticated, …"
    )
    field = serializers.CharField(
        required=False, help_text="The request field at fault, where one is."
    )


# Any operation: a bad query or body, no or a wrong token, no right to it, not found (or not
# visible to the caller), over the request rate.
ALWAYS = {
    400: "Invalid request; `field` names the part at fault.",
    401: "Not authenticated (no token, or a wrong, expired or revoked one).",
    403: "Authenticated, but not allowed to do this.",
    404: "No such object, or not visible to the caller.",
    429: "Too many requests (the API rate, or the login lock); see Retry-After.",
}
# Operations that change something: a state that does not allow it, an object gone, a body
# over the upload limit, a service (the task queue) unavailable.
WRITES = {
    409: "Conflicts with the current state (e.g. the judge is already running).",
    410: "Gone (e.g. an expired reservation or invitation).",
    413: "The body or upload is over the size limit.",
    503: "A service the request needs is unavailable (e.g. the task queue); try again later.",
}


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(
        self, direction: Literal["request", "response"] = "response"
    ) -> dict[str, Any]:
        responses = super()._get_response_bodies(direction=direction)
        errors = dict(ALWAYS)
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            errors.update(WRITES)
        for status, description in errors.items():
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(
                    ErrorSerializer, str(status), direction=direction
                ) | {"description": description}
        return responses
