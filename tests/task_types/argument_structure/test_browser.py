"""Argument structure in a real browser: edit the texts, build a structure in the graph editor and
the step list, see the live check reject a cycle, fix it, submit; review mode side by side."""

import io
import json
from pathlib import Path

from annotation.models import Annotation
from studies.services.imports import import_items
from tests import factories
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"

RECORD = {
    "id": "why-bridge",
    "claim": "The bridge closed because its cables corroded.",
    "cause": "corroded cables",
    "effect": "the bridge closed",
    "label": "supports",
    "evidence": [
        {"id": "E1", "text": "Inspectors found rust on the main cables.", "leaf": True},
        {"id": "E2", "text": "Rust weakens steel.", "leaf": True},
        {"id": "E3", "text": "The cables could no longer carry the bridge's load safely."},
        {"id": "E4", "text": "The bridge is painted green."},
    ],
}

NODE_POSITION = """(ref) => {
  const cy = Concord.tasks.argument_structure.graph();
  const p = cy.getElementById("n_" + ref).renderedPosition();
  const box = cy.container().getBoundingClientRect();
  return {x: box.left + p.x, y: box.top + p.y};
}"""


def setup_project(records, mode="edit", **config):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(
        task_type="argument_structure",
        config={"mode": mode, "seed": 13, **config},
        annotators_per_item=1,
        guidelines="## Guide\nBuild the reasoning.",
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    return project, annotator


def click_node(page, ref, shift=False):
    position = page.evaluate(NODE_POSITION, ref)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.click(position["x"], position["y"])
    if shift:
        page.keyboard.up("Shift")


def problems(page):
    return page.locator("#as-problems li").all_inner_texts()


def test_annotator_builds_three_steps_sees_a_cycle_rejected_fixes_it_and_submits(live_server, page):
    project, annotator = setup_project([RECORD])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-evidence-list li")

    assert page.locator("#as-evidence-list .as-leaf").count() == 2  # the data's leaf flags
    # Stage 1: revise a text, delete the irrelevant statement, add a missing one.
    page.fill("#as-evidence-list li[data-id='E2'] textarea", "Rust weakens steel cables.")
    page.click("button[aria-label='Delete E4']")
    page.click("#as-add-evidence")
    new = page.locator("#as-evidence-list li[data-id='E5'] textarea")  # never reuses the deleted E4
    new.fill("Engineers ordered the bridge closed.")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "argument_structure_texts.png"), full_page=True)
    page.click("#as-next")
    page.wait_for_selector("#as-stage-2:not([hidden])")
    assert problems(page) == ["The structure has no steps yet: link the evidence to the claim."]
    assert page.locator("#submit").is_disabled()

    # Step 1 in the graph, many-to-one: click E1 and E2, Shift-click E3.
    click_node(page, "E1")
    click_node(page, "E2")
    assert page.locator("#as-picked").inner_text() == "E1, E2"
    click_node(page, "E3", shift=True)
    # Step 2 in the list: E3 -> E5.
    page.click("#as-add-step")
    page.locator(".as-step[data-step='1'] .as-premises").fill("E3")
    page.locator(".as-step[data-step='1'] select").select_option("E5")
    # Step 3 in the graph: click E5, then the claim.
    click_node(page, "E5")
    click_node(page, "claim")
    assert page.locator("#as-compact").input_value() == "(E1, E2) -> E3 -> E5 -> claim"
    assert problems(page) == ["The structure is well formed: every statement leads to the claim."]
    assert not page.locator("#submit").is_disabled()

    # A fourth step E5 -> E1 closes a cycle: the check explains it and submission is blocked.
    page.click("#as-add-step")
    page.locator(".as-step[data-step='3'] .as-premises").fill("E5")
    page.locator(".as-step[data-step='3'] select").select_option("E1")
    cycle = "Cycle: E1 → E3 → E5 → E1. A statement cannot support itself, even through other steps."
    assert problems(page) == [cycle]
    assert page.locator("#submit").is_disabled()
    assert page.locator("#validation").inner_text() == cycle
    page.screenshot(path=str(SCREENSHOTS / "argument_structure_cycle.png"), full_page=True)

    # Fix: remove the step; the structure is well formed again and can be submitted.
    page.click("button[aria-label='Remove step 4']")
    assert problems(page) == ["The structure is well formed: every statement leads to the claim."]
    page.screenshot(path=str(SCREENSHOTS / "argument_structure.png"), full_page=True)
    page.click("#submit")
    page.wait_for_selector("#done:not([hidden])")

    answer = Annotation.objects.get(annotator=annotator).answer
    assert answer["steps"] == [
        {"premises": ["E1", "E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "E5"},
        {"premises": ["E5"], "conclusion": "claim"},
    ]
    assert answer["structure_text"] == "(E1, E2) -> E3 -> E5 -> claim"
    assert [e["id"] for e in answer["evidence"]] == ["E1", "E2", "E3", "E5"]
    assert answer["evidence"][1]["text"] == "Rust weakens steel cables."


def test_a_draft_with_problems_is_explained_and_can_be_fixed_in_the_compact_form(live_server, page):
    record = {**RECORD, "structure": "(E1, E2) -> E3; E4 -> E4; claim -> E1"}
    project, annotator = setup_project([record])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-evidence-list li")
    page.click("#as-tab-2")
    shown = problems(page)
    assert "Cycle: E4 → E4. A statement cannot support itself, even through other steps." in shown
    assert "Step 3 uses the claim as a premise; the claim can only be a conclusion." in shown
    assert "No step concludes the claim yet: link the final statements to the claim." in shown
    compact = page.locator("#as-compact")
    compact.fill("(E1, E2) -> E3 -> (E4")
    assert "expected ',' or ')' but found the end" in page.locator("#as-compact-error").inner_text()
    compact.fill("(E1, E2) -> E3; (E3, E4) -> claim")
    assert problems(page) == ["The structure is well formed: every statement leads to the claim."]
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Enter")
    page.wait_for_selector("#done:not([hidden])")
    assert (
        Annotation.objects.get(annotator=annotator).answer["structure_text"]
        == "(E1, E2) -> E3; (E3, E4) -> claim"
    )


def test_an_annotator_discards_a_claim_that_is_not_a_valid_causal_relation(live_server, page):
    project, annotator = setup_project([RECORD])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-evidence-list li")
    page.check("#as-not-causal")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Enter")  # no structure was built: the discard alone can be submitted
    page.wait_for_selector("#done:not([hidden])")
    answer = Annotation.objects.get(annotator=annotator).answer
    assert answer["invalid_causal_relation"] is True and answer["steps"] == []


def test_against_the_provided_reference_by_keyboard_the_answer_is_win_tie_or_lose(
    live_server, page
):
    record = {
        **RECORD,
        "structure": "(E1, E2) -> E3 -> claim; E4 -> claim",
        "reference_structure": "(E1, E2) -> E3 -> claim",
    }
    project, annotator = setup_project([record], mode="review", comparison="reference")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-compare:not([hidden])")
    assert page.locator("#as-title-a").inner_text() == "Generated structure"
    assert page.locator("#as-title-b").inner_text() == "Reference structure (provided)"
    assert page.locator("#as-compact-b").inner_text() == "(E1, E2) -> E3 -> claim"
    assert not page.locator("#as-compare .as-question[data-field='validity_b']").is_visible()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("2")  # the generated structure is not coherent
    page.keyboard.press("3")  # the reference is better: lose
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(
        path=str(SCREENSHOTS / "argument_structure_against_reference_390.png"), full_page=True
    )
    page.keyboard.press("Enter")
    page.wait_for_selector("#done:not([hidden])")
    answer = Annotation.objects.get(annotator=annotator).answer
    assert answer["outcome"] == "lose" and answer["validity"] is False
    assert answer["reference_validity"] is None and "validity_b" not in answer


def test_review_mode_compares_two_structures_side_by_side_blind(live_server, page):
    record = {
        **RECORD,
        "structure": "(E1, E2) -> E3 -> claim; E4 -> claim",
        "reference_structure": "(E1, E2) -> E3 -> claim",
    }
    filtered = {**RECORD, "id": "why-filter", "structure": "(E1, E2) -> E3 -> claim"}
    project, annotator = setup_project([record, filtered], mode="review")
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-compare:not([hidden])")
    texts = {page.locator("#as-compact-a").inner_text(), page.locator("#as-compact-b").inner_text()}
    assert texts == {"(E1, E2) -> E3 -> claim; E4 -> claim", "(E1, E2) -> E3 -> claim"}
    assert "reference" not in page.locator("#as-compare").inner_text().lower()
    page.click("[data-field='validity_a'] button:has-text('not valid')")
    page.click("[data-field='validity_b'] button:has-text('valid') >> nth=0")
    page.click("button:has-text('B is better')")
    page.screenshot(path=str(SCREENSHOTS / "argument_structure_review.png"), full_page=True)
    page.click("#submit")
    page.wait_for_selector("#as-filter:not([hidden])")
    page.click("[data-field='faithfulness'] button:has-text('yes')")
    page.click("[data-field='fluency'] button:has-text('yes')")
    assert page.locator("#validation").inner_text() == "Answer validity."
    page.click("[data-field='validity'] button:has-text('no')")
    page.click("button:has-text('discard')")
    page.screenshot(path=str(SCREENSHOTS / "argument_structure_review_filter.png"), full_page=True)
    page.click("#submit")
    page.wait_for_selector("#done:not([hidden])")

    # The server maps the blind A/B answer with the item's stored order.
    compared = Annotation.objects.select_related("item").get(
        annotator=annotator, item__external_id="why-bridge"
    )
    generated_is_b = compared.item.prepared["order"][1] == "generated"
    assert compared.answer["outcome"] == ("win" if generated_is_b else "lose")
    assert compared.answer["validity"] is generated_is_b
    assert compared.answer["reference_validity"] is not generated_is_b
    reviewed = Annotation.objects.get(annotator=annotator, item__external_id="why-filter").answer
    assert reviewed == {
        "decision": "discard",
        "faithfulness": True,
        "fluency": True,
        "validity": False,
    }


def test_dataset_text_is_never_run_as_html(live_server, page):
    hostile = {
        **RECORD,
        "claim": '<img src=x onerror="window.__pwned = 1">Claim',
        "evidence": [
            *RECORD["evidence"][:3],
            {"id": "E4", "text": "<script>window.__pwned = 2</script>"},
        ],
        "structure": "(E1, E2) -> E3 -> claim",
    }
    project, annotator = setup_project([hostile])
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#as-evidence-list li")
    assert page.locator("#as-claim").inner_text() == hostile["claim"]
    assert (
        page.locator("#as-evidence-list li[data-id='E4'] textarea").input_value()
        == hostile["evidence"][3]["text"]
    )
    page.click("#as-tab-2")
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#task img, #task script").count() == 0
