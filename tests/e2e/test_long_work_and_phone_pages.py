"""Issue 26's page points in a real browser: the import form's busy state while it uploads, and
the pages seen at 390 px (each test failed before its fix). Screenshots go to bench/out/pages/."""

from __future__ import annotations

import json

from annotation.models import Item
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import demo_project, screenshot


def test_the_import_form_says_it_is_uploading_and_cannot_be_sent_twice(live_server, page, tmp_path):
    project, researcher, _ = demo_project("citation_recovery", items=0)
    upload = tmp_path / "items.jsonl"
    upload.write_text('{"id": "x"}\n' * 2000)
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    # The page's own submission is kept from leaving the page (a test-only listener, after the
    # page's), so that the state it shows while uploading can be read.
    page.evaluate(
        "document.querySelector('#import-form').addEventListener('submit', (e) => e.preventDefault())"
    )
    page.set_input_files("#import-form input[name=file]", str(upload))
    page.click("#import-form button[type=submit]")
    page.wait_for_function("document.querySelector('#import-form button[type=submit]').disabled")
    assert page.locator("#import-form").get_attribute("aria-busy") == "true"
    status = page.locator("#import-form .busy-status")
    assert status.is_visible() and status.inner_text().startswith("Uploading… 23 KB")
    screenshot(page, "import-uploading-1280")


def test_the_import_form_still_sends_the_file_with_its_busy_state(live_server, page, tmp_path):
    project, researcher, _ = demo_project("citation_recovery", items=0)
    upload = tmp_path / "items.jsonl"
    payload = factories.citation_payload(1)
    upload.write_text(json.dumps(payload) + "\n")
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.set_input_files("#import-form input[name=file]", str(upload))
    page.click("#import-form button[type=submit]")
    page.wait_for_load_state()
    assert Item.objects.filter(project=project).count() == 1
    assert not page.locator("#import-form button[type=submit]").is_disabled()
