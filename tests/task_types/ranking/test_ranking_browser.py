"""Ranking in a real browser: three outputs with a tie, shown in a shuffled order without system
names; the stored answer and the export map the ranks back to the right systems."""

import io
import json
from types import SimpleNamespace

from annotation.models import Annotation
from metrics.ranking import mean_average_rank
from studies.services.exports import export_stream
from studies.services.imports import import_items
from task_types.ranking.task import display_order
from tests import factories
from tests.conftest import REPO
from tests.e2e.conftest import login

SCREENSHOTS = REPO / "bench" / "out"
EXPLANATIONS = REPO / "data" / "explanation-ranking" / "explanations.jsonl"
SYSTEMS = ["gpt4", "gpt35", "llama2-70b"]
CRITERIA = [
    {
        "name": "Coverage",
        "definition": "Contains the salient information for the fact check.",
        "examples": [],
    },
    {
        "name": "Overall",
        "definition": "Overall quality of the justification.",
        "examples": ["A short, complete explanation beats a long, repetitive one."],
    },
]


def setup_project():
    """A project whose seed makes the first item's order (and its reverse, which the annotator
    may be shown instead) differ from the payload (system) order, so the test shows the mapping
    survives a real shuffle."""
    records = [json.loads(line) for line in EXPLANATIONS.read_text().splitlines()[:2]]
    researcher = factories.UserFactory()
    annotator = factories.UserFactory()
    seed = next(
        s
        for s in range(100)
        # The item's order (reversed for half of an annotator's items): neither way round
        # the payload order.
        if display_order(
            SimpleNamespace(prepared={"keys": [1, 2, 3], "order_seed": f"{s}:{records[0]['id']}"})
        )
        not in ([0, 1, 2], [2, 1, 0])
    )
    project = factories.ProjectFactory(
        task_type="ranking",
        config={"criteria": CRITERIA, "systems": SYSTEMS, "seed": seed},
        annotators_per_item=1,
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    return project, annotator, records


def test_annotator_ranks_three_shuffled_outputs_with_a_tie_and_the_answer_maps_to_the_systems(
    live_server, page
):
    project, annotator, records = setup_project()
    bodies = []

    def keep(response):
        if "/api/" in response.url or "/annotate/" in response.url:
            bodies.append(response.text())

    page.on("response", keep)
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".rk-cell")
    record = records[0]
    assert page.locator("#rk-claim").inner_text() == record["claim"]
    heads = page.locator(".rk-output-head").all_inner_texts()
    assert heads == ["Output A", "Output B", "Output C"]
    texts = page.locator(".rk-output-text").all_inner_texts()
    system_of_text = {o["text"]: o["system"] for o in record["outputs"]}
    shown_systems = [system_of_text[t] for t in texts]
    assert shown_systems != SYSTEMS  # shuffled (the seed was chosen so)
    assert "Contains the salient information" in page.locator(".rk-criterion").first.inner_text()

    # Coverage by click: A and B tied first, C third.
    cell = lambda c, o: page.locator(f".rk-cell[data-criterion='{c}'][data-output='{o}']")  # noqa: E731
    cell(0, 0).locator("[data-rank='1']").click()
    cell(0, 1).locator("[data-rank='1']").click()
    cell(0, 2).locator("[data-rank='2']").click()  # a dense "1, 1, 2" is refused with a fix offered
    assert page.locator("#submit").is_disabled()
    assert "1, 1, 3" in page.locator(".rk-criterion").first.inner_text()
    page.locator(".rk-fix").first.click()
    assert cell(0, 2).locator(".rk-rank.on").inner_text() == "3"
    assert page.locator(".rk-cell.tied").count() == 2

    # Overall by keys: C best, then A, then B.
    cell(1, 0).click()
    page.keyboard.press("2")
    page.keyboard.press("3")
    page.keyboard.press("1")
    assert not page.locator("#submit").is_disabled()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "ranking.png"), full_page=True)
    page.click("#submit")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")

    annotation = Annotation.objects.get(annotator=annotator)
    item = annotation.item
    system_of_key = dict(
        zip(item.prepared["keys"], (o["system"] for o in item.payload["outputs"]), strict=True)
    )
    assert [system_of_key[k] for k in annotation.answer["order"]] == shown_systems
    by_system = {
        c: {system_of_key[k]: r for k, r in ranks.items()}
        for c, ranks in annotation.answer["ranks"].items()
    }
    a, b, c = shown_systems
    assert by_system == {"Coverage": {a: 1, b: 1, c: 3}, "Overall": {a: 2, b: 3, c: 1}}

    rows = [
        json.loads(line)
        for line in "".join(export_stream(project=project, fmt="jsonl")).splitlines()
    ]
    assert {(r["criterion"], r["system"], r["rank"]) for r in rows} == {
        (criterion, system, rank)
        for criterion, ranks in by_system.items()
        for system, rank in ranks.items()
    }
    assert len(rows) == 6 and {r["item_id"] for r in rows} == {record["id"]}
    coverage = mean_average_rank(
        (r["annotator"], r["item_id"], r["system"], r["rank"])
        for r in rows
        if r["criterion"] == "Coverage"
    )
    assert coverage.overall == {a: 1.0, b: 1.0, c: 3.0}

    # Neither the page nor any API response the browser received named a system.
    assert any('"outputs"' in body for body in bodies)  # the next-item responses were captured
    seen = "".join(bodies) + page.content()
    for system in SYSTEMS:
        assert system not in seen


def test_a_reload_keeps_the_order_and_the_ranks_given_so_far(live_server, page):
    project, annotator, records = setup_project()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".rk-cell")
    texts = page.locator(".rk-output-text").all_inner_texts()
    page.locator(".rk-cell[data-criterion='0'][data-output='1'] [data-rank='2']").click()
    page.wait_for_function("document.querySelector('#save-state').textContent === 'Draft saved'")
    page.reload()
    page.wait_for_selector(".rk-cell")
    assert page.locator(".rk-output-text").all_inner_texts() == texts
    assert (
        page.locator(".rk-cell[data-criterion='0'][data-output='1'] .rk-rank.on").inner_text()
        == "2"
    )
    assert "rank output A, C" in page.locator("#validation").inner_text()


def test_a_dense_tie_convention_without_the_platforms_note_is_followed_on_the_page(
    live_server, page
):
    project, annotator, _ = setup_project()
    project.config = {**project.config, "tie_convention": "dense", "tie_instructions": False}
    project.save()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector(".rk-cell")
    help_text = page.locator(".rk-corner-text").inner_text()
    assert "1 is the best" in help_text and "tie" not in help_text.lower()  # no added note
    cell = lambda c, o: page.locator(f".rk-cell[data-criterion='{c}'][data-output='{o}']")  # noqa: E731
    for criterion in (0, 1):
        cell(criterion, 0).locator("[data-rank='1']").click()
        cell(criterion, 1).locator("[data-rank='1']").click()
        cell(criterion, 2).locator("[data-rank='3']").click()  # competition style: refused here
    assert page.locator("#submit").is_disabled()
    assert "1, 1, 2" in page.locator(".rk-criterion").first.inner_text()
    page.locator(".rk-fix:not([hidden])").first.click()
    page.locator(".rk-fix:not([hidden])").first.click()
    assert cell(0, 2).locator(".rk-rank.on").inner_text() == "2"
    assert not page.locator("#submit").is_disabled()
    page.click("#submit")
    page.wait_for_function("document.querySelector('#position').textContent.startsWith('Item 2')")
    answer = Annotation.objects.get(annotator=annotator).answer
    assert sorted(answer["ranks"]["Coverage"].values()) == [1, 1, 2]
