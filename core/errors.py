"""The one refusal type and its mapping to HTTP.

A service that refuses a request raises :class:`Refusal` (or a subclass named after its domain:
``WorkflowError``, ``JudgeError``, ``ImportFailed``…) with a ``code``; views never map errors to
status codes by hand. :func:`exception_handler` (DRF's ``EXCEPTION_HANDLER``) turns a refusal
into ``{"detail": message, "code": code, "field": field}`` with the status of its code,; server-rendered
pages show ``message`` and answer with ``status``.
"""

from __future__ import annotations

from typing import Any

STATUS_BY_CODE: dict[str, int] = {
    "invalid": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "gone": 410,
    "too_large": 413,
    "too_many_requests": 429,
    "unavailable": 503,
}


class Refusal(Exception):
    """The service refuses this, with a ``code`` from :data:`STATUS_BY_CODE` and, where one field
    of the request is at fault, its name."""

    default_code = "invalid"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str = "",
        errors: Any = None,
        about: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        if self.code not in STATUS_BY_CODE:
            raise ValueError(f"unknown refusal code {self.code!r}")
        self.field = field
        self.errors = errors  # per-field detail (a DRF errors structure), when there is one
        # What the refusal is about, sent beside detail and code (a failed import job's id,
        # status and report); its keys never replace detail, code or field.
        self.about = about or {}

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {**self.about, "detail": self.message, "code": self.code}
        if self.field:
            body["field"] = self.field
        if self.errors is not None:
            body["errors"] = self.errors
        return body


def exception_handler(exc: Exception, context: dict) -> Any:
    """DRF's handler, plus refusals (JSON with the code's status) and Django's own
    ``ValidationError`` (a model's ``clean()``, a validator), read as DRF's: a 400 with its
    messages per field."""
    from django.core.exceptions import ValidationError as DjangoValidationError
    from rest_framework import serializers
    from rest_framework.response import Response
    from rest_framework.views import exception_handler as drf_handler

    if isinstance(exc, DjangoValidationError):
        exc = serializers.ValidationError(serializers.as_serializer_error(exc))
    response: Response | None
    if isinstance(exc, Refusal):
        response = Response(exc.as_json(), status=exc.status)
    else:
        response = drf_handler(exc, context)
    if response is not None and isinstance(response.data, dict):
        _add_detail_and_code(response, exc)
    if response is not None:
        _as_json(context.get("request"))
    return response


def _as_json(request: Any) -> None:
    """An error is JSON whatever the view renders when it succeeds (the schema's YAML, a CSV
    export): DRF renders the response with the request's accepted renderer."""
    from rest_framework.renderers import JSONRenderer

    if request is not None:
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type


CODE_BY_STATUS = {status: code for code, status in STATUS_BY_CODE.items()}


def _add_detail_and_code(response: Any, exc: Exception) -> None:
    """Every API error carries ``detail`` and ``code``: DRF's own errors get the house code of
    their status (else DRF's code: ``not_authenticated``, ``method_not_allowed``…); a validation
    error keeps its per-field errors and gains the first of them as ``detail`` (and its path as
    ``field``, as a refusal has)."""
    data = response.data
    drf_code = exc.get_codes() if hasattr(exc, "get_codes") else None
    if "detail" not in data:
        field, message = first_error(data)
        data["detail"] = f"{field}: {message}" if field else message
        if field and "field" not in data:
            data["field"] = field
    if "code" not in data:
        if not isinstance(drf_code, str):
            drf_code = "invalid" if response.status_code == 400 else "error"
        data["code"] = CODE_BY_STATUS.get(response.status_code, drf_code)


def first_error(errors: Any, prefix: str = "") -> tuple[str, str]:
    """The first (field path, message) of a DRF ``errors`` structure, for one-line reports."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                path = prefix
            return first_error(value, path)
    if isinstance(errors, list):
        for index, value in enumerate(errors):
            if isinstance(value, dict | list) and value:
                return first_error(value, f"{prefix}[{index}]")
            if isinstance(value, dict | list):
                continue
            return prefix, str(value)
    return prefix, str(errors)
