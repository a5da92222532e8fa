"""The agreement dashboard in a real browser, on the citation-recovery demo project."""

from __future__ import annotations

import random
from pathlib import Path

from annotation.models import Item
from projects.models import Project
from task_types.citation_recovery import demo
from tests import factories
from tests.agreement import helpers
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"


def annotate_demo(project, annotators, *, items=90, seed=7):
    """Plausible answers: each annotator finds the gold sentences with their own accuracy,
    sometimes adds a neighbour or misses one; helpfulness follows a per-item quality."""
    rng = random.Random(seed)
    skill = [0.85, 0.7, 0.55, 0.2]
    for item in Item.objects.filter(project=project).order_by("position")[:items]:
        gold = item.gold["sentences"]
        n = len(item.prepared["sentences"])
        quality = rng.gauss(60, 18)
        for k, user in enumerate(annotators):
            chosen = set(gold)
            if rng.random() > skill[k]:
                if chosen and rng.random() < 0.5:
                    chosen.discard(rng.choice(sorted(chosen)))
                chosen.add(rng.randrange(n))
            helpful = int(min(100, max(0, rng.gauss(quality + 8 * (k - 1), 12))))
            helpers.answer(item, user, sorted(chosen), helpful, rng.randint(20_000, 140_000))


def test_researcher_reads_the_demo_dashboard_and_downloads_a_table(live_server, page, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    researcher = factories.UserFactory(username="researcher-e2e")
    annotators = [factories.UserFactory(username=f"annotator{i}") for i in (1, 2, 3, 4)]
    demo.create(researcher=researcher, annotators=annotators)
    project = Project.objects.get(slug="citation-recovery-gpt4")
    # A fourth annotator who answers carelessly and has been disqualified (issue 7's flag).
    annotators[3].memberships.update(qualification="disqualified")
    annotate_demo(project, annotators)

    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.click("text=Agreement and results dashboard")
    page.wait_for_selector("#headline .tile")
    assert "up to date" in page.locator("#report-status").inner_text()
    assert page.locator("#table-agreement tbody tr").count() == 2
    assert page.locator("#block-groups svg").count() == 2
    assert page.locator("#block-f1_distribution svg").count() == 1
    # The disqualified annotator is offered but not counted.
    assert not page.locator("#coder-filter input[type=checkbox]").nth(3).is_checked()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "agreement_dashboard.png"), full_page=True)
    page.locator("#block-groups").screenshot(path=str(SCREENSHOTS / "agreement_groups.png"))

    with page.expect_download() as download_info:
        page.locator("#block-groups a.csv").click()
    text = Path(download_info.value.path()).read_text()
    assert text.splitlines()[0].startswith("group,items,answers,precision_mean")

    # Counting the disqualified annotator too lowers agreement.
    alpha_before = page.locator("#headline .tile .value").first.inner_text()
    page.locator("#coder-filter input[type=checkbox]").nth(3).check()
    page.click("#coder-filter button[type=submit]")
    page.wait_for_selector("#headline .tile")
    assert "annotator4" not in page.locator(".excluded").all_inner_texts()
    alpha_after = page.locator("#headline .tile .value").first.inner_text()
    assert float(alpha_after) < float(alpha_before)
