"""Control items, running accuracy, disqualification, qualification rounds, researcher decisions."""

import json
from datetime import timedelta

from django.utils import timezone

from annotation import quality, selectors, services
from annotation.models import Annotation, Assignment, Batch, Item
from crowd.selectors import quality_overview
from projects.models import Membership
from studies.services.exports import export_jsonl
from tests.conftest import client_for
from tests.crowd.conftest import NONE, RIGHT, WRONG, add_annotator, crowd_project, import_jsonl
from tests.factories import citation_payload


def work(project, annotator, *, control_answer, limit=100):
    """Annotate until the workflow stops: controls get ``control_answer``, regular items RIGHT.
    Returns the kinds of the items dealt, in order."""
    dealt = []
    for _ in range(limit):
        assignment = services.assignment_next(
            project=project, annotator=annotator, start_batch=True
        )
        if assignment is None:
            return dealt
        dealt.append(assignment.item.kind)
        answer = control_answer if assignment.item.kind == Item.Kind.CONTROL else RIGHT
        services.annotation_submit(assignment=assignment, answer=answer, time_spent_ms=9000)
    raise AssertionError("the workflow never stopped")


def membership(project, user):
    return Membership.objects.get(project=project, user=user)


def test_an_annotator_who_answers_every_control_wrong_is_stopped_after_the_minimum_number_of_controls(
    batch_project,
):
    careless = add_annotator(batch_project)
    dealt = work(batch_project, careless, control_answer=WRONG)
    assert dealt.count(Item.Kind.CONTROL) == 3  # min_controls: stopped right at the third
    member = membership(batch_project, careless)
    assert member.qualification == Membership.Qualification.DISQUALIFIED
    assert member.qualification_reason == Membership.QualificationReason.CONTROL_ACCURACY
    stop = selectors.annotator_stop(project=batch_project, user=careless)
    assert stop["reason"] == "disqualified"
    assert "cannot offer you more items" in stop["message"]
    # Their open work went back to the pool, their batch stopped, their answers are kept.
    assert not Assignment.objects.filter(
        annotator=careless, state=Assignment.State.RESERVED
    ).exists()
    assert Batch.objects.filter(annotator=careless, state=Batch.State.STOPPED).count() == 1
    assert Annotation.objects.filter(annotator=careless).count() == len(dealt)
    for item in Item.objects.filter(project=batch_project, kind=Item.Kind.REGULAR):
        assert (
            item.assigned_count
            == Assignment.objects.filter(item=item, state__in=["reserved", "submitted"]).count()
        )


def test_an_annotator_who_answers_the_controls_right_continues_until_the_items_run_out(
    batch_project,
):
    careful = add_annotator(batch_project)
    dealt = work(batch_project, careful, control_answer=RIGHT)
    assert dealt.count(Item.Kind.REGULAR) == 12  # every regular item
    assert dealt.count(Item.Kind.CONTROL) == 6  # two per batch until the controls ran out
    assert membership(batch_project, careful).qualification == Membership.Qualification.NOT_REQUIRED
    assert quality.control_accuracy(project_id=batch_project.id, annotator_id=careful.id) == (6, 6)


def test_both_outcomes_are_visible_to_the_researcher(batch_project, client):
    careless, careful = add_annotator(batch_project), add_annotator(batch_project)
    work(batch_project, careless, control_answer=WRONG)
    work(batch_project, careful, control_answer=RIGHT)
    people = {p["username"]: p for p in quality_overview(project=batch_project)["annotators"]}
    assert people[careless.username]["excluded"] and people[careless.username]["accuracy"] == 0
    assert (people[careful.username]["controls_right"], people[careful.username]["accuracy"]) == (
        6,
        1,
    )
    assert not people[careful.username]["excluded"]

    client.force_login(batch_project.researcher)
    page = client.get(f"/p/{batch_project.slug}/quality/").content.decode()
    row_careless = page.split(careless.username)[1].split("</tr>")[0]
    row_careful = page.split(careful.username)[1].split("</tr>")[0]
    assert (
        "Disqualified" in row_careless and "0 / 3" in row_careless and "Reinstate" in row_careless
    )
    assert "Disqualified" not in row_careful and "6 / 6" in row_careful


def test_a_mix_of_right_and_wrong_controls_is_judged_by_the_threshold(db):
    project = crowd_project(
        crowd={"control_rate": 0.5, "min_controls": 4, "accuracy_threshold": 0.5}
    )
    annotator = add_annotator(project)
    answers = iter([RIGHT, WRONG, RIGHT, WRONG, WRONG, WRONG])
    dealt = []
    for _ in range(100):
        assignment = services.assignment_next(project=project, annotator=annotator)
        if assignment is None:
            break
        is_control = assignment.item.kind == Item.Kind.CONTROL
        dealt.append(is_control)
        services.annotation_submit(
            assignment=assignment, answer=next(answers) if is_control else RIGHT
        )
    # 2/4 = 50 % holds the threshold; the fifth control (2/5) falls below it.
    assert dealt.count(True) == 5
    assert membership(project, annotator).qualification == Membership.Qualification.DISQUALIFIED


