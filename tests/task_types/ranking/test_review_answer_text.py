"""The review and item pages write a ranking answer through the task type's ``answer_text`` with
the item: each output by its letter on the review page and its system, never the opaque keys
answers store (a probe's finding: reviewers saw "3fa2b1c0 1, 9d8e7f6a 2")."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation import services, task_types
from annotation.models import Item
from studies.services.imports import import_items
from task_types.ranking.task import display_order
from tests import factories
from tests.task_types.ranking.test_ranking import (
    CRITERIA,
    RECORDS,
    SYSTEMS,
    annotator_in,
    jsonl,
    ranks_for,
)

TASK = task_types.get("ranking")


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": CRITERIA, "systems": SYSTEMS, "seed": 5}
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


@pytest.fixture
def disputed(project):
    """One item two annotators ranked differently."""
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    plans = [
        {
            "Coverage": {"gpt4": 1, "gpt35": 1, "llama2-70b": 3},
            "Overall": {"gpt4": 1, "gpt35": 2, "llama2-70b": 3},
        },
        {
            "Coverage": {"gpt4": 3, "gpt35": 1, "llama2-70b": 2},
            "Overall": {"gpt4": 2, "gpt35": 1, "llama2-70b": 3},
        },
    ]
    for plan in plans:
        user = annotator_in(project)
        assignment = services.assignment_next(project=project, annotator=user)
        services.annotation_submit(assignment=assignment, answer=ranks_for(assignment.item, plan))
    return Item.objects.get(project=project)


def _letters(item) -> dict[str, str]:
    """System -> the letter the review page shows it under (the judges' order)."""
    systems = [item.payload["outputs"][i]["system"] for i in display_order(item)]
    return {system: "ABC"[i] for i, system in enumerate(systems)}


def test_with_the_item_each_output_is_its_letter_and_system_best_first(project, disputed):
    letter = _letters(disputed)
    key_of = {
        o["system"]: k
        for k, o in zip(disputed.prepared["keys"], disputed.payload["outputs"], strict=True)
    }
    answer = {
        "ranks": {"Coverage": {key_of["gpt35"]: 2, key_of["gpt4"]: 1, key_of["llama2-70b"]: 2}}
    }
    later = sorted(["gpt35", "llama2-70b"], key=letter.get)
    assert TASK.answer_text(answer, item=disputed) == (
        f"Coverage: {letter['gpt4']} gpt4 1, " + ", ".join(f"{letter[s]} {s} 2" for s in later)
    )


def test_a_key_the_item_does_not_have_is_written_as_it_is(project, disputed):
    assert TASK.answer_text({"ranks": {"Overall": {"zz": 1}}}, item=disputed) == "Overall: zz 1"


def test_the_review_page_shows_systems_and_never_the_keys(project, researcher, disputed):
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("review-item", args=[project.slug, disputed.pk])).content.decode()
    table = page.split('class="card review-answers"')[1].split("</table>")[0]
    assert table.count("gpt4 ") >= 2 and "llama2-70b" in table
    assert not any(key in table for key in disputed.prepared["keys"])


def test_the_item_page_shows_systems_and_never_the_keys(project, researcher, disputed):
    client = Client()
    client.force_login(researcher)
    url = reverse("project-item", args=[project.slug, disputed.pk])
    page = client.get(url).content.decode()
    answers = page.split('class="answer-text"')[1:]
    assert len(answers) == 2
    assert all("gpt35" in a.split("</p>")[0] for a in answers)
    assert not any(key in a.split("</p>")[0] for a in answers for key in disputed.prepared["keys"])
