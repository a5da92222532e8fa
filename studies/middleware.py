"""Refuse a request body larger than its address takes, from its Content-Length, before anything
reads it (issue 24: an anonymous multipart POST to /login/ streamed 120 MB to a temporary file
and held a sync worker for two minutes before the limit was checked).

Every request may carry up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (the most any form or JSON
body of Concord can hold). Larger bodies are taken only by the views marked ``@large_uploads``
(the item and annotation imports, page and API), only from an authenticated researcher of the
project in the URL, and only up to ``CONCORD_MAX_UPLOAD_BYTES`` plus ``FORM_MARGIN`` for the
form's other fields and the multipart framing; the service then checks each file against
``CONCORD_MAX_UPLOAD_BYTES`` on its own. A refusal is a 413 naming the limit and the setting
that raises it: JSON ``{"detail", "code": "too_large"}`` under /api/, plain text elsewhere.

A body without a Content-Length (chunked) is not read by Django at all, so it needs no check.
The reverse proxy refuses the same sizes first (deploy/Caddyfile, ``request_body``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from rest_framework import exceptions

from core.errors import Refusal
from core.middleware import refusal_response
from projects.models import Project
from projects.permissions import RESEARCH_ROLES, has_role
from projects.tokens import TokenAuthentication

FORM_MARGIN = 2**20  # the import form's other fields and the multipart framing


def large_uploads(view: Callable) -> Callable:
    """Mark a view (function or class) as taking an upload up to ``CONCORD_MAX_UPLOAD_BYTES``
    from a researcher of the project named by its ``slug`` URL argument."""
    view.takes_large_uploads = True
    return view


def _mib(size: int) -> str:
    return f"{size:,} bytes ({size / 2**20:.0f} MiB)"


def _content_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:  # Django reads such a body as empty
        return 0


def _takes_large_uploads(request: HttpRequest) -> str | None:
    """The project slug of an upload view at this address, else None."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return None
    view = getattr(match.func, "view_class", match.func)
    if not getattr(view, "takes_large_uploads", False) and not getattr(
        match.func, "takes_large_uploads", False
    ):
        return None
    return match.kwargs.get("slug")


def _researcher_of(request: HttpRequest, slug: str) -> bool:
    """Whether the session's user, or the API token's, is a researcher of project ``slug``
    (read from the headers and the database only, never the body)."""
    user = request.user
    if not user.is_authenticated and request.META.get("HTTP_AUTHORIZATION"):
        try:
            found = TokenAuthentication().authenticate(request)
        except exceptions.AuthenticationFailed:
            found = None
        user = found[0] if found else user
    if not user.is_authenticated:
        return False
    project = Project.objects.filter(slug=slug).first()
    return project is not None and has_role(user, project, RESEARCH_ROLES)


class RequestSizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        size = _content_length(request)
        ordinary = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if size <= ordinary:
            return self.get_response(request)
        slug = _takes_large_uploads(request)
        if slug is not None and _researcher_of(request, slug):
            limit = settings.CONCORD_MAX_UPLOAD_BYTES
            if size <= limit + FORM_MARGIN:
                return self.get_response(request)
            message = (
                f"The upload is {size:,} bytes; uploads are limited to {_mib(limit)} "
                "(setting CONCORD_MAX_UPLOAD_BYTES), with 1 MiB for the form's other fields."
            )
        else:
            message = (
                f"The request is {size:,} bytes; requests are limited to {_mib(ordinary)} "
                "(setting DATA_UPLOAD_MAX_MEMORY_SIZE). Only a project's researchers may send "
                "larger files, to its import forms (setting CONCORD_MAX_UPLOAD_BYTES)."
            )
        return refusal_response(request, Refusal(message, code="too_large"))
