"""Invitation links (issue 15, onboarding): signed, single use, expiring; an expert opens one,
creates an account and becomes a member with the invitation's role."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import Client

from projects import members
from projects.models import Invitation, Membership
from tests import factories
from tests.conftest import client_for

PASSWORD = "a-long-and-uncommon-passphrase"


def sign(payload, *, key=None, salt=members.INVITATION_SALT) -> str:
    return signing.Signer(key=key, salt=salt).sign_object(payload)


def invite(project, researcher, role="annotator", **kwargs) -> tuple[Invitation, str]:
    invitation = members.invitation_create(
        project=project, role=role, created_by=researcher, **kwargs
    )
    return invitation, f"/invite/{members.invitation_token(invitation=invitation)}/"


def accept(client, url, username, password=PASSWORD, **extra):
    return client.post(
        url, {"username": username, "password1": password, "password2": password, **extra}
    )


def test_an_invitation_creates_an_account_and_a_membership_once(project, researcher):
    invitation, url = invite(project, researcher, role="reviewer")
    client = Client()
    page = client.get(url)
    assert page.status_code == 200 and project.name in page.content.decode()
    response = accept(client, url, "dr-expert", email="expert@example.org")
    assert response.status_code == 302 and response.url == "/"
    user = get_user_model().objects.get(username="dr-expert")
    assert user.check_password(PASSWORD) and user.email == "expert@example.org"
    assert Membership.objects.get(project=project, user=user).role == "reviewer"
    invitation.refresh_from_db()
    assert invitation.used_by == user and invitation.used_at is not None
    assert client.get("/").status_code == 200  # logged in as the new account
    assert client.get(f"/p/{project.slug}/review/").status_code == 200

    # Used: a clear page, and a second account cannot be made with it.
    for opener in (Client(), client):
        again = opener.get(url)
        assert again.status_code == 410 and "already been used" in again.content.decode()
    second = accept(Client(), url, "someone-else")
    assert second.status_code == 410
    assert not get_user_model().objects.filter(username="someone-else").exists()


def test_an_invitation_expires_after_the_configured_days(project, researcher, clock, settings):
    invitation, url = invite(project, researcher)
    assert invitation.expires_at == clock.now + timedelta(days=7)  # the default
    clock.advance(days=6, hours=23)
    assert Client().get(url).status_code == 200
    clock.advance(hours=1)
    expired = Client().get(url)
    assert expired.status_code == 410
    assert "This invitation has expired" in expired.content.decode()
    assert accept(Client(), url, "too-late").status_code == 410
    assert not get_user_model().objects.filter(username="too-late").exists()

    settings.CONCORD_INVITATION_DAYS = 2
    shorter, _ = invite(project, researcher)
    assert shorter.expires_at == clock.now + timedelta(days=2)
    chosen, _ = invite(project, researcher, expires_in_days=30)
    assert chosen.expires_at == clock.now + timedelta(days=30)


def test_a_tampered_or_forged_link_is_refused_with_403(project, researcher):
    invitation, url = invite(project, researcher, role="annotator")
    token = members.invitation_token(invitation=invitation)
    other, _ = invite(project, researcher, role="researcher")
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    forged = [
        flipped,  # signature changed
        token.split(":")[0] + "x:" + token.split(":", 1)[1],  # payload changed
        sign({"i": other.pk, "n": invitation.nonce}).rsplit(":", 1)[0]
        + ":"
        + token.rsplit(":", 1)[1],  # another invitation's id under this signature
        sign({"i": invitation.pk, "n": invitation.nonce}, salt="another-salt"),
        sign({"i": other.pk, "n": other.nonce}, key="not-the-secret"),
        "garbage",
    ]
    for bad in forged:
        for response in (
            Client().get(f"/invite/{bad}/"),
            accept(Client(), f"/invite/{bad}/", "forger"),
        ):
            assert response.status_code == 403, bad
            assert "not valid" in response.content.decode()
    assert not get_user_model().objects.filter(username="forger").exists()
    # A validly signed link whose nonce no longer matches (a reset database) opens nothing either.
    stale = sign({"i": invitation.pk, "n": "old"})
    assert Client().get(f"/invite/{stale}/").status_code == 410


def test_bad_account_details_are_refused_and_the_link_stays_usable(project, researcher, annotator):
    invitation, url = invite(project, researcher)
    client = Client()
    cases = [
        ({"username": "newcomer", "password1": "12345678", "password2": "12345678"}, "password"),
        ({"username": "newcomer", "password1": "password", "password2": "password"}, "common"),
        ({"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD + "x"}, "differ"),
        ({"username": annotator.username, "password1": PASSWORD, "password2": PASSWORD}, "taken"),
        ({"username": "mturk-worker", "password1": PASSWORD, "password2": PASSWORD}, "reserved"),
        ({"username": "bad name!", "password1": PASSWORD, "password2": PASSWORD}, "valid username"),
        (
            {"username": "newcomer", "email": "nope", "password1": PASSWORD, "password2": PASSWORD},
            "e-mail",
        ),
    ]
    for data, words in cases:
        response = client.post(url, data)
        assert response.status_code == 400, data
        assert words in response.content.decode(), (data, words)
    assert get_user_model().objects.filter(username="newcomer").count() == 0
    invitation.refresh_from_db()
    assert invitation.used_at is None
    assert accept(client, url, "newcomer").status_code == 302


def test_a_withdrawn_invitation_shows_a_clear_page(project, researcher):
    invitation, url = invite(project, researcher)
    page = Client()
    page.force_login(researcher)
    response = page.post(f"/p/{project.slug}/invitations/{invitation.pk}/revoke/")
    assert response.status_code == 302
    withdrawn = Client().get(url)
    assert withdrawn.status_code == 410 and "withdrawn" in withdrawn.content.decode()


def test_the_members_page_makes_and_lists_invitation_links(project, researcher):
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/invitations/",
        {"role": "reviewer", "expires_in_days": "3", "note": "Dr. Ada"},
    )
    assert response.status_code == 302
    invitation = Invitation.objects.get(project=project)
    assert (invitation.role, invitation.note) == ("reviewer", "Dr. Ada")
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert f"/invite/{members.invitation_token(invitation=invitation)}/" in page
    refused = client.post(
        f"/p/{project.slug}/invitations/", {"role": "reviewer", "expires_in_days": "many"}
    )
    assert refused.status_code == 400 and "expires after 1 to" in refused.content.decode()
    assert Invitation.objects.filter(project=project).count() == 1


def test_many_links_at_once_each_single_use_with_a_csv(project, researcher):
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/invitations/",
        {"role": "annotator", "expires_in_days": "5", "note": "pilot", "count": "25"},
    )
    assert response.status_code == 302
    links = list(Invitation.objects.filter(project=project).order_by("pk"))
    assert len(links) == 25 and len({i.nonce for i in links}) == 25
    assert [i.note for i in links[:3]] == ["pilot 1", "pilot 2", "pilot 3"]
    assert len({i.expires_at for i in links}) == 1
    sheet = client.get(f"/p/{project.slug}/invitations.csv")
    rows = sheet.content.decode().splitlines()
    assert rows[0] == "role,note,expires_at,link" and len(rows) == 26
    urls = [row.rsplit(",", 1)[1] for row in rows[1:]]
    assert len(set(urls)) == 25 and all("/invite/" in url for url in urls)
    # Two people with two links make two accounts; each link works once.
    first, second = (url.split("testserver", 1)[1] for url in urls[:2])
    assert accept(Client(), first, "worker-a").status_code == 302
    assert accept(Client(), second, "worker-b").status_code == 302
    assert accept(Client(), first, "worker-c").status_code == 410
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert page.count('class="button copy-link"') == 23
    for bad in ("0", "501", "many"):
        refused = client.post(
            f"/p/{project.slug}/invitations/", {"role": "annotator", "count": bad}
        )
        assert refused.status_code == 400 and "1 to 500" in refused.content.decode()
    assert Invitation.objects.filter(project=project).count() == 25
    stranger = Client()
    stranger.force_login(factories.UserFactory(username=factories.unique("s")))
    assert stranger.get(f"/p/{project.slug}/invitations.csv").status_code == 404


def test_invitations_through_the_api(project, researcher, annotator):
    api = client_for(researcher)
    url = f"/api/projects/{project.slug}/invitations/"
    created = api.post(url, {"role": "annotator", "expires_in_days": 2}, format="json")
    assert created.status_code == 201
    link = created.json()["url"]
    assert link.startswith("http://testserver/invite/")
    assert [i["url"] for i in api.get(url).json()] == [link]
    for body, field in (
        ({"role": "boss"}, "role"),
        ({"role": "annotator", "expires_in_days": 0}, "expires_in_days"),
        ({"role": "annotator", "expires_in_days": "soon"}, "expires_in_days"),
    ):
        bad = api.post(url, body, format="json")
        assert bad.status_code == 400 and bad.json()["field"] == field
    assert accept(Client(), link.removeprefix("http://testserver"), "via-api").status_code == 302
    assert api.get(url).json() == []  # used: no longer open
    assert client_for(annotator).post(url, {"role": "researcher"}).status_code == 404
    assert client_for(annotator).get(url).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_people_racing_for_one_link_make_one_account(postgres):
    """Single use holds under concurrency: the invitation row is locked while it is used."""
    import threading

    from django.db import connection

    researcher = factories.UserFactory(username=factories.unique("researcher"))
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    invitation, url = invite(project, researcher)
    token = members.invitation_token(invitation=invitation)
    results: list = []
    barrier = threading.Barrier(2)

    def use(name: str) -> None:
        try:
            barrier.wait()
            members.invitation_accept(token=token, username=name, password=PASSWORD)
            results.append("ok")
        except members.InvitationUnusable:
            results.append("used")
        finally:
            connection.close()

    threads = [threading.Thread(target=use, args=(f"racer-{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["ok", "used"]
    assert get_user_model().objects.filter(username__startswith="racer-").count() == 1


def test_links_are_e_mailed_one_per_address_where_a_mail_server_is_set(
    project, researcher, mailoutbox, settings
):
    """Onboarding at scale (issue 26): each address gets its own single-use link, noted with the
    address; a bad address refuses the whole form; without a mail server the form says so."""
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert 'name="emails"' in page  # pytest-django's outbox counts as a mail server
    response = client.post(
        f"/p/{project.slug}/invitations/",
        {"role": "annotator", "emails": "ann@example.org\nbob@example.org, ann@example.org"},
        follow=True,
    )
    assert "2 invitations e-mailed." in response.content.decode()
    sent = {message.to[0]: message for message in mailoutbox}
    assert set(sent) == {"ann@example.org", "bob@example.org"}
    notes = dict(Invitation.objects.filter(project=project).values_list("note", "nonce"))
    assert set(notes) == {"ann@example.org", "bob@example.org"}
    link = next(line for line in sent["bob@example.org"].body.splitlines() if "/invite/" in line)
    assert accept(Client(), link.split("testserver", 1)[1], "bob").status_code == 302
    assert Membership.objects.get(project=project, user__username="bob").role == "annotator"
    refused = client.post(
        f"/p/{project.slug}/invitations/", {"role": "annotator", "emails": "x@y.org not-an-address"}
    )
    assert refused.status_code == 400 and "is not an e-mail address" in refused.content.decode()
    assert Invitation.objects.filter(project=project).count() == 2 and len(mailoutbox) == 2
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    assert 'name="emails"' not in client.get(f"/p/{project.slug}/members/").content.decode()
    refused = client.post(
        f"/p/{project.slug}/invitations/", {"role": "annotator", "emails": "c@example.org"}
    )
    assert refused.status_code == 400 and "No mail server is configured" in refused.content.decode()
    assert Invitation.objects.filter(project=project).count() == 2


def test_an_address_the_mail_server_refuses_keeps_its_open_link(project, researcher, monkeypatch):
    import smtplib

    from django.core.mail import EmailMessage

    real_send = EmailMessage.send

    def send(message, *args, **kwargs):
        if message.to == ["bad@example.org"]:
            raise smtplib.SMTPRecipientsRefused({"bad@example.org": (550, b"no such user")})
        return real_send(message, *args, **kwargs)

    monkeypatch.setattr(EmailMessage, "send", send)
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/invitations/",
        {"role": "annotator", "emails": "good@example.org bad@example.org"},
        follow=True,
    )
    text = response.content.decode()
    assert "1 invitation e-mailed." in text and "The mail server refused bad@example.org" in text
    assert Invitation.objects.filter(project=project, note="bad@example.org").exists()
