"""One login lock for every login path: the login page, the admin login and the API token endpoint.

Counting is django-axes': its authentication backend (first in ``AUTHENTICATION_BACKENDS``) refuses
every ``authenticate()`` call while the client is locked, whichever view made it, and its database
handler keeps the failures in PostgreSQL, so logins neither need Redis nor fail when it is down.
This module configures it (``AXES_*`` in config/settings.py point here):

- failures are counted per (canonical username, client address) — ``LOGIN_RATE_LIMIT`` of them
  within ``LOGIN_RATE_WINDOW_SECONDS``, after which further attempts for that account from that
  address are refused with 429, even with the right password;
- and per client address over all usernames — ``LOGIN_ADDRESS_LIMIT`` of them lock the address
  (password spraying: one guess for each of many accounts);
- a successful login clears that account's failures from that address, not the address count;
- the username is canonicalised (padding, case, NFKC forms count together) and the client address
  may come from a trusted proxy header (``CONCORD_CLIENT_IP_HEADER``).
"""

from __future__ import annotations

import ipaddress
import unicodedata
from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in
from django.db.models import Sum
from django.http import HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from drf_spectacular.utils import extend_schema
from knox import views as knox_views
from knox.models import AuthToken
from knox.settings import knox_settings
from rest_framework import exceptions, serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import Refusal
from projects.members import account_username, is_crowd_username
from projects.tokens import TokenAuthentication, expired_tokens_delete

LOCKED_MESSAGE = "Too many failed attempts. Please wait a few minutes and try again."
LOCKED_CODE = "too_many_requests"
# The order matters to LoginAttempts.get_failures: the account first, then the address.
LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
USERNAME_MAX = 255  # axes' AccessAttempt.username


def canonical_username(request, credentials: dict | None = None) -> str | None:
    """Every spelling Django accepts for one account counts together (" alice", "ALICE", NFKC
    forms), or padding the name would buy a fresh set of attempts (``AXES_USERNAME_CALLABLE``)."""
    if credentials:
        raw = credentials.get("username")
    else:
        data = getattr(request, "data", None) or getattr(request, "POST", {})
        raw = data.get("username") if hasattr(data, "get") else None
    if raw is None:
        return None
    canonical = unicodedata.normalize("NFKC", str(raw).strip()).casefold()
    return canonical.replace("\x00", "")[:USERNAME_MAX]


def _valid_address(value: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((value or "").strip()))
    except ValueError:
        return None


def client_address(request) -> str | None:
    """The client's address (``AXES_CLIENT_IP_CALLABLE``). Behind a reverse proxy every request
    comes from the proxy, so failures would be counted for everyone together:
    ``CONCORD_CLIENT_IP_HEADER`` (e.g. ``HTTP_X_FORWARDED_FOR``, set only when the proxy
    overwrites that header) names where the proxy puts the real address; the right-most entry is
    the one the proxy added. A value that is not an address falls back to the connection's."""
    header = getattr(settings, "CONCORD_CLIENT_IP_HEADER", "")
    if header and request.META.get(header):
        forwarded = _valid_address(request.META[header].split(",")[-1])
        if forwarded:
            return forwarded
    return _valid_address(request.META.get("REMOTE_ADDR"))


def lockout_parameters(request, credentials: dict | None = None) -> list:
    return LOCKOUT_PARAMETERS


def failure_limit(request, credentials: dict | None = None) -> int:
    return settings.LOGIN_RATE_LIMIT


def cool_off(request=None) -> timedelta:
    return timedelta(seconds=settings.LOGIN_RATE_WINDOW_SECONDS)


