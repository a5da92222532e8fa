"""The judges page says when a pre-selection is switched on but not shown, and why."""

from django.test import Client

from tests import factories
from tests.llm_judges.test_preselection_rule import answer_items, make_judge


def test_the_judges_page_says_why_a_pre_selection_is_not_shown_yet(project, researcher):
    items = factories.make_items(project, 3)
    judge = make_judge(project)
    answer_items(judge, items[:2], project)
    client = Client()
    client.force_login(researcher)
    page = client.post(
        f"/p/{project.slug}/judges/", {"action": "preselection", "judge": judge.pk}, follow=True
    ).content.decode()
    assert "no parsed answer yet for 1 of the project&#x27;s 3 items" in page
    assert "Annotators now see" not in page and "on, not shown yet" in page
    answer_items(judge, items[2:], project)
    page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "not shown yet" not in page and "<strong>on</strong>" in page
