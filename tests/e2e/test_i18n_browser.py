"""Annotation pages in a pseudo-locale, in Chromium (issue 29, item 5).

- Left to right (``en-xa``, 1280 px), every task type: the page after its task module has
  rendered the demo item, with the flag form open, after one submit and with the list of
  previous items open, shows no English word outside the translated strings — the task modules'
  strings come from Django's JavaScript catalogue (/jsi18n/), served by Concord. Words the
  researchers or the data wrote (item, config, guidelines, project name) are set aside.
- Right to left (``ar-xb``: ``<html dir="rtl">``), every task type on a 390 x 844 touch screen:
  nothing is wider than the screen, every control is on it (none pushed off either side), axe
  finds no serious or critical violation, and the item is answered and submitted by taps with
  the task type's phone routine (tests/task_types/<slug>/phone.py). Every element showing item
  text, and every text box, takes its own direction (``dir="auto"``), not the page's, before
  and after the routine.
"""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.utils import translation

from annotation import services, task_types
from annotation.models import Annotation, Item
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import PHONE, demo_project, no_overflow, screenshot
from tests.e2e.test_phone_and_accessibility import axe_violations, phone_routine
from tests.pseudo_locale import (
    PSEUDO_LANGUAGES,
    PSEUDO_LTR,
    PSEUDO_RTL,
    researcher_words,
    unmarked_english,
    write_pseudo_catalogues,
)

SLUGS = sorted(task_types.task_type_registry.keys())

# Every text node (hidden ones too: panels the page opens later) and the attributes people read.
TEXTS = """() => {
  const out = [["<title>", document.title]];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!node.data.trim() || parent.closest("script, style")) continue;
    out.push([parent.tagName.toLowerCase() + (parent.id ? "#" + parent.id : ""), node.data]);
  }
  for (const el of document.body.querySelectorAll("[aria-label], [placeholder], [title], [alt]")) {
    for (const name of ["aria-label", "placeholder", "title", "alt"]) {
      const value = el.getAttribute(name);
      if (value) out.push([el.tagName.toLowerCase() + "[" + name + "]", value]);
    }
  }
  return out;
}"""

# Controls a finger needs, visible, pushed off the screen's left or right edge.
OFF_SCREEN = """(width) => [...document.querySelectorAll(
    'button, input, select, textarea, a[href], [role=radio], [role=checkbox], [role=button]')]
  .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden'
      && !e.closest('.table, .table-wrap, pre, [hidden]'))
  .filter((e) => { const r = e.getBoundingClientRect();
      return r.width > 0 && (r.left < -0.5 || r.right > width + 0.5); })
  .slice(0, 5).map((e) => e.tagName + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.'))"""


# Item text and typed text must carry its own direction (dir="auto" on the element or the nearest
# ancestor with a dir), not the page's: the element of every text node that shows (part of) an
# item text, and every text box. Returns what lacks it.
NOT_AUTO = """(texts) => {
  const wrong = [];
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
      (e.className && typeof e.className === "string" ? "." + e.className.split(" ")[0] : "");
  const auto = (e) => { const d = e.closest("[dir]"); return d && d.getAttribute("dir") === "auto"; };
  const task = document.querySelector("main") || document.body;
  const walker = document.createTreeWalker(task, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.data.trim();
    if (text.length < 12 || !texts.some((t) => t.includes(text) || text.includes(t))) continue;
    if (!auto(node.parentElement)) wrong.push(name(node.parentElement) + ": " + text.slice(0, 40));
  }
  for (const box of task.querySelectorAll("textarea, input[type=text], input:not([type])")) {
    if (!auto(box)) wrong.push(name(box));
  }
  return wrong;
}"""


def _item_texts(project) -> list[str]:
    """Every sentence-like text of the project's items as the page gets them."""
    task_type = task_types.get(project.task_type)
    found: list[str] = []

    def walk(value):
        if isinstance(value, str) and len(value) >= 12 and " " in value:
            found.append(" ".join(value.split()))
        elif isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for item in Item.objects.filter(project=project):
        walk(task_type.display(item))
    return found


@pytest.fixture
def pseudo_locales(settings, tmp_path):
    settings.LOCALE_PATHS = [write_pseudo_catalogues(tmp_path), *django_settings.LOCALE_PATHS]
    settings.LANGUAGES = [*settings.LANGUAGES, *PSEUDO_LANGUAGES]
    yield
    translation.trans_real._translations = {}


def _allowed(project, annotator) -> set[str]:
    task_type = task_types.get(project.task_type)
    items = [(i.payload, task_type.display(i)) for i in Item.objects.filter(project=project)]
    languages = [name for _, name in django_settings.LANGUAGES]
    # The config as annotators get it: its questions (defaults included) are the researchers'.
    config = task_type.annotator_config(task_type.validate_config(project.config))
    return researcher_words(
        project.name, project.guidelines, config, items, annotator.username, languages
    )


