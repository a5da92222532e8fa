"""Django's error views (``handler400/403/404/500`` in config/urls.py): JSON
``{"detail", "code"}`` for paths under /api/, Django's HTML pages everywhere else.

DRF's own errors (and refusals) already go through :func:`core.errors.exception_handler`; these
cover what never reaches a DRF view: an unknown URL, an unhandled exception, a request Django
refuses before routing (a bad Host header, a body over the size limit).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def json_error(detail: str, *, code: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": detail, "code": code}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return json_error("Bad request.", code="invalid", status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return json_error(
            "You do not have permission to perform this action.", code="forbidden", status=403
        )
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return json_error("Not found.", code="not_found", status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api(request):
        # Never the exception's text: it may name internals. The log has the traceback.
        return json_error("Server error.", code="server_error", status=500)
    return defaults.server_error(request)
