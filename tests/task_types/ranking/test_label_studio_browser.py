"""The project page's one-step Label Studio import in a real browser at 1280 and 390 px, by
keyboard: a wrong labeling config is refused beside its field with the source as typed and
nothing imported; the right one imports the items and the Ranker results. No horizontal
overflow, no serious axe-core violation on the form or its error. Screenshots:
bench/out/pages/label-studio-import-*.png."""

from __future__ import annotations

import pytest

from annotation.models import ExternalAnnotation, Item
from tests.e2e.pages import PHONE, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations, no_overflow
from tests.label_studio_examples import project_page, researchers_project
from tests.task_types.ranking.test_label_studio import HERE

DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def _choose(page, selector: str, path) -> None:
    """Pick ``path`` in the focused file input. (The OS file dialog that Space opens is the
    browser's own; opening it from a test was flaky under load, so the file is set directly on
    the input that the keyboard reached.)"""
    assert page.evaluate("'#' + document.activeElement.id") == selector
    page.set_input_files(selector, str(path))


def _fill_and_submit(page, config_path, source: str) -> None:
    page.locator("#example-files a").last.focus()  # the last link before the form
    page.keyboard.press("Tab")
    _choose(page, "#id_label_studio-file", HERE / "export.json")
    page.keyboard.press("Tab")
    _choose(page, "#id_label_studio-labeling_config", config_path)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "id_label_studio-source"
    page.keyboard.press("Control+A")
    page.keyboard.type(source)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Import Label Studio project"
    with page.expect_navigation():
        page.keyboard.press("Enter")


@pytest.mark.parametrize(("size", "context_args"), [("1280", DESKTOP), ("390", PHONE)])
def test_label_studio_import_in_one_step_by_keyboard(
    live_server, browser, size, context_args, tmp_path
):
    researcher, project = researchers_project("ranking")
    bad_config = tmp_path / "config.xml"
    bad_config.write_text("<View><Text name='t' value='$t'/></View>")
    context, page = project_page(browser, live_server, researcher, project, **context_args)
    try:
        heading = page.get_by_role("heading", name="Import a Label Studio project")
        heading.scroll_into_view_if_needed()
        no_overflow(page)
        assert axe_violations(page) == []
        _fill_and_submit(page, bad_config, "LS pilot")
        alert = page.locator("#label-studio-import-errors")
        alert.scroll_into_view_if_needed()
        assert "Labeling config (XML): Nothing imported." in alert.inner_text()
        assert "no <Ranker>" in alert.inner_text()
        assert page.input_value("#id_label_studio-source") == "LS pilot"
        no_overflow(page)
        assert axe_violations(page) == []
        screenshot(page, f"label-studio-import-error-{size}")
        assert not Item.objects.filter(project=project).exists()

        _fill_and_submit(page, HERE / "config.xml", "LS pilot")
        page.get_by_text("Imported 2 items, 2 rankings and 1 prediction").first.wait_for()
        screenshot(page, f"label-studio-import-{size}")
        assert Item.objects.filter(project=project).count() == 2
        assert ExternalAnnotation.objects.filter(item__project=project).count() == 3
    finally:
        context.close()