def _open(page, live_server, project, annotator, language: str) -> None:
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/?lang={language}")
    page.wait_for_function("!document.querySelector('#task').hidden")


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    page.goto("about:blank")  # its unload handlers may still send an autosave
    context.close()


@pytest.mark.parametrize("slug", SLUGS)
def test_the_annotation_page_shows_no_unmarked_english_in_a_pseudo_locale(
    live_server, phone, pseudo_locales, slug
):
    page = phone
    project, _, annotator = demo_project(slug, items=2)
    project.crowd = {"allow_skip": True}
    project.save(update_fields=["crowd"])
    _open(page, live_server, project, annotator, PSEUDO_LTR)
    assert page.get_attribute("html", "lang") == PSEUDO_LTR
    allowed = _allowed(project, annotator)
    found = unmarked_english(page.evaluate(TEXTS), allowed=allowed)
    page.locator("#flag-toggle").tap()  # the flag form's words are set by annotate.js
    found += unmarked_english(page.evaluate(TEXTS), allowed=allowed)
    page.locator("#flag-cancel").tap()
    phone_routine(slug)(page)
    page.locator("#submit").tap()
    page.wait_for_function(
        "(n) => document.querySelector('#position').textContent.includes(n)", arg=" 2 "
    )
    page.locator("#history-toggle").tap()
    page.wait_for_selector("#history-list li")
    found += unmarked_english(page.evaluate(TEXTS), allowed=allowed)
    screenshot(page, f"{slug}-pseudo-390")
    assert sorted(set(found)) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_the_annotation_page_works_right_to_left_on_a_phone(
    live_server, phone, pseudo_locales, slug
):
    page = phone
    project, _, annotator = demo_project(slug, items=2)
    _open(page, live_server, project, annotator, PSEUDO_RTL)
    assert page.get_attribute("html", "dir") == "rtl"
    no_overflow(page)
    assert page.evaluate(OFF_SCREEN, PHONE["viewport"]["width"]) == []
    assert axe_violations(page) == []
    texts = _item_texts(project)
    assert texts, "the demo item has text to check"
    assert page.evaluate(NOT_AUTO, texts) == []
    screenshot(page, f"{slug}-rtl-390")
    phone_routine(slug)(page)
    no_overflow(page)
    assert page.evaluate(NOT_AUTO, texts) == []  # the boxes the routine opened too
    assert page.evaluate(OFF_SCREEN, PHONE["viewport"]["width"]) == []
    page.locator("#submit").tap()
    page.wait_for_function(
        "(n) => document.querySelector('#position').textContent.includes(n)", arg=" 2 "
    )
    assert Annotation.objects.filter(annotator=annotator).count() == 1
    # The same page on a wide screen, right to left.
    page.set_viewport_size({"width": 1280, "height": 900})
    no_overflow(page)
    assert axe_violations(page) == []
    screenshot(page, f"{slug}-rtl-1280")


def test_the_reviewer_page_in_german_fits_a_phone_and_a_wide_screen(live_server, phone):
    """The reviewer's list and item page in German (longer words than English): nothing overflows
    at 390 or 1280 px, every control is on the screen, axe finds no serious violation, and an
    annotator's answer is taken over by keyboard, with the state said in German."""
    page = phone
    project, _, annotator = demo_project("stance", per_item=2)
    second = factories.UserFactory()
    factories.MembershipFactory(project=project, user=second, role="annotator")
    item = Item.objects.get(project=project)
    targets = task_types.get("stance").display(item)["targets"]
    for user, label in ((annotator, "agree"), (second, "disagree")):
        assignment = services.assignment_next(project=project, annotator=user)
        sentences = [{"index": i, "label": label, "not_sure": False} for i in targets]
        services.annotation_submit(
            assignment=assignment,
            answer={"label": label, "not_sure": False, "sentences": sentences},
        )
    reviewer = factories.UserFactory()
    factories.MembershipFactory(project=project, user=reviewer, role="reviewer")
    login(page, live_server, reviewer.username, factories.PASSWORD)
    for width, height in ((390, 844), (1280, 900)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/p/{project.slug}/review/?lang=de")
        assert "Einträge, bei denen sich die Annotierenden uneinig sind" in page.inner_text("main")
        no_overflow(page)
        assert page.evaluate(OFF_SCREEN, width) == []
        assert axe_violations(page) == []
        page.goto(f"{live_server.url}/p/{project.slug}/review/{item.id}/?lang=de")
        page.wait_for_selector(".st-row")
        assert "Was die Annotierenden geantwortet haben" in page.inner_text("main")
        no_overflow(page)
        assert page.evaluate(OFF_SCREEN, width) == []
        assert axe_violations(page) == []
        screenshot(page, f"review-de-{width}")
    page.locator(".use-answer").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#review-state:has-text('ist geladen')")
    assert page.locator("#validation").inner_text() in ("Bereit zum Festhalten.", "")
