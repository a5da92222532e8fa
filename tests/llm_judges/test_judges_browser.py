"""The judges page in a real browser: progress bars update while a run advances; screenshots of
the page and of a run's detail go to bench/out/."""

from pathlib import Path

import pytest

from llm_judges import services
from tests import factories
from tests.e2e.conftest import login
from tests.llm_judges.conftest import make_llm_judge
from tests.llm_judges.stub_llm import Reply, claim_of

SCREENSHOTS = Path(__file__).resolve().parents[2] / "bench" / "out"
pytestmark = pytest.mark.e2e


def test_the_judges_page_follows_a_run_and_shows_what_failed(live_server, page, stub, api_key):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(name="Citation recovery pilot")
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    items = factories.make_items(project, 20)
    stub.responder = lambda request: (
        Reply(content="Sentence two, I think.")
        if claim_of(request) == "Claim number 3 is accurate."
        else Reply(status=400)
        if claim_of(request) == "Claim number 7 is accurate."
        else Reply()
    )
    earlier = make_llm_judge(stub, project, name="gpt-4o-mini · v1")
    done = services.judge_run_start(judge=earlier, project=project, enqueue=False)
    services.judge_batch_process(run_id=done.pk, item_ids=[i.pk for i in items])
    services.judge_create(
        project=project, name="minilm-baseline", kind="embedding", model="all-MiniLM-L6-v2"
    )
    judge = make_llm_judge(stub, project, name="llama-3.1-70b · v1")
    running = services.judge_run_start(judge=judge, project=project, enqueue=False)
    services.judge_batch_process(run_id=running.pk, item_ids=[i.pk for i in items[:6]])

    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/judges/")
    row = page.locator(f"tr[data-run='{running.pk}']")
    assert "6 done (1 unparseable) · 0 failed · 20 items" in row.inner_text()
    assert row.locator(".status").inner_text() == "running"
    page.screenshot(path=str(SCREENSHOTS / "judges.png"), full_page=True)

    services.judge_batch_process(run_id=running.pk, item_ids=[i.pk for i in items[6:14]])
    page.wait_for_function(
        f"document.querySelector(\"tr[data-run='{running.pk}'] .counts\").textContent.startsWith('13 done')"
    )
    assert "1 failed" in row.locator(".counts").inner_text()

    page.goto(f"{live_server.url}/p/{project.slug}/judges/runs/{done.pk}/")
    assert "Sentence two, I think." in page.locator("pre.raw").inner_text()
    assert "HTTP 400" in page.inner_text("main")
    page.screenshot(path=str(SCREENSHOTS / "judge_run.png"), full_page=True)


def test_starting_a_run_on_the_whole_project_asks_first(live_server, page):
    from llm_judges.models import JudgeRun

    researcher = factories.UserFactory()
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.make_items(project, 3)
    services.judge_create(
        project=project, name="baseline-ask", kind="embedding", model="all-MiniLM-L6-v2"
    )
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/judges/")
    page.select_option("form.judge-start select[name=judge]", label="baseline-ask")
    asked = []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", answer)
    with page.expect_event("dialog"):
        page.click("form.judge-start button[type=submit]")
    assert asked and "all 3 items" in asked[0]
    assert not JudgeRun.objects.filter(project=project).exists()
    page.check("form.judge-start input[name=kind][value=regular]")  # narrowed: no question
    # Without a broker (SQLite) the run is judged inside this POST, loading MiniLM first when no
    # earlier test in the process did: a bound for that work, not a figure the test asserts.
    page.click("form.judge-start button[type=submit]", no_wait_after=True)
    page.wait_for_selector(".messages", timeout=180_000)
    assert JudgeRun.objects.filter(project=project).count() == 1
    assert len(asked) == 1


def test_the_cost_estimate_asks_nothing_and_starts_nothing(live_server, page):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.make_items(project, 3)
    from llm_judges.models import JudgeRun

    services.judge_create(
        project=project, name="baseline-estimate", kind="embedding", model="all-MiniLM-L6-v2"
    )
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/judges/")
    page.select_option("form.judge-start select[name=judge]", label="baseline-estimate")
    asked = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("form.judge-start button[value=estimate]")
    estimate = page.wait_for_selector("#judge-estimate")
    assert "3 of 3 items to judge" in estimate.text_content()
    assert "no calls, no tokens" in estimate.text_content()
    assert asked == [] and not JudgeRun.objects.filter(project=project).exists()


def test_in_the_embedded_setup_starting_a_run_never_blocks_the_page(
    transactional_db, celery_eager, settings, stub, api_key
):
    """`make run` (eager Celery, no broker): the page answers while the judge is still working,
    and the run then finishes on its own."""
    import threading

    from django.test import Client

    from llm_judges.models import JudgeResult, JudgeRun

    settings.CONCORD_EAGER_IN_BACKGROUND = True
    gate, asked = threading.Event(), threading.Event()

    def hang(request):
        asked.set()
        return Reply(wait=gate)

    stub.responder = hang
    researcher = factories.UserFactory()
    project = factories.ProjectFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    factories.make_items(project, 2)
    judge = make_llm_judge(stub, project, name="slow-judge")
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/judges/", {"action": "start", "judge": judge.pk, "kind": ["regular"]}
    )
    assert response.status_code == 302  # answered while every judge call still hangs
    assert asked.wait(60)  # the run's thread is in its first judge call, not in the database
    run = JudgeRun.objects.get(project=project)
    assert run.status in ("pending", "running") and not JudgeResult.objects.exists()
    background = [t for t in threading.enumerate() if t.name.startswith("concord-")]
    gate.set()
    for thread in background:  # the run's thread (started before the page answered) ends
        thread.join()
    run.refresh_from_db()
    assert background and run.status == "done"
    assert JudgeResult.objects.filter(run=run).count() == 2
