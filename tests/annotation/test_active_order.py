"""Issue 27 item 3: active sampling deals items highest priority first (weights from the judges'
uncertainty, llm_judges.services.sampling), keeps N per item, controls and batches, holds N per
item under concurrent annotators, and refuses to re-weigh once humans started."""

from collections import Counter

import pytest
from django.db import connection

from annotation import services
from annotation.models import Assignment, Item
from core.errors import Refusal
from llm_judges.models import Judge, JudgeResult
from llm_judges.services import item_uncertainties, sampling_weights_compute
from studies.export_check import export_body
from tests import factories
from tests.annotation.test_concurrency import at_once
from tests.annotation.test_item_order_and_sides import annotator, work_through
from tests.conftest import require


def active_project(**fields):
    crowd = {"assignment_strategy": "active", **fields.pop("crowd", {})}
    return factories.ProjectFactory(crowd=crowd, **fields)


def judged(project, items, *, sure_every=3):
    """An NLI judge sure of two items in three (top probability 0.98), unsure of the third (0.4),
    and an embedding judge that agrees with it on the sure ones only."""
    nli = Judge.objects.create(project=project, name="nli", kind="nli", model="/m/nli")
    emb = Judge.objects.create(project=project, name="emb", kind="embedding", model="/m/e")
    for n, item in enumerate(items):
        unsure = n % sure_every == 0
        top = 0.4 if unsure else 0.98
        probabilities = {
            "entailment": top,
            "neutral": (1 - top) / 2,
            "contradiction": (1 - top) / 2,
        }
        JudgeResult.objects.create(
            item=item,
            judge=nli,
            prompt_version="v1",
            status="ok",
            answer={"sentences": [1]},
            detail={"pairs": [{"label": "entailment", "probabilities": probabilities}]},
        )
        JudgeResult.objects.create(
            item=item,
            judge=emb,
            prompt_version="v1",
            status="ok",
            answer={"sentences": [] if unsure else [1]},
            detail={"similarities": [0.62 if unsure else 0.95], "threshold": 0.6},
        )
    return [item.pk for n, item in enumerate(items) if n % sure_every == 0]


def priority_order(project) -> list[int]:
    return list(
        Item.objects.filter(project=project, kind="regular")
        .order_by("-sampling_priority", "id")
        .values_list("id", flat=True)
    )


def test_uncertainty_and_weights_from_the_judges(db):
    project = active_project()
    items = factories.make_items(project, 30)
    unsure = judged(project, items)
    u = item_uncertainties(project_id=project.pk)
    # unsure: NLI 0.6 and embedding 1 - 0.02/0.25 averaged, and the two judges disagree (1)
    assert u[unsure[0]] == pytest.approx(((0.6 + 0.92) / 2 + 1) / 2)
    assert u[items[1].pk] == pytest.approx(((0.02 + 0) / 2 + 0) / 2)
    report = sampling_weights_compute(project_id=project.pk, floor=0.2)
    assert report.items == 30 and report.with_uncertainty == 30
    weights = dict(Item.objects.filter(project=project).values_list("id", "sampling_weight"))
    assert sum(weights.values()) == pytest.approx(30)  # mean weight 1
    assert min(weights[i] for i in unsure) > 2
    assert max(w for i, w in weights.items() if i not in unsure) < 0.3
    assert all(w >= 0.2 for w in weights.values())


def test_active_order_deals_highest_priority_first_and_keeps_n_per_item(db):
    project = active_project(annotators_per_item=2)
    items = factories.make_items(project, 24)
    judged(project, items)
    sampling_weights_compute(project_id=project.pk)
    expected = priority_order(project)
    first, second = annotator(project), annotator(project)
    assert work_through(project, first) == expected  # the same order for everyone
    assert work_through(project, second) == expected
    assert work_through(project, annotator(project)) == []  # two per item: nothing left
    per_item = Counter(Assignment.objects.filter(project=project).values_list("item_id", flat=True))
    assert set(per_item.values()) == {2}
    with pytest.raises(Refusal, match="fixed once humans start") as refused:
        sampling_weights_compute(project_id=project.pk)
    assert refused.value.code == "conflict"


def test_unsure_items_come_first_more_often_than_not(db):
    project = active_project(annotators_per_item=1)
    items = factories.make_items(project, 90)
    unsure = set(judged(project, items))
    sampling_weights_compute(project_id=project.pk, floor=0.1)
    first_third = priority_order(project)[:30]
    # A third of the items are unsure; with weights ~2.5 against ~0.25 most of the first 30 are.
    assert sum(i in unsure for i in first_third) > 20


def test_active_order_keeps_controls_and_batches(db):
    project = active_project(
        annotators_per_item=1, crowd={"batch_size": 4, "controls_per_batch": 1}
    )
    items = factories.make_items(project, 10)
    factories.make_items(project, 3, kind="control", start=100)
    judged(project, items)
    sampling_weights_compute(project_id=project.pk)
    user = annotator(project)
    first = services.assignment_next(project=project, annotator=user, start_batch=True)
    batch = Assignment.objects.filter(batch_id=first.batch_id)
    assert Counter(batch.values_list("item__kind", flat=True)) == {"regular": 4, "control": 1}
    regular = set(batch.filter(item__kind="regular").values_list("item_id", flat=True))
    assert regular == set(priority_order(project)[:4])


