"""Login with a rate limit on failed attempts, for the login page and the API token endpoint.

Failures are counted per (username, client address) in the cache (Redis in production); after
``LOGIN_RATE_LIMIT`` failures within ``LOGIN_RATE_WINDOW_SECONDS`` further attempts are refused
with 429 until the window passes, even with the right password.
"""

from __future__ import annotations

import hashlib
import unicodedata

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response


def _key(username: str, address: str) -> str:
    # Count every spelling Django accepts for one account together (" alice", "ALICE", the
    # NFKC forms…), or padding the name would buy a fresh set of attempts.
    canonical = unicodedata.normalize("NFKC", username.strip()).casefold()
    digest = hashlib.sha256(f"{canonical}|{address}".encode()).hexdigest()[:32]
    return f"login-failures:{digest}"


def _client_address(request) -> str:
    """The client's address. Behind a reverse proxy every request comes from the proxy, so
    failures would be counted for everyone together: ``CONCORD_CLIENT_IP_HEADER`` (e.g.
    ``HTTP_X_FORWARDED_FOR``, set only when the proxy overwrites that header) names where the
    proxy puts the real address; the right-most entry is the one the proxy added."""
    header = getattr(settings, "CONCORD_CLIENT_IP_HEADER", "")
    if header and request.META.get(header):
        return request.META[header].split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "")


def is_locked(username: str, address: str) -> bool:
    return cache.get(_key(username, address), 0) >= settings.LOGIN_RATE_LIMIT


def record_failure(username: str, address: str) -> None:
    key = _key(username, address)
    if cache.add(key, 1, timeout=settings.LOGIN_RATE_WINDOW_SECONDS):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.LOGIN_RATE_WINDOW_SECONDS)


def clear_failures(username: str, address: str) -> None:
    cache.delete(_key(username, address))


LOCKED_MESSAGE = "Too many failed attempts. Please wait a few minutes and try again."


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        if is_locked(username, _client_address(request)):
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, LOCKED_MESSAGE)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        record_failure(self.request.POST.get("username", ""), _client_address(self.request))
        return super().form_invalid(form)

    def form_valid(self, form):
        clear_failures(form.get_user().get_username(), _client_address(self.request))
        return super().form_valid(form)


class TokenView(ObtainAuthToken):
    """POST username and password for an API token; rate-limited like the login page."""

    def post(self, request, *args, **kwargs):
        username = str(request.data.get("username", ""))
        address = _client_address(request)
        if is_locked(username, address):
            return Response({"detail": LOCKED_MESSAGE}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            record_failure(username, address)
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        clear_failures(username, address)
        return super().post(request, *args, **kwargs)
