"""A judge's pre-selection in the annotator's page: off by default, shown and recorded when on."""

from annotation.models import Annotation
from llm_judges.models import Judge, JudgeResult, PreselectionShown
from llm_judges.selectors import _setting
from llm_judges.services import preselection_enable
from tests import factories
from tests.e2e.conftest import login


def make_project():
    project = factories.ProjectFactory(annotators_per_item=1)
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    items = factories.make_items(project, 2)
    judge = Judge.objects.create(
        project=project, name="minilm-test", kind="embedding", model="all-MiniLM-L6-v2"
    )
    for item in items:
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version=judge.prompt_version,
            setting=_setting(project),
            status=JudgeResult.Status.OK,
            answer={"sentences": [2], "none": False},
        )
    return project, annotator, judge


def test_the_judges_answer_is_pre_selected_only_when_the_researcher_turns_it_on(live_server, page):
    project, annotator, judge = make_project()
    login(page, live_server, annotator.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/annotate/")
    page.wait_for_selector("#cr-sentences li")
    assert page.locator("#cr-sentences li.selected").count() == 0  # off by default
    assert not PreselectionShown.objects.exists()

    preselection_enable(project=project, judge=judge)  # switched on while item 1 is open
    page.click("#cr-sentences li[data-index='1']")
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Escape")  # off the slider: Enter submits
    page.keyboard.press("Enter")
    page.wait_for_selector("#cr-sentences li.selected[data-index='2']")  # item 2, pre-selected
    assert page.locator("#position").inner_text().startswith("Item 2")
    assert "Pre-selected by the judge “minilm-test”" in page.locator("#banner").inner_text()
    page.click("#cr-sentences li[data-index='0']")  # the annotator corrects the suggestion
    page.locator("#cr-helpfulness").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Escape")  # off the slider: Enter submits
    page.keyboard.press("Enter")
    page.wait_for_selector("#done:not([hidden])")
    first, second = Annotation.objects.filter(annotator=annotator).order_by("assignment__sequence")
    assert first.answer["sentences"] == [1] and second.answer["sentences"] == [0, 2]
    shown = PreselectionShown.objects.get()
    assert shown.assignment_id == second.assignment_id and shown.judge == judge
    assert shown.answer == {"sentences": [2], "none": False}
