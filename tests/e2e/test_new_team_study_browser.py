"""A new team's study of every task type, through the pages alone (issue 26, "Must hold"): on a
blank instance a researcher allowed to create studies opens "New study", chooses the task type,
creates the study with the form as shown, downloads the task type's example file next to the
import form and imports it, makes three invitation links; three newcomers open them, sign up and
each answer an item (the task type's own routine, tests/task_types/<slug>/phone.py); the
researcher downloads the export, which holds their three answers. At 1280 and 390 px; every
page is checked for horizontal overflow and by axe-core, and a screenshot of each is written to
bench/out/pages/ (looked at before the issue is resolved)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from annotation import task_types
from annotation.models import Annotation, Item
from projects.models import Project
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import SLUGS, axe_violations, phone_routine

# The phone routines tap (touch events): the desktop context has touch too.
DESKTOP = {"viewport": {"width": 1280, "height": 900}, "has_touch": True}
ANNOTATORS = 3


def checked(page, name: str) -> None:
    no_overflow(page)
    assert axe_violations(page) == [], name
    screenshot(page, name)


def create_the_study(page, live_server, slug: str, size: str) -> str:
    """Home → New study → the task type → the form as shown, saved; the new study's slug."""
    kind = task_types.get(slug)
    page.goto(f"{live_server.url}/")
    page.locator("#new-study").click()
    page.wait_for_url(f"{live_server.url}/p/new/")
    checked(page, f"new-study-{size}")
    page.locator(f"a.task-type-link[href='/p/new/{slug}/']").click()
    page.wait_for_url(f"{live_server.url}/p/new/{slug}/")
    checked(page, f"new-study-{slug}-{size}")
    study = f"team-{slug}".replace("_", "-")
    page.fill("input[name=name]", f"Our {kind.name} study")
    page.fill("input[name=slug]", study)
    page.fill("input[name=annotators_per_item]", str(ANNOTATORS))
    page.fill("textarea[name=guidelines]", "# How to answer\n\nRead the whole item first.\n")
    page.locator(".form-actions button[value=save]").click()
    page.wait_for_url(f"{live_server.url}/p/{study}/")
    return study


def import_the_example(page, live_server, study: str, slug: str, size: str, tmp_path) -> int:
    """The JSON Lines example file next to the import form, downloaded and imported."""
    with page.expect_download() as download_info:
        page.locator("#example-files a", has_text="jsonl").click()
    example = tmp_path / f"{slug}-example.jsonl"
    download_info.value.save_as(example)
    records = [json.loads(line) for line in example.read_text().splitlines() if line.strip()]
    assert records, "the example file holds records"
    page.set_input_files("#import-form input[name=file]", str(example))
    with page.expect_navigation():
        page.click("#import-form button[type=submit]")
    page.wait_for_load_state()
    project = Project.objects.get(slug=study)
    count = Item.objects.filter(project=project).count()
    assert count >= 1, f"{slug}: the example imported no item"
    checked(page, f"team-{slug}-imported-{size}")
    return count


def invitation_links(page, live_server, study: str, size: str) -> list[str]:
    page.goto(f"{live_server.url}/p/{study}/members/")
    page.fill("#invitations input[name=count]", str(ANNOTATORS))
    page.fill("#invitations input[name=note]", "pilot annotator")
    page.get_by_role("button", name="Create invitation links").click()
    links = page.locator("input.invitation-link")
    expect(links).to_have_count(ANNOTATORS)
    checked(page, f"team-invitations-{size}")
    return [link.input_value() for link in links.all()]


def newcomer_answers(browser, context_args, live_server, url: str, study: str, slug: str) -> None:
    """A newcomer opens the link, signs up, and answers their first item."""
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(url)
        name = factories.unique("newcomer")
        page.fill("input[name=username]", name)
        page.fill("input[name=password1]", "a-long-and-uncommon-passphrase")
        page.fill("input[name=password2]", "a-long-and-uncommon-passphrase")
        page.locator("main button[type=submit]").click()
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/p/{study}/annotate/")
        page.wait_for_function(
            "document.querySelector('#position').textContent.startsWith('Item 1')"
        )
        phone_routine(slug)(page)
        expect(page.locator("#submit")).to_be_enabled()
        with page.expect_response(
            lambda r: r.url.endswith("/submit/") and r.request.method == "POST"
        ) as submitted:
            page.locator("#submit").click()
        assert submitted.value.ok, submitted.value.text()
        page.wait_for_load_state("networkidle")
    finally:
        context.close()


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_a_new_team_runs_a_study_through_the_pages(
    live_server, browser, celery_eager, tmp_path, slug, size, context_args
):
    creator = factories.UserFactory(username=factories.unique("team-lead"))
    creator.user_permissions.add(Permission.objects.get(codename="add_project"))
    context = browser.new_context(**context_args)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        login(page, live_server, creator.username, factories.PASSWORD)
        study = create_the_study(page, live_server, slug, size)
        checked(page, f"team-{slug}-created-{size}")
        import_the_example(page, live_server, study, slug, size, tmp_path)
        links = invitation_links(page, live_server, study, size)
        for url in links:
            newcomer_answers(browser, context_args, live_server, url, study, slug)
        project = Project.objects.get(slug=study)
        assert Annotation.objects.filter(item__project=project, is_current=True).count() == 3

        page.goto(f"{live_server.url}/p/{study}/")
        with page.expect_download() as download_info:
            page.locator(".export-form button", has_text="Download JSONL").click()
        exported = tmp_path / "export.jsonl"
        download_info.value.save_as(exported)
        lines = exported.read_text().splitlines()
        rows = [json.loads(line) for line in lines[:-1]]  # the last line: count and sha256
        assert len({row["annotator"] for row in rows}) == ANNOTATORS
        assert all(row["project"] == study for row in rows)
        checked(page, f"team-{slug}-answered-{size}")
    finally:
        context.close()