def test_control_rate_without_batches(db):
    project = active_project(annotators_per_item=1, crowd={"control_rate": 0.3})
    items = factories.make_items(project, 12)
    factories.make_items(project, 6, kind="control", start=100)
    judged(project, items)
    sampling_weights_compute(project_id=project.pk)
    got = work_through(project, annotator(project))
    kinds = dict(Item.objects.filter(project=project).values_list("id", "kind"))
    assert [i for i in got if kinds[i] == "regular"] == priority_order(project)


def test_n_per_item_holds_under_20_concurrent_annotators_in_active_order(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = active_project(annotators_per_item=3)
    items = factories.make_items(project, 30)
    judged(project, items)
    sampling_weights_compute(project_id=project.pk)
    users = [annotator(project) for _ in range(20)]

    def work(user):
        work_through(project, user)

    assert not at_once(work, users, timeout=180)
    per_item = Counter(Assignment.objects.filter(project=project).values_list("item_id", flat=True))
    assert len(per_item) == 30 and set(per_item.values()) == {3}, per_item
    pairs = list(Assignment.objects.filter(project=project).values_list("item_id", "annotator_id"))
    assert len(set(pairs)) == len(pairs)
    assert Assignment.objects.filter(project=project, state="submitted").count() == 90


def test_an_unknown_floor_is_refused_naming_the_field(db):
    project = active_project()
    with pytest.raises(Refusal) as refused:
        sampling_weights_compute(project_id=project.pk, floor=0)
    assert refused.value.field == "floor"


def test_the_command_weighs_the_items(db):
    from io import StringIO

    from django.core.management import CommandError, call_command

    project = active_project()
    items = factories.make_items(project, 6)
    judged(project, items)
    out = StringIO()
    call_command("sampling_weights", project=project.slug, floor=0.5, stdout=out)
    assert "6 items weighted, 6 with an uncertainty" in out.getvalue()
    assert not Item.objects.filter(project=project, sampling_priority=0).exists()
    with pytest.raises(CommandError, match="floor"):
        call_command("sampling_weights", project=project.slug, floor=2)


def test_the_recorded_weights_and_priorities_are_exported(db):
    import csv
    import io

    from django.test import Client
    from django.urls import reverse

    project = active_project()
    items = factories.make_items(project, 6)
    judged(project, items)
    sampling_weights_compute(project_id=project.pk)
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    client = Client()
    client.force_login(researcher)
    url = reverse("project-items-export", args=[project.slug, "csv"])
    body = export_body(b"".join(client.get(url).streaming_content))
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    stored = {
        i.external_id: (i.sampling_weight, i.sampling_priority)
        for i in Item.objects.filter(project=project)
    }
    assert len(rows) == 6
    for row in rows:
        weight, priority = stored[row["external_id"]]
        assert float(row["sampling_weight"]) == pytest.approx(weight)
        assert float(row["sampling_priority"]) == pytest.approx(priority)


def test_weights_follow_each_run_until_humans_start_and_the_judges_page_computes_them(db):
    """Researchers use pages: a judge run's end sets the weights (before humans start), and the
    judges page says how many items have one and computes them on demand."""
    from django.test import Client

    from llm_judges.models import JudgeRun
    from llm_judges.services.runs import _announce_finished

    project = active_project()
    researcher = factories.UserFactory(username=factories.unique("researcher"))
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    items = factories.make_items(project, 9)
    judged(project, items)
    judge = Judge.objects.get(project=project, name="nli")
    run = JudgeRun.objects.create(judge=judge, project=project, status="done", total=9)
    _announce_finished(run.pk)
    assert not Item.objects.filter(project=project, sampling_weight__isnull=True).exists()

    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "9 of 9 items have a weight" in page and "Compute the weights now" in page
    Item.objects.filter(project=project).update(sampling_weight=None)
    done = client.post(f"/p/{project.slug}/judges/sampling-weights/", follow=True)
    assert "Sampling weights set for 9 items" in done.content.decode()

    # Once a human has an item, the weights are fixed: a run's end leaves them, the page says so.
    services.assignment_next(project=project, annotator=annotator(project))
    before = dict(Item.objects.filter(project=project).values_list("id", "sampling_priority"))
    JudgeResult.objects.filter(item__project=project, judge__name="emb").delete()
    _announce_finished(run.pk)
    after = dict(Item.objects.filter(project=project).values_list("id", "sampling_priority"))
    assert after == before
    refused = client.post(f"/p/{project.slug}/judges/sampling-weights/", follow=True)
    assert "fixed once humans start" in refused.content.decode()
    assert "Annotators have started" in refused.content.decode()
    other = factories.UserFactory(username=factories.unique("eve"))
    other_client = Client()
    other_client.force_login(other)
    assert other_client.post(f"/p/{project.slug}/judges/sampling-weights/").status_code == 404
