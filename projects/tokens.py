"""API token authentication (``Authorization: Token <key>``) against django-rest-knox's tokens:
only a hash of each key is stored, each expires (``REST_KNOX["TOKEN_TTL"]``), and a user revokes
theirs at ``/api/auth/logout/`` or ``/api/auth/logout-all/`` (projects/auth.py).

Kept apart from the views: DRF imports its authentication classes while ``rest_framework.views``
is still loading.
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext
from knox import auth as knox_auth
from knox.signals import token_expired
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

    def _cleanup_token(self, auth_token) -> bool:
        """Whether the presented token has expired (it is then deleted and refused), as knox
        checks it, but without knox's sweep of the account's other tokens on every request: that
        read every token the account holds (one more query, its rows growing with the tokens a
        script's logins leave) on each API call, the annotator's next and submit included.
        Expired tokens are swept when the account gets a new one (:func:`expired_tokens_delete`)."""
        if auth_token.expiry is None or auth_token.expiry >= timezone.now():
            return False
        username = auth_token.user.get_username()
        auth_token.delete()
        token_expired.send(sender=self.__class__, username=username, source="auth_token")
        return True


def expired_tokens_delete(*, user) -> int:
    """Delete ``user``'s expired API tokens (they are refused anyway); how many went."""
    from knox.models import AuthToken

    deleted, _ = AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()
    return deleted


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