def test_controls_are_mixed_in_at_the_configured_rate_and_never_take_places(db):
    project = crowd_project(crowd={"control_rate": 0.3}, regular=40, controls=40, per_item=1)
    annotator = add_annotator(project)
    dealt = work(project, annotator, control_answer=RIGHT)
    assert dealt.count(Item.Kind.REGULAR) == 40
    assert 5 <= dealt.count(Item.Kind.CONTROL) <= 35  # a seeded draw at 30 %, not a fixed rhythm
    assert set(
        Item.objects.filter(kind=Item.Kind.CONTROL).values_list("assigned_count", flat=True)
    ) == {0}


def test_negative_controls_are_right_only_when_no_sentence_is_chosen(db):
    project = crowd_project(crowd={"control_rate": 0.5}, regular=0, controls=0)
    negative = citation_payload(1, id="neg-1", kind="control", gold_sentences=[])
    positive = citation_payload(2, id="pos-1", kind="control", gold_sentences=[3])
    import_jsonl(project, [negative, positive])
    items = {i.external_id: i for i in Item.objects.filter(project=project)}
    assert items["neg-1"].kind == "control" and items["neg-1"].gold["sentences"] == []
    from annotation import task_types

    task_type = task_types.get("citation_recovery")
    assert quality.is_correct(task_type, items["neg-1"], NONE) is True
    assert quality.is_correct(task_type, items["neg-1"], RIGHT) is False
    assert quality.is_correct(task_type, items["pos-1"], {**RIGHT, "sentences": [3]}) is True
    assert quality.is_correct(task_type, items["pos-1"], {**RIGHT, "sentences": [3, 1]}) is False


def test_a_researcher_can_reinstate_a_disqualified_annotator_whose_answers_were_kept(batch_project):
    careless = add_annotator(batch_project)
    work(batch_project, careless, control_answer=WRONG)
    member = membership(batch_project, careless)
    quality.qualification_decide(membership=member, decision="qualify")
    member.refresh_from_db()
    assert member.qualification == Membership.Qualification.QUALIFIED
    assert member.qualification_by_researcher
    # The researcher's decision stands: more wrong controls no longer stop them.
    more = work(batch_project, careless, control_answer=WRONG)
    assert more, "reinstated annotators get items again"
    assert membership(batch_project, careless).qualification == Membership.Qualification.QUALIFIED
    # Handing them back to the rules applies the rules at once.
    quality.qualification_decide(membership=member, decision="automatic")
    assert (
        membership(batch_project, careless).qualification == Membership.Qualification.DISQUALIFIED
    )


def test_disqualified_answers_are_flagged_in_the_export_and_left_out_of_the_majority(db):
    project = crowd_project(crowd={}, regular=1, controls=0, per_item=3)
    a, b, c = (add_annotator(project) for _ in range(3))
    for user, answer in ((a, RIGHT), (b, WRONG), (c, WRONG)):
        services.annotation_submit(
            assignment=services.assignment_next(project=project, annotator=user), answer=answer
        )
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert [r["majority"] for r in rows] == [[0], [0], [0]]
    assert [r["excluded"] for r in rows] == [False, False, False]
    quality.qualification_decide(membership=membership(project, b), decision="disqualify")
    quality.qualification_decide(membership=membership(project, c), decision="disqualify")
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert sorted(r["excluded"] for r in rows) == [False, True, True]
    assert {r["annotator_qualification"] for r in rows if r["excluded"]} == {"disqualified"}
    assert [r["majority"] for r in rows] == [[1], [1], [1]]  # only the counted answer remains


def qualification_project(**crowd):
    settings = {
        "batch_size": 2,
        "controls_per_batch": 1,
        "qualification_required": True,
        "qualification_size": 2,
        "qualification_pass_mark": 0.5,
        "qualification_min_seconds": 10,
        **crowd,
    }
    return crowd_project(crowd=settings, regular=4, controls=2, qualification=4)


def take_round(project, user, answers, *, clock, ms=6000):
    """Answer a round, each answer taking the ``ms`` it reports."""
    kinds = []
    for answer in answers:
        assignment = services.assignment_next(project=project, annotator=user)
        kinds.append(assignment.item.kind)
        clock.advance(milliseconds=ms)
        services.annotation_submit(assignment=assignment, answer=answer, time_spent_ms=ms)
    return kinds