def _total(attempts) -> int:
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class LoginAttempts(AxesDatabaseHandler):
    """Axes' database handler with a second, larger limit for the address alone, and with the
    ``LOGIN_RATE_LIMIT``-th failure answered normally (the attempts after it are refused)."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        account, address = (_total(qs) for qs in self.get_user_attempts(request, credentials))
        if address >= settings.LOGIN_ADDRESS_LIMIT:
            return max(account, settings.LOGIN_RATE_LIMIT)
        return account

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        locked_before = request is not None and self.is_locked(request, credentials)
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is not None:
            request.axes_locked_out = locked_before

    def reset_user_attempts(self, request, credentials: dict | None = None) -> int:
        account = self.filter_user_attempts(request, credentials)[0]
        count, _ = account.delete()
        return count


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """429 for a locked client (``AXES_LOCKOUT_CALLABLE``): JSON under /api/, else the login form
    it posted to with the reason."""
    # axes wants a response, not an exception: the refusal is rendered here as the one handler
    # (core.errors) and core.middleware.RefusalMiddleware would render it.
    refusal = Refusal(LOCKED_MESSAGE, code=LOCKED_CODE)
    if request.path.startswith("/api/"):
        response = JsonResponse(refusal.as_json(), status=refusal.status)
    else:
        context = getattr(original_response, "context_data", None) or {}
        form = context.get("form")
        if form is not None and getattr(original_response, "template_name", None):
            form.errors.clear()
            form.add_error(None, LOCKED_MESSAGE)
            response = TemplateResponse(
                request, original_response.template_name, context, status=refusal.status
            ).render()
        else:
            response = HttpResponse(
                refusal.message, status=refusal.status, content_type="text/plain"
            )
    response["Retry-After"] = str(settings.LOGIN_RATE_WINDOW_SECONDS)
    return response


class LoginView(auth_views.LoginView):
    """The login page; the lock is axes' (the backend refuses, the middleware answers 429)."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True


def token_login_succeeded(request, user) -> None:
    """What a login does for the token endpoint, which opens no session: ``last_login`` and
    clearing the account's failures (both are ``user_logged_in`` receivers)."""
    user_logged_in.send(sender=user.__class__, request=request, user=user)


def is_locked_out(request) -> bool:
    """Whether the last ``authenticate()`` on this request was refused by the lock."""
    return bool(getattr(request, "axes_locked_out", False))


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send as `Authorization: Token <token>`.")
    expiry = serializers.DateTimeField(allow_null=True)


@extend_schema(request=AuthTokenSerializer, responses={200: TokenSerializer})
class TokenView(APIView):
    """POST username and password for a new API token (stored hashed, expiring after
    ``CONCORD_API_TOKEN_TTL_HOURS``); locked like the login page (429)."""

    authentication_classes = ()
    permission_classes = ()
    throttle_classes = ()

    def post(self, request, *args, **kwargs):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            if is_locked_out(request):
                return lockout_response(request)
            raise exceptions.ValidationError(serializer.errors)  # 400 {detail, code, fields}
        user = serializer.validated_data["user"]
        token_login_succeeded(request, user)
        expired_tokens_delete(user=user)  # not on every request (projects.tokens)
        instance, token = AuthToken.objects.create(user=user, expiry=knox_settings.TOKEN_TTL)
        return Response(TokenSerializer({"token": token, "expiry": instance.expiry}).data)


@extend_schema(request=None, responses={204: None})
class LogoutView(knox_views.LogoutView):
    """Revoke the token this request is authenticated with."""

    authentication_classes = (TokenAuthentication,)

    def post(self, request, format=None):
        # Authenticated without a token (knox would fail on the missing token with a 500):
        # there is nothing to revoke.
        if request.auth is None:
            raise exceptions.NotAuthenticated(
                "Send the token to revoke in the header Authorization: Token <key>."
            )
        return super().post(request, format)


@extend_schema(request=None, responses={204: None})
class LogoutAllView(knox_views.LogoutAllView):
    """Revoke every API token of the requesting user."""

    authentication_classes = (TokenAuthentication,)


class PasswordResetForm(auth_forms.PasswordResetForm):
    """Django's reset form, which already mails only active accounts with a usable password;
    crowd workers' accounts (``prolific-…``/``mturk-…``, made by crowd entry) are left out by
    name too, so no reset ever gives one a password."""

    def get_users(self, email):
        return (user for user in super().get_users(email) if not is_crowd_username(user.username))


class PasswordResetView(auth_views.PasswordResetView):
    form_class = PasswordResetForm
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"


class AnyCaseModelBackend(ModelBackend):
    """Django's ``ModelBackend``, with the username read ignoring case (``projects.members.account_username``):
    "Alice" logs in as alice, as sign-up already treats them as one name."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if isinstance(username, str) and username:
            username = account_username(username)
        return super().authenticate(request, username=username, password=password, **kwargs)
