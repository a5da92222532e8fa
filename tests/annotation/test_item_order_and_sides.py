"""Issue 30 item 1: each annotator's random item order is reproducible from their seed and differs
between annotators, N per item still holds under concurrent annotators in that order, and the
sides of pairwise questions (and ranking's output order) are balanced within one per annotator,
stored with every answer and exported."""

import json
from collections import Counter

import pytest
from django.db import connection

from annotation import ordering, services
from annotation.models import Annotation, Assignment, Item
from projects.models import Membership
from studies.services.exports import export_jsonl
from studies.services.imports import import_items
from tests import factories
from tests.annotation.test_concurrency import at_once
from tests.conftest import require

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}
ASCENDING = 2**30  # starts half way up the keys, walks up
DESCENDING = 2**31 + 2**29  # starts a quarter of the way up, walks down

FIELDS = [
    {"name": "prompt", "label": "Prompt"},
    {"name": "left", "label": "Left answer"},
    {"name": "right", "label": "Right answer"},
]
QUESTIONS = [
    {"id": "better", "kind": "pairwise", "prompt": "Which is better?", "fields": ["left", "right"]},
    {"id": "helpful", "kind": "likert", "prompt": "Helpful?", "points": ["No", "Yes"]},
]


def random_project(**fields):
    return factories.ProjectFactory(crowd={"assignment_strategy": "random"}, **fields)


def annotator(project, *, seed=None):
    user = factories.UserFactory()
    membership = factories.MembershipFactory(project=project, user=user, role="annotator")
    if seed is not None:
        Membership.objects.filter(pk=membership.pk).update(order_seed=seed)
    return user


def work_through(project, user) -> list[int]:
    """The item ids the annotator is offered, in order, answering each."""
    got = []
    while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
        got.append(assignment.item_id)
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    return got


def keys_of(project) -> list[tuple[int, int]]:
    return list(Item.objects.filter(project=project).values_list("id", "shuffle_key"))


@pytest.mark.parametrize("seeds", [(ASCENDING, DESCENDING), (None, None)])
def test_random_order_is_reproducible_from_the_seed_and_differs_between_annotators(db, seeds):
    project = random_project(annotators_per_item=3)
    items = factories.make_items(project, 40)
    users = [annotator(project, seed=seed) for seed in seeds]
    orders = [work_through(project, user) for user in users]
    for user, order in zip(users, orders, strict=True):
        seed = Membership.objects.get(project=project, user=user).order_seed
        assert order == ordering.seeded_order(keys_of(project), seed)
        assert sorted(order) == sorted(i.pk for i in items)  # every item, once
    assert orders[0] != orders[1]
    assert orders[0] != [i.pk for i in items]  # not the import order
    # Every item sits at different places for the two annotators (not a shift of one list).
    places = [{item: n for n, item in enumerate(order)} for order in orders]
    assert sum(places[0][i] != places[1][i] for i in places[0]) > 30


def test_the_walk_wraps_round_and_passes_over_items_others_filled(db):
    project = random_project(annotators_per_item=1)
    factories.make_items(project, 12)
    keys = sorted(keys_of(project), key=lambda pair: pair[1])
    middle = keys[6][1]  # start on the 7th key: six items before the wrap
    first = annotator(project, seed=middle)
    taken = services.assignment_next(project=project, annotator=first)
    assert taken.item_id == keys[6][0]
    services.annotation_submit(assignment=taken, answer=ANSWER)
    second = annotator(project, seed=middle)  # the same seed: the same order
    order = work_through(project, second)
    expected = [i for i in ordering.seeded_order(keys, middle) if i != keys[6][0]]
    assert order == expected
    assert order[:5] == [pair[0] for pair in keys[7:]] and order[5] == keys[0][0]


def test_random_order_keeps_controls_and_batches(db):
    project = factories.ProjectFactory(
        annotators_per_item=1,
        crowd={"assignment_strategy": "random", "batch_size": 4, "controls_per_batch": 1},
    )
    factories.make_items(project, 10)
    factories.make_items(project, 3, kind="control", start=100)
    user = annotator(project, seed=DESCENDING)
    first = services.assignment_next(project=project, annotator=user, start_batch=True)
    batch = Assignment.objects.filter(batch_id=first.batch_id)
    kinds = Counter(batch.values_list("item__kind", flat=True))
    assert kinds == {"regular": 4, "control": 1}
    regular = set(batch.filter(item__kind="regular").values_list("item_id", flat=True))
    regular_keys = [(i, k) for i, k in keys_of(project) if Item.objects.get(pk=i).kind == "regular"]
    assert regular == set(ordering.seeded_order(regular_keys, DESCENDING)[:4])


