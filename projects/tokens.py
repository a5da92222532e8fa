"""API token authentication (``Authorization: Token <key>``) against django-rest-knox's tokens:
only a hash of each key is stored, each expires (``REST_KNOX["TOKEN_TTL"]``), and a user revokes
theirs at ``/api/auth/logout/`` or ``/api/auth/logout-all/`` (projects/auth.py).

Kept apart from the views: DRF imports its authentication classes while ``rest_framework.views``
is still loading.
"""

from __future__ import annotations

from django.utils.translation import gettext
from knox import auth as knox_auth
from rest_framework import exceptions


class TokenAuthentication(knox_auth.TokenAuthentication):
    """Knox's token check; a key that is not even text (bytes outside UTF-8) is a 401 like any
    other wrong key, not a 500."""

    def authenticate_credentials(self, token: bytes):
        try:
            token.decode("utf-8")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        return super().authenticate_credentials(token)


class TokensEndWithThePassword:
    """Not a rule on passwords (it accepts every one): Django calls each password validator's
    ``password_changed`` whenever an account's password is set and saved — the change and reset
    pages, the admin, ``manage.py changepassword`` — and this one revokes the account's API
    tokens there, as Django logs out its other sessions. Its help text tells the user so."""

    def validate(self, password: str, user=None) -> None:
        return None

    def password_changed(self, password: str, user=None) -> None:
        from knox.models import AuthToken

        if user is not None and user.pk is not None:
            AuthToken.objects.filter(user=user).delete()

    def get_help_text(self) -> str:
        return gettext("Setting a new password signs out the API tokens of your account.")
