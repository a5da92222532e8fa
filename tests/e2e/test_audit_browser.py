"""The audit log page in a real browser at 1280 and 390 px, used with the keyboard: a researcher
opens it from the project page, filters it by kind and pages to older entries. No horizontal
overflow, no serious axe-core violation. Screenshots go to bench/out/pages/."""

from __future__ import annotations

import pytest

from projects import members
from projects.audit import AuditKind, audit_record
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import MIN_TARGET, PHONE, SCREENSHOTS, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def a_logged_project():
    project = factories.ProjectFactory(annotators_per_item=1)
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    expert = factories.UserFactory(username=factories.unique("expert"))
    members.member_add(project=project, username=expert.username, role="reviewer", by=researcher)
    members.invitations_create(
        project=project, role="annotator", created_by=researcher, count=12, note="pilot"
    )
    for n in range(55):  # more than a page
        audit_record(
            project=project,
            actor=None if n % 5 else researcher,
            kind=AuditKind.EXPORTED,
            summary=f"Exported the humans' annotations as csv (API), number {n}.",
            changes={"format": "csv"},
        )
    guidelines = "## Your task\nRead the claim, then pick every sentence that cites it. " * 8
    audit_record(
        project=project,
        actor=researcher,
        kind=AuditKind.SETTINGS_CHANGED,
        summary="Changed guidelines, annotators_per_item via settings page.",
        changes={
            "guidelines": {"before": "Read the claim.", "after": guidelines},
            "annotators_per_item": {"before": 1, "after": 3},
        },
    )
    return project, researcher


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_audit_page_by_keyboard(live_server, browser, size, context_args):
    project, researcher = a_logged_project()
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/")
        page.get_by_role("link", name="Audit log").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/p/{project.slug}/audit/")
        rows = page.locator("#audit-entries tbody tr")
        assert rows.count() == 50
        assert "Settings or guidelines changed" in rows.first.inner_text()
        assert "number 54" in rows.nth(1).inner_text()
        # What changed, before and after, opened by the keyboard.
        page.locator("details.audit-changes summary").first.focus()
        page.keyboard.press("Enter")
        changes = page.locator("details.audit-changes pre").first
        assert changes.is_visible() and '"after": 3' in changes.inner_text()
        no_overflow(page)
        page.screenshot(path=str(SCREENSHOTS / f"audit-changes-{size}.png"))  # the first screen
        assert axe_violations(page) == []
        screenshot(page, f"audit-{size}")

        # Filter by kind with the keyboard: choose "Member added", Tab to Apply (through the
        # person and the two days: a date field takes a Tab per part), Enter.
        page.focus("select[name=kind]")
        page.select_option("select[name=kind]", "member_added")
        visited = []
        for _ in range(12):
            page.keyboard.press("Tab")
            name = page.evaluate(
                "document.activeElement.name || document.activeElement.textContent.trim()"
            )
            if not visited or visited[-1] != name:
                visited.append(name)
            if name == "Apply":
                break
        assert visited == ["actor", "since", "until", "Apply"]
        page.keyboard.press("Enter")
        page.wait_for_url("**/audit/?kind=member_added*")
        assert rows.count() == 1 and "reviewer" in rows.first.inner_text()
        no_overflow(page)

        # Every entry again, then the older page through its link.
        page.goto(f"{live_server.url}/p/{project.slug}/audit/")
        page.get_by_role("link", name="Older entries").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/audit/?before=*")
        assert rows.count() == 8  # 55 exports, a member, invitations, settings: 58 in all
        assert "Member added" in rows.last.inner_text()  # the oldest entry
        no_overflow(page)
        if size == "390":
            for control in page.locator("main button, main select, main a.button").all():
                box = control.bounding_box()
                assert box and box["height"] >= MIN_TARGET - 0.5, control.inner_text()
        assert axe_violations(page) == []
        screenshot(page, f"audit-older-{size}")
    finally:
        context.close()
