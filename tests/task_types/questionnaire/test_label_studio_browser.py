"""The project page's Label Studio downloads in a real browser at 1280 and 390 px: reached and
used by keyboard, no horizontal overflow, no serious axe-core violation; the downloaded export
reads back. Screenshots: bench/out/pages/label-studio-*.png."""

from __future__ import annotations

import json

import pytest

from task_types.questionnaire.label_studio_io import import_label_studio
from tests.e2e.pages import PHONE, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations, no_overflow
from tests.label_studio_examples import project_page, researchers_project
from tests.task_types.questionnaire.test_label_studio import CONFIG, EXPORT

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_label_studio_downloads_by_keyboard(live_server, browser, size, context_args):
    researcher, project = researchers_project("questionnaire")
    import_label_studio(project=project, export=EXPORT, labeling_config=CONFIG)
    context, page = project_page(
        browser, live_server, researcher, project, accept_downloads=True, **context_args
    )
    try:
        link = page.get_by_role("link", name="Download Label Studio JSON")
        link.scroll_into_view_if_needed()
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"label-studio-{size}")
        link.focus()
        with page.expect_download() as download:
            page.keyboard.press("Enter")
        tasks = json.loads(open(download.value.path(), encoding="utf-8").read())  # noqa: SIM115
        assert download.value.suggested_filename == f"{project.slug}-label-studio.json"
        assert [t["id"] for t in tasks] == ["1", "2", "3", "4"]
    finally:
        context.close()