def test_n_per_item_holds_under_20_concurrent_annotators_in_random_order(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = random_project(annotators_per_item=3)
    factories.make_items(project, 30)
    users = [annotator(project) for _ in range(20)]

    def work(user):
        work_through(project, user)

    assert not at_once(work, users, timeout=180)
    per_item = Counter(Assignment.objects.filter(project=project).values_list("item_id", flat=True))
    assert len(per_item) == 30 and set(per_item.values()) == {3}, per_item
    pairs = list(Assignment.objects.filter(project=project).values_list("item_id", "annotator_id"))
    assert len(set(pairs)) == len(pairs)
    assert all(i.assigned_count == 3 for i in Item.objects.filter(project=project))
    assert Assignment.objects.filter(project=project, state="submitted").count() == 90
    # The 20 annotators did not all start on the same item.
    firsts = {
        Assignment.objects.filter(project=project, annotator=u).order_by("sequence").first()
        for u in users
    }
    assert len({a.item_id for a in firsts if a is not None}) > 3


# --- sides ---------------------------------------------------------------------------------------


def test_flips_are_balanced_within_one_at_every_point_and_differ_between_seeds():
    patterns = set()
    for seed in range(50):
        flips = [ordering.flipped(seed, n) for n in range(1, 101)]
        for end in range(1, 101):
            assert abs(2 * sum(flips[:end]) - end) <= 1
        patterns.add(tuple(flips))
    assert len(patterns) > 40  # drawn from the seed, not a fixed alternation


def questionnaire_project():
    project = factories.ProjectFactory(
        task_type="questionnaire",
        config={"fields": FIELDS, "questions": QUESTIONS},
        annotators_per_item=2,
    )
    records = [{"id": f"r{n}", "prompt": f"Q{n}?", "left": "L", "right": "R"} for n in range(9)]
    stream = "".join(json.dumps(r) + "\n" for r in records).encode()
    import io

    import_items(project=project, stream=io.BytesIO(stream), fmt="jsonl")
    return project


def test_pairwise_sides_are_balanced_within_one_per_annotator_stored_and_exported(db):
    project = questionnaire_project()
    for _ in range(2):
        user = annotator(project)
        firsts = []
        while (a := services.assignment_next(project=project, annotator=user)) is not None:
            shown = a.presentation
            assert shown["first_shown"]["better"] in ("left", "right")
            page = services.task_types.get("questionnaire").display(a.item, assignment=a)
            if shown["flipped"]:
                assert page["order"] == ["prompt", "right", "left"]
                assert page["first_shown"] == {"better": "right"}
            else:
                assert page["order"] == ["prompt", "left", "right"]
            firsts.append(shown["first_shown"]["better"])
            left_first = firsts.count("left")
            assert abs(left_first - (len(firsts) - left_first)) <= 1
            services.annotation_submit(
                assignment=a, answer={"better": -1, "helpful": 2}, time_spent_ms=1000
            )
        assert len(firsts) == 9
    for answer in Annotation.objects.filter(item__project=project).select_related("assignment"):
        assert answer.presentation == answer.assignment.presentation != {}
    rows = [json.loads(line) for line in "".join(export_jsonl(project=project)).splitlines()]
    rows = [r for r in rows if r["question"] == "better"]  # one row per question
    assert len(rows) == 18
    assert all(r["presentation"]["first_shown"]["better"] in ("left", "right") for r in rows)
    assert sorted(r["sequence"] for r in rows) == sorted(list(range(1, 10)) * 2)


def test_reports_show_the_human_position_effect(db):
    """Every annotator prefers whichever side was shown first: the table says 100 %."""
    from agreement.reports import ReportOptions, build_report
    from agreement.reports.gather import gather

    project = questionnaire_project()
    for _ in range(2):
        user = annotator(project)
        while (a := services.assignment_next(project=project, annotator=user)) is not None:
            left_first = a.presentation["first_shown"]["better"] == "left"
            services.annotation_submit(
                assignment=a, answer={"better": -1 if left_first else 1, "helpful": 2}
            )
    report = build_report(gather(project=project, options=ReportOptions(n_boot=20)))
    (row,) = report["tables"]["human_position"]["rows"]
    assert row["answers"] == 18 and row["first"] == 18 and row["second"] == 0
    assert row["as_configured"] + row["swapped"] == 18 and abs(row["swapped"] - 9) <= 1
    assert row["share_first"] == 1.0
    assert {"label": "Shown first preferred · better", "value": "100 %"} in report["section"][
        "summary"
    ]
