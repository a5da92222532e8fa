"""Ranking dashboards and the original-versus-reproduction comparison in a real browser."""

from __future__ import annotations

import random

from annotation.models import Annotation, Item
from projects.models import Project
from task_types.ranking import demo
from tests import factories
from tests.agreement import helpers
from tests.conftest import REPO
from tests.e2e.conftest import login

SCREENSHOTS = REPO / "bench" / "out"


def competition(scores: dict[str, float]) -> dict[str, int]:
    """Standard competition ranks (1 best) of rounded scores: equal scores tie."""
    rounded = {k: round(v) for k, v in scores.items()}
    return {k: 1 + sum(other > v for other in rounded.values()) for k, v in rounded.items()}


def rank_everything(project, annotators, preference, *, items=30, seed=3):
    """Each annotator scores every output as the system's quality plus noise, per criterion."""
    rng = random.Random(seed)
    criteria = [c["name"] for c in project.config["criteria"]]
    for item in Item.objects.filter(project=project).order_by("position")[:items]:
        systems = {
            k: o["system"]
            for k, o in zip(item.prepared["keys"], item.payload["outputs"], strict=True)
        }
        for user in annotators:
            ranks = {
                c: competition({k: preference[s] + rng.gauss(0, 1.1) for k, s in systems.items()})
                for c in criteria
            }
            helpers.answer(item, user, [], 0, rng.randint(30_000, 200_000))
            Annotation.objects.filter(item=item, annotator=user).update(
                answer={"order": list(systems), "ranks": ranks}
            )


def test_researcher_compares_an_original_ranking_study_with_its_reproduction(
    live_server, page, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    researcher = factories.UserFactory(username="researcher-rank")
    first = [factories.UserFactory(username=f"orig{i}") for i in (1, 2, 3)]
    demo.create(researcher=researcher, annotators=first)
    original = Project.objects.get(slug="ranking-explanations")
    rank_everything(original, first, {"gpt4": 3.0, "gpt35": 2.0, "llama2-70b": 1.6})

    reproduction = Project.objects.create(
        slug="ranking-reproduction",
        name="Ranking · reproduction",
        task_type="ranking",
        config=original.config,
        annotators_per_item=3,
    )
    factories.MembershipFactory(project=reproduction, user=researcher, role="researcher")
    second = [factories.UserFactory(username=f"repro{i}") for i in (1, 2, 3)]
    for user in second:
        factories.MembershipFactory(project=reproduction, user=user)
    for item in Item.objects.filter(project=original).order_by("position")[:30]:
        Item.objects.create(
            project=reproduction,
            external_id=item.external_id,
            payload=item.payload,
            prepared=item.prepared,
            position=item.position,
        )
    rank_everything(reproduction, second, {"gpt4": 2.6, "gpt35": 2.3, "llama2-70b": 1.2}, seed=4)

    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{original.slug}/agreement/")
    page.wait_for_selector("#block-mar_1 svg")
    assert page.locator("#table-alpha_levels tbody tr").count() == 4  # one per criterion
    # every headline tile holds its value (a sentence wraps instead of running over the next)
    assert page.evaluate(
        "[...document.querySelectorAll('.tile')].every(t => t.scrollWidth <= t.clientWidth + 1)"
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "agreement_ranking.png"), full_page=True)

    page.select_option("#compare select", reproduction.slug)
    page.click("#compare button[type=submit]")
    page.wait_for_selector("#plots svg")
    assert page.locator("#table-spearman tbody tr").count() == 4
    assert "30" in page.locator(".tiles .tile").first.inner_text()  # shared items
    page.screenshot(path=str(SCREENSHOTS / "agreement_compare.png"), full_page=True)

    # The original paper's figures, typed in: the form keeps the text on an error.
    page.goto(f"{live_server.url}/p/{original.slug}/agreement/")
    page.click("text=Compare with published figures")
    page.wait_for_selector("#published-form textarea")
    vector = page.locator("#published-form select option").first.inner_text()
    page.fill("#published-form input[name=label]", "Original paper")
    page.fill("#published-form textarea", "gpt4: 2.9\ngpt35 2.1")
    page.locator("#published-form textarea").press("Tab")  # keyboard: values → Compare
    page.keyboard.press("Enter")
    page.wait_for_selector("#values-error:not([hidden])")
    assert "Line 2: write" in page.locator("#values-error").inner_text()
    assert page.locator("#published-form textarea").input_value() == "gpt4: 2.9\ngpt35 2.1"
    page.fill("#published-form textarea", "gpt4: 2.9\ngpt35: 2.1\nllama2-70b: 1.5")
    page.click("#published-form button[type=submit]")
    page.wait_for_selector("#plots svg")
    assert vector in page.locator("#table-vectors").inner_text()
    assert "Original paper" in page.locator("#table-vectors thead").inner_text()
    assert page.locator("#table-vectors tbody tr").count() == 3
    page.screenshot(path=str(SCREENSHOTS / "agreement_compare_published.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= 390 + 1")
    page.screenshot(path=str(SCREENSHOTS / "agreement_compare_published_390.png"), full_page=True)
