"""Password reset and change with Django's own views (issue 15, onboarding): the reset mail, its
link, the new password working at the login page; crowd worker accounts never get a password."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.test import Client

from tests import factories

REPO = Path(__file__).resolve().parents[1]
NEW_PASSWORD = "an-entirely-new-passphrase"


@pytest.fixture
def expert(db):
    user = factories.UserFactory(username=factories.unique("expert"))
    user.email = "expert@example.org"
    user.save(update_fields=["email"])
    return user


def logs_in(username: str, password: str) -> bool:
    response = Client().post("/login/", {"username": username, "password": password})
    return response.status_code == 302


def test_password_reset_end_to_end(expert, settings):
    assert settings.EMAIL_BACKEND == "django.core.mail.backends.locmem.EmailBackend"
    client = Client()
    assert "Forgot your password?" in client.get("/login/").content.decode()
    assert client.get("/password/reset/").status_code == 200
    sent = client.post("/password/reset/", {"email": "Expert@Example.org"})
    assert sent.status_code == 302 and sent.url == "/password/reset/sent/"
    assert client.get(sent.url).status_code == 200
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["expert@example.org"] and "reset your password" in message.subject
    link = re.search(r"http://testserver(/password/reset/\S+/)", message.body).group(1)

    opened = client.get(link)  # Django moves the token into the session and redirects
    assert opened.status_code == 302
    form = client.get(opened.url)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    weak = client.post(opened.url, {"new_password1": "123", "new_password2": "123"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    done = client.post(opened.url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done.url == "/password/reset/done/"
    assert client.get(done.url).status_code == 200

    assert logs_in(expert.username, NEW_PASSWORD)
    assert not logs_in(expert.username, factories.PASSWORD)
    # The link worked once.
    used = Client().get(link, follow=True)
    assert "This link does not work" in used.content.decode()


def test_an_unknown_address_sends_nothing_and_says_the_same(db):
    response = Client().post("/password/reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302 and response.url == "/password/reset/sent/"
    assert mail.outbox == []


@pytest.mark.parametrize("usable", [False, True])
def test_crowd_worker_accounts_never_get_a_reset_mail(db, usable):
    worker = factories.UserFactory(username=f"prolific-{factories.unique('w')}.1.study")
    worker.email = "worker@example.org"
    if not usable:
        worker.set_unusable_password()  # as crowd entry makes them
    worker.save()
    response = Client().post("/password/reset/", {"email": "worker@example.org"})
    assert response.status_code == 302
    assert mail.outbox == []


def test_password_change(expert):
    client = Client()
    client.force_login(expert)
    assert client.get("/password/change/").status_code == 200
    wrong = client.post(
        "/password/change/",
        {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    changed = client.post(
        "/password/change/",
        {
            "old_password": factories.PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert changed.status_code == 302 and changed.url == "/password/change/done/"
    assert client.get("/").status_code == 200  # still logged in
    assert logs_in(expert.username, NEW_PASSWORD)
    assert Client().get("/password/change/").status_code == 302  # login required


def _settings_in_subprocess(extra_env: dict) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMAIL_")}
    env.pop("DEFAULT_FROM_EMAIL", None)
    env.update(extra_env, DJANGO_SETTINGS_MODULE="config.settings", PYTHONPATH=str(REPO))
    code = (
        "from django.conf import settings as s;"
        "print(s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_USER,"
        " s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS, s.DEFAULT_FROM_EMAIL, sep='|')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().split("|")


def test_mail_goes_to_the_console_by_default_and_to_smtp_from_the_environment():
    assert _settings_in_subprocess({})[0] == "django.core.mail.backends.console.EmailBackend"
    smtp = _settings_in_subprocess(
        {
            "EMAIL_HOST": "smtp.example.org",
            "EMAIL_PORT": "2525",
            "EMAIL_HOST_USER": "concord",
            "EMAIL_HOST_PASSWORD": "s3cret",
            "EMAIL_USE_TLS": "false",
            "DEFAULT_FROM_EMAIL": "Study team <team@example.org>",
        }
    )
    assert smtp == [
        "django.core.mail.backends.smtp.EmailBackend",
        "smtp.example.org",
        "2525",
        "concord",
        "s3cret",
        "False",
        "Study team <team@example.org>",
    ]


# --- API tokens end with the password (issue 24) ------------------------------------------------


def api_token(user) -> str:
    from rest_framework.test import APIClient

    response = APIClient().post(
        "/api/auth/token/", {"username": user.username, "password": factories.PASSWORD}
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def token_works(token: str) -> bool:
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/projects/").status_code == 200


def test_a_password_change_revokes_the_accounts_api_tokens(expert):
    tokens = [api_token(expert), api_token(expert)]
    other = factories.UserFactory()
    others = api_token(other)
    assert all(map(token_works, tokens))
    client = Client()
    client.force_login(expert)
    changed = client.post(
        "/password/change/",
        {
            "old_password": factories.PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert changed.status_code == 302
    assert not any(map(token_works, tokens))
    assert token_works(others)  # another account's token is left alone


def test_a_password_reset_revokes_the_accounts_api_tokens(expert):
    token = api_token(expert)
    client = Client()
    client.post("/password/reset/", {"email": "expert@example.org"})
    link = re.search(r"http://testserver(/password/reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link).url
    done = client.post(form, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302
    assert not token_works(token)


def test_a_password_set_by_staff_revokes_the_accounts_api_tokens(expert):
    """The admin's "change password" form and ``manage.py changepassword`` call set_password."""
    token = api_token(expert)
    expert.set_password(NEW_PASSWORD)
    expert.save()
    assert not token_works(token)
