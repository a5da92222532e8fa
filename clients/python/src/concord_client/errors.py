"""Errors the client raises: the API's ``{"detail", "code", "field"}`` as exceptions."""

from __future__ import annotations

from typing import Any


class ConcordError(Exception):
    """The API refused a request. ``status`` is the HTTP status, ``code`` the API's code
    (``invalid``, ``forbidden``, ``not_found``, ``conflict``, ``gone``, ``too_large``,
    ``too_many_requests``, ``unavailable``, or DRF's ``not_authenticated``…), ``field`` the
    request field at fault ("" when none), ``detail`` the message, ``body`` the whole answer."""

    def __init__(
        self,
        detail: str,
        *,
        status: int,
        code: str = "",
        field: str = "",
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}" + (f" (field {field})" if field else ""))
        self.detail = detail
        self.status = status
        self.code = code
        self.field = field
        self.body = body


class InvalidRequest(ConcordError):
    """400: a field of the request is wrong (see ``field``)."""


class NotAuthenticated(ConcordError):
    """401: no token, or an expired or revoked one."""


class Forbidden(ConcordError):
    """403."""


class NotFound(ConcordError):
    """404: no such thing, or not yours to see (projects answer 404 to non-members)."""


class Conflict(ConcordError):
    """409: e.g. the judge is already running."""


class RateLimited(ConcordError):
    """429: over the API's rate; ``retry_after`` seconds to wait (None if not said)."""

    retry_after: float | None = None


class Unavailable(ConcordError):
    """503: the server or its task queue is away; retry later."""


class ImportFailedError(ConcordError):
    """An import job ended as failed (``job`` holds the job, ``detail`` the reason)."""

    job: dict | None = None


class ExportFormatError(ValueError):
    """A streamed export had a line that is not a row before its end."""


class IncompleteExportError(ExportFormatError):
    """A streamed export is not the whole file the server wrote: its end line is missing (the
    connection broke, a proxy or a worker cut it) or does not match the rows and bytes read.
    Rows already yielded came before the cut; read the export again."""


BY_STATUS: dict[int, type[ConcordError]] = {
    400: InvalidRequest,
    401: NotAuthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def error_from(status: int, body: Any, headers: Any = None) -> ConcordError:
    """The exception for an error answer (JSON or not)."""
    if isinstance(body, dict):
        detail = str(body.get("detail") or body)
        code = str(body.get("code") or "")
        field = str(body.get("field") or "")
    else:
        detail, code, field = (str(body)[:500] or f"HTTP {status}"), "", ""
    error = BY_STATUS.get(status, ConcordError)(
        detail, status=status, code=code, field=field, body=body
    )
    if isinstance(error, RateLimited) and headers is not None:
        try:
            error.retry_after = float(headers.get("Retry-After"))
        except (TypeError, ValueError):
            error.retry_after = None
    return error
