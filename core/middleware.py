"""Refuse a NUL character in a query string or a submitted form before any view sees it.

PostgreSQL cannot store or compare text containing NUL, so a `?exclude=%00` used in a query was a
500. No field of Concord takes a NUL, so the request is refused (400) in one place, in JSON under
/api/ and as plain text elsewhere; uploads (multipart) are checked by their readers instead."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from core.error_views import is_api, json_error


def _has_nul(query) -> str | None:
    for key, values in query.lists():
        if "\x00" in key or any("\x00" in v for v in values):
            return key.replace("\x00", "\\0")
    return None


class RefuseNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        field = _has_nul(request.GET)
        if field is None and request.content_type == "application/x-www-form-urlencoded":
            field = _has_nul(request.POST)
        if field is not None:
            message = f"{field}: contains a NUL character."
            if is_api(request):
                return json_error(message, code="invalid", status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
