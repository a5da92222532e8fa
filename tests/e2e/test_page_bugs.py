"""Issue 13's page bugs, each in a real browser: every test here failed before its fix."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation import services, task_types
from annotation.models import Annotation, Assignment, Item
from projects.models import Membership
from tests import factories
from tests.e2e.conftest import login
from tests.e2e.pages import demo_project

# Records every request to a submit URL the page makes from now on.
SPY_ON_SUBMIT = """() => {
  window.submitAttempts = [];
  const send = window.fetch;
  window.fetch = (url, options) => {
    if (String(url).includes("/submit/")) window.submitAttempts.push(String(url));
    return send(url, options);
  };
}"""


def annotate(page, live_server, project, user):
    login(page, live_server, user.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_function("document.querySelector('#position').textContent !== 'Loading…'")


@pytest.mark.parametrize(
    "slug, button, effect",
    [
        (
            "citation_recovery",
            "#guidelines-toggle",
            "!document.querySelector('#guidelines').hidden",
        ),
        ("stance", "#st-help", "!document.querySelector('#guidelines').hidden"),
        (
            "claim_review",
            "#rv-to-verify",
            "!document.querySelector('#rv-screen-verify').hidden",
        ),
    ],
)
def test_enter_on_a_focused_button_presses_it_and_never_submits(
    live_server, page, slug, button, effect
):
    project, _, annotator = demo_project(slug, items=2)
    annotate(page, live_server, project, annotator)
    page.evaluate(SPY_ON_SUBMIT)
    banner = (
        "[document.querySelector('#banner').hidden, document.querySelector('#banner').textContent]"
    )
    before = page.evaluate(banner)
    page.focus(button)
    page.keyboard.press("Enter")
    page.wait_for_function(effect)
    # A submit starts in the keydown handler itself: its request (or, the item being unanswered,
    # its refusal in the banner) exists by the time the key press has returned. No waiting.
    assert page.evaluate("window.submitAttempts") == []
    assert page.evaluate(banner) == before
    assert not Annotation.objects.filter(annotator=annotator).exists()
    assert page.locator("#position").inner_text().startswith("Item 1")


def test_space_toggles_a_focused_sentence_and_escape_leaves_a_text_box(live_server, page):
    project, _, annotator = demo_project("citation_recovery")
    annotate(page, live_server, project, annotator)
    page.evaluate(SPY_ON_SUBMIT)
    sentence = page.locator("#cr-sentences li[data-index='1']")
    sentence.focus()
    before = page.evaluate("window.scrollY")
    page.keyboard.press(" ")
    assert sentence.get_attribute("aria-checked") == "true"
    assert page.evaluate("window.scrollY") == before  # Space did not scroll the page
    page.keyboard.press(" ")
    assert sentence.get_attribute("aria-checked") == "false"
    page.keyboard.press("Enter")  # a focused sentence keeps Enter: it toggles, nothing is sent
    assert sentence.get_attribute("aria-checked") == "true"
    assert page.evaluate("window.submitAttempts") == []
    assert not Annotation.objects.filter(annotator=annotator).exists()


def test_claim_review_verify_shows_an_added_claims_text_and_refuses_the_systems_label(
    live_server, page
):
    project, _, annotator = demo_project("claim_review")
    annotate(page, live_server, project, annotator)
    page.click(".rv-slot .rv-add >> nth=0")
    page.keyboard.type("The tower is made of wrought iron.")
    page.keyboard.press("Escape")  # leaves the text box: the item's keys work again
    assert page.evaluate("document.activeElement.tagName") != "TEXTAREA"
    page.click("#rv-to-verify")
    added = page.locator("#rv-verify-list .rv-card.rv-add")
    assert "The tower is made of wrought iron." in added.inner_text()
    # Disagreeing cannot give the label the system already gave.
    first = page.locator("#rv-verify-list .rv-card:not(.rv-add)").first
    first.locator(".rv-disagree").click()
    system = first.locator(".rv-chip").inner_text()
    assert first.locator(f".rv-label[data-label='{system}']").is_disabled()


@pytest.mark.parametrize("slug", ["claim_review", "stance"])
def test_all_done_hides_the_submit_bar(live_server, page, slug):
    project, _, annotator = demo_project(slug, items=0)
    annotate(page, live_server, project, annotator)
    page.wait_for_selector("#done", state="visible")
    assert page.locator("#submit").is_hidden()
    assert page.locator("#validation").is_hidden()


def test_swagger_ui_loads_offline_from_our_own_static_files(live_server, page):
    researcher = factories.UserFactory()
    outside = []

    def only_local(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
    assert "Concord API" in page.locator(".swagger-ui .info .title").inner_text()
    assert outside == []


def test_an_empty_upload_says_why_nothing_was_imported(live_server, page, tmp_path):
    project, researcher, _ = demo_project("citation_recovery", items=0)
    empty = tmp_path / "items.jsonl"
    empty.write_bytes(b"")
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.set_input_files("input[name=file]", str(empty))
    page.click("form.row-form button[type=submit]")
    errors = page.locator("#import-errors")
    errors.wait_for()
    assert "Nothing was imported" in errors.inner_text()
    assert "empty" in errors.inner_text().lower()
    assert Item.objects.filter(project=project).count() == 0


def test_stance_adjudication_opens_the_instructions_without_an_error(live_server, page):
    project, researcher, annotator = demo_project("stance", per_item=2)
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
    Membership.objects.filter(user=researcher).update(role="researcher")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/review/{item.id}/")
    page.wait_for_selector(".st-row")
    page.click("#st-help")
    assert page.locator("#guidelines").is_visible()
    assert errors == []


def test_dashboard_prints_no_nan_keeps_greek_letters_and_names_its_interval(live_server, page):
    project, researcher, _ = demo_project("argument_structure", items=2)
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/agreement/")
    page.wait_for_selector("#headline")
    text = page.locator("main").inner_text()
    assert "nan" not in text.split()
    label = page.locator("#headline .tile .label").first
    assert label.inner_text().startswith("α")  # not "A": no uppercase transform
    # An edit project answers structures: no review figure that cannot apply.
    assert "α edges" in text and "α decision" not in text and "Review figures" not in text


def test_the_review_list_says_what_this_task_type_compares(live_server, page):
    project, researcher, _ = demo_project("ranking")
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/review/")
    text = page.locator("main").inner_text()
    assert "citation recovery" not in text
    assert task_types.get("ranking").agreement_basis in text


def test_previous_items_show_the_claims_first_words_and_plain_states(live_server, page):
    project, _, annotator = demo_project("stance", items=2)
    annotate(page, live_server, project, annotator)
    for _ in range(page.locator(".st-row").count()):
        page.keyboard.press("a")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    page.click("#history-toggle")
    entries = page.locator("#history-list button")
    entries.nth(1).wait_for()
    claim_start = " ".join(task_types.get("stance").demo_payload()["claim"].split()[:3])
    texts = entries.all_inner_texts()
    assert re.match(r"Item 1 #\w{6} · " + re.escape(claim_start), texts[1])
    assert texts[1].endswith("· submitted")
    assert texts[0].startswith("Item 2 #") and "reserved" not in " ".join(texts)


def test_the_minimum_time_warning_is_said_next_to_the_submit_button(live_server, page):
    project, _, annotator = demo_project("stance", items=1)
    project.crowd = {"min_seconds_per_item": 600}
    project.save(update_fields=["crowd"])
    annotate(page, live_server, project, annotator)
    for _ in range(page.locator(".st-row").count()):
        page.keyboard.press("a")
    page.click("#submit")
    validation = page.locator(".submitbar #validation")
    assert "at least 600 s" in validation.inner_text()
    assert validation.get_attribute("aria-live") == "polite"
    assert not Annotation.objects.filter(annotator=annotator).exists()


def test_an_annotator_outside_a_project_is_told_they_are_not_a_member(db, client):
    project, _, _ = demo_project("stance")
    outsider = factories.UserFactory()
    client.force_login(outsider)
    response = client.get(f"/p/{project.slug}/annotate/")
    assert response.status_code == 404
    assert "You are not a member of this project" in response.content.decode()
    missing = client.get("/p/no-such-project/annotate/")  # the same words: names stay private
    assert "You are not a member of this project" in missing.content.decode()


def test_home_shows_done_of_total_and_the_import_history_says_just_now(db, client):
    project, researcher, annotator = demo_project("stance", items=3)
    client.force_login(annotator)
    assert "<strong>0</strong> of 3 items done" in client.get("/").content.decode()
    client.force_login(researcher)
    client.post(
        f"/p/{project.slug}/",
        {"format": "jsonl", "file": SimpleUploadedFile("more.jsonl", b"{}\\n")},
    )
    assert "just now" in client.get(f"/p/{project.slug}/").content.decode()


def test_ranking_arrows_scroll_the_page_until_the_grid_has_the_focus(live_server, page):
    project, _, annotator = demo_project("ranking")
    page.set_viewport_size({"width": 1280, "height": 600})
    annotate(page, live_server, project, annotator)
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowDown")
    page.wait_for_function("window.scrollY > 0")  # the page scrolled, no cell moved
    assert page.locator(".rk-cell.active").get_attribute("data-criterion") == "0"
    page.focus("#rk-grid")
    page.keyboard.press("ArrowDown")
    active = page.locator(".rk-cell.active")
    assert active.get_attribute("data-criterion") == "1"
    assert active.evaluate(
        "(cell) => { const r = cell.getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= innerHeight; }"
    )


def test_argument_structure_undo_redo_and_a_compact_syntax_error_blocks_submit(live_server, page):
    project, _, annotator = demo_project("argument_structure")
    annotate(page, live_server, project, annotator)
    page.click("#as-tab-2")
    compact = page.locator("#as-compact")
    original = compact.input_value()
    compact.fill("(E1, E2 -> E3")  # unbalanced: a syntax error
    page.wait_for_function("document.querySelector('#submit').disabled")
    assert "syntax error" in page.locator("#validation").inner_text()
    compact.fill(original)
    page.wait_for_function("!document.querySelector('#submit').disabled")
    compact.fill("E1 -> claim")
    page.locator("#as-steps").click(position={"x": 2, "y": 2})  # focus leaves the text box
    page.locator("body").press("Control+z")
    page.wait_for_function(f"document.querySelector('#as-compact').value === {original!r}")
    page.locator("body").press("Control+Shift+z")
    page.wait_for_function("document.querySelector('#as-compact').value === 'E1 -> claim'")


def test_argument_structure_review_answers_by_keys(live_server, page):
    project, _, annotator = demo_project("argument_structure", config={"mode": "review"})
    annotate(page, live_server, project, annotator)
    page.wait_for_selector("#as-review:not([hidden])")
    page.locator("body").click(position={"x": 5, "y": 5})
    # The demo item (a draft and a reference) is a blind A/B comparison: A valid, B not valid,
    # then "A is better".
    for key in "121":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_function("!document.querySelector('#done').hidden")
    answer = Annotation.objects.get(annotator=annotator).answer
    assert (answer["validity_a"], answer["validity_b"], answer["preference"]) == (True, False, "A")


@pytest.mark.parametrize("slug", ["stance", "ranking"])
def test_a_researcher_previews_the_annotation_page_and_nothing_is_stored(live_server, page, slug):
    project, researcher, annotator = demo_project(slug, items=2)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.click("text=Preview the annotation page")
    page.wait_for_selector(".preview-note")
    assert "nothing you do here is stored" in page.locator(".preview-note").inner_text()
    # the note is in the served HTML; the position line is written once the item has loaded
    page.wait_for_function(
        "document.querySelector('#position').textContent.startsWith('Preview of item')"
    )
    assert page.locator("#submit").is_disabled()  # the task's own checks run as for annotators
    if slug == "stance":  # answered by keys, then submitted: checked, and still not stored
        page.locator("body").click(position={"x": 5, "y": 5})
        for _ in range(page.locator(".st-row").count()):
            page.keyboard.press("a")
        page.keyboard.press("Enter")
        page.wait_for_selector("#banner:has-text('Nothing was stored')")
    assert not Assignment.objects.filter(project=project).exists()
    assert errors == []
    page.context.clear_cookies()
    login(page, live_server, annotator.username, factories.PASSWORD)
    response = page.goto(f"{live_server.url}/p/{project.slug}/preview/")
    assert response.status == 404


def test_claim_review_renders_the_responses_markdown_as_text_nodes_and_keeps_the_highlight(
    live_server, page
):
    response = (
        "## Answer\n\nThe Eiffel Tower was built between 1887 and 1889 for the World's Fair. "
        "It is **about 330 metres** tall.\n\n- It is in *Paris*.\n- Formula $E = mc^2$ stays "
        'text.\n\n<img src=x onerror="window.__pwned = 1"> `code`'
    )
    project, _, annotator = demo_project("claim_review")
    item = Item.objects.get(project=project)
    item.payload = {**item.payload, "response": response}
    item.save(update_fields=["payload"])
    task_type = task_types.get("claim_review")
    item.prepared = task_type.prepare(item.payload, config={})[0].prepared
    item.save(update_fields=["prepared"])
    annotate(page, live_server, project, annotator)
    box = page.locator("#rv-response")
    assert box.locator("strong").inner_text() == "about 330 metres"
    assert box.locator("ul li").count() == 2 and box.locator("em").inner_text() == "Paris"
    assert "$E = mc^2$" in box.inner_text() and "##" not in box.inner_text()
    assert box.locator("img").count() == 0 and page.evaluate("window.__pwned === undefined")
    assert "<img src=x" in box.inner_text()
    mark = box.locator("mark")
    assert mark.count() >= 1 and "1887" in " ".join(mark.all_inner_texts())


def test_stance_numbers_each_sentence_once_in_the_response_and_in_its_row(live_server, page):
    project, _, annotator = demo_project("stance")
    annotate(page, live_server, project, annotator)
    badges = page.locator("#st-response .st-mark").all_inner_texts()
    titles = page.locator(".st-row:not(.whole) .st-row-title").all_inner_texts()
    assert badges == [str(n) for n in range(1, len(badges) + 1)]
    assert [t.split()[0] for t in titles] == badges
    assert all(f"sentence {n}," in t.lower() for n, t in zip(badges, titles, strict=True))


def test_the_focus_stays_on_a_control_after_the_list_is_redrawn(live_server, page):
    project, _, annotator = demo_project("claim_review")
    annotate(page, live_server, project, annotator)
    page.click("#rv-to-verify")
    agree = page.locator("#rv-verify-list .rv-card >> nth=0").locator(".rv-agree")
    agree.focus()
    page.keyboard.press("Enter")
    assert agree.get_attribute("aria-pressed") == "true"  # pressed, and the list redrawn
    assert page.evaluate("document.activeElement.classList.contains('rv-agree')")

    project, _, annotator = demo_project("argument_structure")
    page.context.clear_cookies()
    annotate(page, live_server, project, annotator)
    page.click("#as-tab-2")
    before = page.locator("#as-steps .as-remove").count()
    page.locator("#as-steps .as-remove").first.focus()
    page.keyboard.press("Enter")
    assert page.locator("#as-steps .as-remove").count() == before - 1
    assert page.evaluate("document.activeElement.tagName") == "BUTTON"


def test_items_carry_a_short_reference_annotators_and_reviewers_both_see(live_server, page):
    from annotation.references import item_reference

    project, researcher, annotator = demo_project("citation_recovery", items=2)
    annotate(page, live_server, project, annotator)
    shown = page.locator("#position").inner_text()
    reference = re.search(r"#\w{6}", shown).group(0)
    item = Item.objects.get(pk=Assignment.objects.get(annotator=annotator).item_id)
    assert reference == item_reference(item_id=item.pk)
    assert str(item.pk) not in reference and str(item.position) not in shown.split("·")[-1]
    other = Item.objects.exclude(pk=item.pk).get(project=project)
    assert item_reference(item_id=other.pk) != reference