def test_only_annotators_who_pass_the_qualification_round_reach_the_main_items(db, clock):
    project = qualification_project()
    user = add_annotator(project)
    assert take_round(project, user, [RIGHT, WRONG], clock=clock) == [
        "qualification",
        "qualification",
    ]
    member = membership(project, user)
    assert member.qualification == Membership.Qualification.QUALIFIED  # 50 % ≥ pass mark, 12 s ≥ 10
    following = services.assignment_next(project=project, annotator=user)
    assert following.item.kind in ("regular", "control") and following.batch.kind == "main"


def test_a_round_answered_too_fast_or_below_the_pass_mark_fails(db, clock):
    project = qualification_project()
    hasty, wrong = add_annotator(project), add_annotator(project)
    take_round(project, hasty, [RIGHT, RIGHT], ms=2000, clock=clock)  # 4 s for the set, 10 s needed
    take_round(project, wrong, [WRONG, WRONG], clock=clock)
    for user in (hasty, wrong):
        member = membership(project, user)
        assert member.qualification == Membership.Qualification.DISQUALIFIED
        assert member.qualification_reason == Membership.QualificationReason.QUALIFICATION_FAILED
        assert services.assignment_next(project=project, annotator=user) is None
        assert (
            selectors.annotator_stop(project=project, user=user)["reason"] == "qualification_failed"
        )


def test_a_second_pilot_round_uses_new_items_and_can_be_passed(db, clock):
    project = qualification_project(qualification_rounds=2)
    user = add_annotator(project)
    take_round(project, user, [WRONG, WRONG], clock=clock)
    assert membership(project, user).qualification == Membership.Qualification.PENDING
    first_items = set(Assignment.objects.filter(annotator=user).values_list("item_id", flat=True))
    second = services.assignment_next(project=project, annotator=user)
    assert second.batch.kind == "qualification" and second.batch.number == 2
    assert second.item_id not in first_items
    clock.advance(seconds=6)
    services.annotation_submit(assignment=second, answer=RIGHT, time_spent_ms=6000)
    take_round(project, user, [RIGHT], clock=clock)
    assert membership(project, user).qualification == Membership.Qualification.QUALIFIED
    rounds = quality_overview(project=project)["annotators"][0]["rounds"]
    assert [(r["number"], r["right"], r["total"]) for r in rounds] == [(1, 0, 2), (2, 2, 2)]


def test_without_a_qualification_round_open_the_annotator_is_told_to_wait(db):
    project = qualification_project()
    project.items.filter(kind="qualification").delete()
    user = add_annotator(project)
    assert services.assignment_next(project=project, annotator=user) is None
    assert selectors.annotator_stop(project=project, user=user)["reason"] == "qualification_pending"
    quality.qualification_decide(membership=membership(project, user), decision="qualify")
    assert services.assignment_next(project=project, annotator=user).batch.kind == "main"


def test_feedback_from_the_researcher_reaches_the_annotator(batch_project, client):
    user = add_annotator(batch_project)
    quality.feedback_set(
        membership=membership(batch_project, user),
        feedback="Read the <b>highlighted</b> passage first.",
    )
    client.force_login(user)
    page = client.get(f"/p/{batch_project.slug}/annotate/").content.decode()
    assert "Read the &lt;b&gt;highlighted&lt;/b&gt; passage first." in page
    work(batch_project, user, control_answer=WRONG)
    stop = client_for(user).post(f"/api/projects/{batch_project.slug}/next/").data["stop"]
    assert (
        stop["feedback"] == "Read the <b>highlighted</b> passage first."
    )  # the page sets textContent


def test_a_batch_holds_k_regular_items_and_the_controls_and_ends_with_a_completion_code(
    batch_project,
):
    user = add_annotator(batch_project)
    first = services.assignment_next(project=batch_project, annotator=user)
    batch = first.batch
    members = list(
        Assignment.objects.filter(batch=batch).select_related("item").order_by("sequence")
    )
    assert sorted(a.item.kind for a in members) == [
        "control",
        "control",
        "regular",
        "regular",
        "regular",
    ]
    assert len({a.expires_at for a in members}) == 1
    assert [a.sequence for a in members] == list(range(1, 6))
    for _ in members:
        assignment = services.assignment_next(project=batch_project, annotator=user)
        services.annotation_submit(assignment=assignment, answer=RIGHT)
    batch.refresh_from_db()
    assert batch.state == Batch.State.FINISHED and batch.finished_at is not None
    assert services.assignment_next(project=batch_project, annotator=user) is None
    stop = selectors.annotator_stop(project=batch_project, user=user)
    assert (stop["reason"], stop["code"], stop["can_start_another"]) == (
        "batch_complete",
        batch.code,
        True,
    )
    assert (
        services.assignment_next(
            project=batch_project, annotator=user, start_batch=True
        ).batch.number
        == 2
    )


