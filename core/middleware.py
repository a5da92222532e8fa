"""Refuse a NUL character in a query string or a submitted form before any view sees it.

PostgreSQL cannot store or compare text containing NUL, so a `?exclude=%00` used in a query was a
500. No field of Concord takes a NUL, so the request is refused (400) in one place, in JSON under
/api/ and as plain text elsewhere; uploads (multipart) are checked by their readers instead."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.utils import translation
from django.utils.cache import patch_vary_headers

from core.error_views import is_api, json_error
from core.errors import Refusal


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


CODE_BY_STATUS = {
    400: "invalid",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    429: "too_many_requests",
}


class ApiErrorsAsJsonMiddleware:
    """Under /api/ every error is JSON ``{"detail", "code"}``, also where Django answers with an
    HTML page of its own (the debug pages of `make run`, a 404 from the URL resolver); the HTML
    error pages elsewhere are left as they are. A 500's text is never sent: the log has it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        html = response.get("Content-Type", "").startswith("text/html")
        if response.status_code < 400 or not html or not is_api(request):
            return response
        if response.status_code >= 500:
            return json_error("Server error.", code="server_error", status=response.status_code)
        return json_error(
            response.reason_phrase + ".",
            code=CODE_BY_STATUS.get(response.status_code, "error"),
            status=response.status_code,
        )


class RefusalMiddleware:
    """A :class:`core.errors.Refusal` raised by a view that is not DRF's (the server-rendered
    pages and their CSV downloads) answers with its code's status: JSON ``{"detail", "code",
    "field"}`` under /api/, its message as plain text elsewhere. DRF's views map refusals in
    :func:`core.errors.exception_handler`; no view builds an error response by hand
    (tests/test_house.py)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, Refusal):
            return None
        return refusal_response(request, exception)


def refusal_response(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """A refusal answered outside a view (a middleware's or a page's): JSON under /api/, plain
    text elsewhere, with the status of its code."""
    if is_api(request):
        return JsonResponse(refusal.as_json(), status=refusal.status)
    return HttpResponse(
        refusal.message, status=refusal.status, content_type="text/plain; charset=utf-8"
    )


REFUSED_METHODS = ("TRACE", "CONNECT")


class RefuseTraceMiddleware:
    """TRACE (and CONNECT) is served nowhere: a 405 before any view runs, so the answer does not
    depend on who asks or whether the project exists (a view checks permissions before the
    method, which made TRACE on another project's URL a 404). ``Allow`` names the methods the
    URL's view serves where it says (class-based views), else GET and HEAD."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in REFUSED_METHODS:
            return self.get_response(request)
        message = f'Method "{request.method}" not allowed.'
        if is_api(request):
            response: HttpResponse = json_error(message, code="method_not_allowed", status=405)
        else:
            response = HttpResponse(message, status=405, content_type="text/plain; charset=utf-8")
        response["Allow"] = ", ".join(_allowed_methods(request.path_info))
        return response


def _allowed_methods(path: str) -> list[str]:
    try:
        view = resolve(path).func
    except Resolver404:
        return ["GET", "HEAD"]
    view_class = getattr(view, "view_class", None) or getattr(view, "cls", None)
    if view_class is None:
        return ["GET", "HEAD"]
    return [
        method.upper()
        for method in view_class.http_method_names
        if method.upper() not in REFUSED_METHODS and hasattr(view_class, method)
    ]


# The session key of an annotator's chosen language (a crowd link's ``?lang=``, the language
# form of the annotation page, or their membership's setting).
LANGUAGE_SESSION_KEY = "concord_language"


def supported_language(code: str) -> str | None:
    """``code`` as one of ``settings.LANGUAGES`` (``de-AT`` → ``de``), or None."""
    if not code or len(code) > 32 or not translation.check_for_language(code):
        return None
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return None


class LanguageMiddleware:
    """The language a request is answered in: ``?lang=xx`` (kept in the session, so a crowd link's
    language holds for the whole visit, logins included), else the session's choice, else the
    browser's Accept-Language, else ``LANGUAGE_CODE``. Only languages in ``settings.LANGUAGES``;
    anything else is ignored. The language is active for the view and its rendering only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = supported_language(request.GET.get("lang", ""))
        session = getattr(request, "session", None)
        if chosen and session is not None and session.get(LANGUAGE_SESSION_KEY) != chosen:
            session[LANGUAGE_SESSION_KEY] = chosen
        stored = supported_language(session.get(LANGUAGE_SESSION_KEY, "")) if session else None
        language = chosen or stored or translation.get_language_from_request(request)
        with translation.override(language):
            request.LANGUAGE_CODE = translation.get_language()
            response = self.get_response(request)
        # A login that started a new session (another user was logged in) dropped the choice.
        session = getattr(request, "session", None)
        if chosen and session is not None and session.get(LANGUAGE_SESSION_KEY) != chosen:
            session[LANGUAGE_SESSION_KEY] = chosen
        patch_vary_headers(response, ("Accept-Language",))
        response.headers.setdefault("Content-Language", language)
        return response
