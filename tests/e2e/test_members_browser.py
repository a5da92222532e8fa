"""The members page in a real browser at 1280 and 390 px, used with the keyboard: a researcher adds
an account, removes a member and makes an invitation link, which a newcomer then opens and uses.
No horizontal overflow, no serious axe-core violation. Screenshots go to bench/out/pages/."""

from __future__ import annotations

import pytest

from projects.models import Invitation, Membership
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import MIN_TARGET, PHONE, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_members_page_by_keyboard(live_server, browser, size, context_args):
    project = factories.ProjectFactory(annotators_per_item=1)
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory(username=factories.unique("annotator"))
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    expert = factories.UserFactory(username=factories.unique("expert"))

    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/")
        page.get_by_role("link", name="Members and invitations").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/p/{project.slug}/members/")
        no_overflow(page)
        assert axe_violations(page) == []

        # Add an account: type the username, Tab past the role (annotator), Enter on the button.
        page.focus("input[name=username]")
        page.keyboard.type(expert.username)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.name") == "role"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Add member"
        page.keyboard.press("Enter")
        page.wait_for_selector(f".message.success:has-text('{expert.username} is now a member')")
        assert Membership.objects.get(project=project, user=expert).role == "annotator"

        # Remove the annotator with the keyboard (the confirmation is accepted).
        page.get_by_role("button", name=f"Remove {annotator.username}").focus()
        page.keyboard.press("Enter")
        page.wait_for_selector(".message.success:has-text('everything they did is kept')")
        assert Membership.objects.get(project=project, user=annotator).removed_at is not None

        # An invitation link.
        page.get_by_role("button", name="Create invitation link").focus()
        page.keyboard.press("Enter")
        link = page.locator("input.invitation-link").first
        link.wait_for()
        url = link.input_value()
        assert Invitation.objects.filter(project=project).count() == 1
        no_overflow(page)
        if size == "390":
            for button in page.locator("main button").all():
                box = button.bounding_box()
                assert box and box["height"] >= MIN_TARGET - 0.5, button.inner_text()
        assert axe_violations(page) == []
        screenshot(page, f"members-{size}")

        # The newcomer opens it, logged out, and fills the form with the keyboard alone.
        page.context.clear_cookies()
        page.goto(url)
        no_overflow(page)
        assert axe_violations(page) == []
        newcomer = factories.unique("newcomer")
        assert page.evaluate("document.activeElement.name") == "username"  # autofocus
        page.keyboard.type(newcomer)
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")  # e-mail left empty
        page.keyboard.type("a-long-and-uncommon-passphrase")
        page.keyboard.press("Tab")
        page.keyboard.type("a-long-and-uncommon-passphrase")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/")
        assert page.locator(".message.success").inner_text().startswith(f"Welcome, {newcomer}")
        assert Membership.objects.get(project=project, user__username=newcomer).role == "annotator"
        screenshot(page, f"invitation-accepted-{size}")
    finally:
        context.close()