def test_the_controls_sit_at_random_places_in_batches(db):
    project = crowd_project(
        crowd={"batch_size": 3, "controls_per_batch": 1}, regular=60, controls=20, per_item=20
    )
    places = set()
    for _ in range(12):
        user = add_annotator(project)
        first = services.assignment_next(project=project, annotator=user)
        kinds = list(
            Assignment.objects.filter(batch=first.batch)
            .order_by("sequence")
            .values_list("item__kind", flat=True)
        )
        places.add(kinds.index("control"))
    assert len(places) >= 2  # 12 batches never all put the control in the same place


def test_an_abandoned_batch_returns_its_items_to_the_pool(db):
    project = crowd_project(
        crowd={"batch_size": 3, "controls_per_batch": 1}, regular=3, controls=2, per_item=1
    )
    slow, fast = add_annotator(project), add_annotator(project)
    taken = services.assignment_next(project=project, annotator=slow)
    assert services.assignment_next(project=project, annotator=fast) is None  # all three are taken
    Assignment.objects.filter(batch=taken.batch).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    Batch.objects.filter(pk=taken.batch_id).update(expires_at=timezone.now() - timedelta(minutes=1))
    services.reservations_reclaim(project_id=project.id)
    taken.batch.refresh_from_db()
    assert taken.batch.state == Batch.State.ABANDONED
    assert set(Item.objects.filter(kind="regular").values_list("assigned_count", flat=True)) == {0}
    again = services.assignment_next(project=project, annotator=fast)
    assert Assignment.objects.filter(batch=again.batch, item__kind="regular").count() == 3


def test_fill_the_least_annotated_first_deals_items_with_fewer_annotators_before_others(db):
    project = crowd_project(
        crowd={"assignment_strategy": "least_annotated"}, regular=4, controls=0, per_item=3
    )
    first, second = add_annotator(project), add_annotator(project)
    for _ in range(2):  # the first annotator does items 1 and 2
        services.annotation_submit(
            assignment=services.assignment_next(project=project, annotator=first), answer=RIGHT
        )
    got = services.assignment_next(project=project, annotator=second)
    assert got.item.position == 3  # untouched items come first, in import order
    in_order = crowd_project(crowd={}, regular=4, controls=0, per_item=3)
    a, b = add_annotator(in_order), add_annotator(in_order)
    for _ in range(2):
        services.annotation_submit(
            assignment=services.assignment_next(project=in_order, annotator=a), answer=RIGHT
        )
    assert services.assignment_next(project=in_order, annotator=b).item.position == 1


def test_answers_under_the_minimum_time_are_counted_for_the_researcher(db, clock):
    project = crowd_project(crowd={"min_seconds_per_item": 5}, regular=3, controls=0)
    user = add_annotator(project)
    for ms in (1000, 7000, 2000):
        assignment = services.assignment_next(project=project, annotator=user)
        clock.advance(milliseconds=ms)
        services.annotation_submit(assignment=assignment, answer=RIGHT, time_spent_ms=ms)
    person = quality_overview(project=project)["annotators"][0]
    assert (person["answers"], person["fast_answers"], person["mean_seconds"]) == (3, 2, 3.3)


def test_bad_crowd_settings_are_refused_with_the_setting_named(db):
    from django.core.exceptions import ValidationError

    from projects.crowd import validate_crowd_settings

    for settings, name in (
        ({"controls_per_batch": 2}, "controls_per_batch"),
        ({"batch_size": 3, "control_rate": 0.2}, "control_rate"),
        ({"accuracy_threshold": 1.5}, "accuracy_threshold"),
        ({"batch_sise": 3}, "batch_sise"),
    ):
        try:
            validate_crowd_settings(settings)
        except ValidationError as exc:
            assert name in str(exc)
        else:
            raise AssertionError(f"{settings} was accepted")


def test_the_admin_reports_bad_crowd_settings_by_name(admin_client):
    response = admin_client.post(
        "/admin/projects/project/add/",
        {
            "slug": "crowd1",
            "name": "Crowd 1",
            "task_type": "citation_recovery",
            "crowd__batch_size": "4",
            "crowd__control_rate": "0.2",
            "guidelines": "",
            "annotators_per_item": 3,
            "status": "active",
            "memberships-TOTAL_FORMS": 0,
            "memberships-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 200
    assert (
        b"control_rate: With batches, use controls_per_batch instead of control_rate."
        in response.content
    )
    from projects.models import Project

    assert not Project.objects.filter(slug="crowd1").exists()
