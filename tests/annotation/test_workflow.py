"""The annotator workflow: next item, N annotators per item, drafts, submits and revisions."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import services
from annotation.models import Annotation, Assignment, Draft, Item
from tests import factories

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def add_annotators(project, count):
    users = []
    for _ in range(count):
        user = factories.UserFactory()
        factories.MembershipFactory(project=project, user=user, role="annotator")
        users.append(user)
    return users


def test_next_item_returns_the_open_reservation_until_it_is_submitted(project, annotator, items):
    first = services.assignment_next(project=project, annotator=annotator)
    again = services.assignment_next(project=project, annotator=annotator)
    assert first.pk == again.pk
    services.annotation_submit(assignment=first, answer=ANSWER)
    following = services.assignment_next(project=project, annotator=annotator)
    assert following.item_id != first.item_id
    assert following.sequence == 2


def test_each_item_gets_exactly_n_distinct_annotators(project, items):
    project.annotators_per_item = 2
    project.save()
    annotators = add_annotators(project, 5)
    seen = {}
    for _round in range(len(items) + 1):
        for annotator in annotators:
            assignment = services.assignment_next(project=project, annotator=annotator)
            if assignment is None:
                continue
            seen.setdefault(assignment.item_id, []).append(annotator.id)
            services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert sorted(seen) == sorted(i.id for i in items)
    for people in seen.values():
        assert len(people) == 2
        assert len(set(people)) == 2
    assert all(services.assignment_next(project=project, annotator=a) is None for a in annotators)


def test_nobody_sees_an_item_twice(project, annotator, items):
    received = []
    while (
        assignment := services.assignment_next(project=project, annotator=annotator)
    ) is not None:
        received.append(assignment.item_id)
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert sorted(received) == sorted(i.id for i in items)


def test_control_and_qualification_items_are_not_dealt_as_regular_work(project, annotator):
    factories.make_items(project, 2, kind="control")
    assert services.assignment_next(project=project, annotator=annotator) is None


def test_expired_reservations_are_reclaimed_for_other_annotators(project, items):
    project.annotators_per_item = 1
    project.save()
    slow, fast = add_annotators(project, 2)
    taken = services.assignment_next(project=project, annotator=slow)
    Assignment.objects.filter(pk=taken.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    got = []
    while (assignment := services.assignment_next(project=project, annotator=fast)) is not None:
        got.append(assignment.item_id)
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert taken.item_id in got
    taken.refresh_from_db()
    assert taken.state == Assignment.State.EXPIRED
    assert Item.objects.get(pk=taken.item_id).assigned_count == 1


def test_late_submit_on_an_expired_reservation_is_refused_when_the_item_is_full(project, items):
    project.annotators_per_item = 1
    project.save()
    slow, fast = add_annotators(project, 2)
    taken = services.assignment_next(project=project, annotator=slow)
    services.draft_save(assignment=taken, answer={"sentences": [0]}, time_spent_ms=500, revision=1)
    Assignment.objects.filter(pk=taken.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    while (assignment := services.assignment_next(project=project, annotator=fast)) is not None:
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    taken.refresh_from_db()
    with pytest.raises(services.WorkflowError, match="expired"):
        services.annotation_submit(assignment=taken, answer=ANSWER)
    assert Draft.objects.get(assignment=taken).answer == {"sentences": [0]}


def test_late_submit_on_an_expired_reservation_is_accepted_while_the_item_has_room(project, items):
    slow = add_annotators(project, 1)[0]
    taken = services.assignment_next(project=project, annotator=slow)
    Assignment.objects.filter(pk=taken.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    services.reservations_reclaim(project_id=project.id)
    taken.refresh_from_db()
    annotation, created = services.annotation_submit(assignment=taken, answer=ANSWER)
    assert created
    assert Item.objects.get(pk=taken.item_id).assigned_count == 1


def test_double_submission_of_the_same_answer_stores_one_annotation(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    key = uuid.uuid4()
    first, created_first = services.annotation_submit(
        assignment=assignment, answer=ANSWER, submission_id=key
    )
    second, created_second = services.annotation_submit(
        assignment=assignment, answer=ANSWER, submission_id=key
    )
    third, created_third = services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert (created_first, created_second, created_third) == (True, False, False)
    assert first.pk == second.pk == third.pk
    assert Annotation.objects.filter(assignment=assignment).count() == 1


def test_a_revision_keeps_the_earlier_version(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    revised, created = services.annotation_submit(
        assignment=assignment, answer={"sentences": [], "none": True, "helpfulness": 20}
    )
    assert created and revised.version == 2
    versions = list(Annotation.objects.filter(assignment=assignment).order_by("version"))
    assert [v.answer["none"] for v in versions] == [False, True]
    assert [v.is_current for v in versions] == [False, True]


def test_an_invalid_answer_is_refused_with_the_field_named(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    with pytest.raises(services.AnswerInvalid) as caught:
        services.annotation_submit(
            assignment=assignment, answer={"sentences": [99], "helpfulness": 5}
        )
    assert "sentences" in caught.value.errors
    with pytest.raises(services.AnswerInvalid) as caught:
        services.annotation_submit(assignment=assignment, answer={"sentences": [0]})
    assert "helpfulness" in caught.value.errors
    assert not Annotation.objects.exists()


def test_an_older_autosave_never_overwrites_a_newer_draft(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.draft_save(
        assignment=assignment, answer={"sentences": [0, 1]}, time_spent_ms=900, revision=5
    )
    services.draft_save(
        assignment=assignment, answer={"sentences": [0]}, time_spent_ms=400, revision=3
    )
    draft = Draft.objects.get(assignment=assignment)
    assert draft.answer == {"sentences": [0, 1]} and draft.revision == 5


def test_submitting_clears_the_draft_and_records_time(project, annotator, items, clock):
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.draft_save(
        assignment=assignment, answer={"sentences": [1]}, time_spent_ms=900, revision=1
    )
    clock.advance(seconds=20)
    annotation, _ = services.annotation_submit(
        assignment=assignment, answer=ANSWER, time_spent_ms=12_345
    )
    assert annotation.time_spent_ms == annotation.reported_time_ms == 12_345
    assert not Draft.objects.filter(assignment=assignment).exists()


@pytest.mark.parametrize("count", [10, 10_000])
def test_next_item_and_submit_run_a_constant_number_of_queries(
    project, annotator, count, django_assert_max_num_queries
):
    factories.make_items(project, count)
    other = add_annotators(project, 1)[0]
    # Some history first, so the queries run against a project in use.
    for _ in range(3):
        done = services.assignment_next(project=project, annotator=other)
        services.annotation_submit(assignment=done, answer=ANSWER)
    # 12 with the annotator's own lock and re-check (two tabs must not open two reservations).
    with django_assert_max_num_queries(12):
        assignment = services.assignment_next(project=project, annotator=annotator)
    with django_assert_max_num_queries(10):
        services.annotation_submit(assignment=assignment, answer=ANSWER)


@pytest.mark.parametrize("count", [10, 10_000])
def test_next_item_api_runs_a_constant_number_of_queries(
    project, annotator_client, count, django_assert_max_num_queries
):
    factories.make_items(project, count)
    # 19: permission (2), the membership's qualification state (1), an answer sent back to them
    # (1), reservation with the annotator's own lock and re-check (10), page data (5: with the
    # researchers' answers to the annotator's flags on the item).
    with django_assert_max_num_queries(19):
        response = annotator_client.post(f"/api/projects/{project.slug}/next/")
    assert response.status_code == 200
    with django_assert_max_num_queries(12):
        response = annotator_client.post(
            f"/api/assignments/{response.data['id']}/submit/", {"answer": ANSWER}, format="json"
        )
    assert response.status_code == 201


@pytest.mark.parametrize("count", [10, 10_000])
def test_batches_with_controls_run_a_constant_number_of_queries(
    project, annotator_client, annotator, count, django_assert_max_num_queries
):
    project.crowd = {"batch_size": 3, "controls_per_batch": 2, "min_controls": 2}
    project.save()
    factories.make_items(project, count)
    factories.make_items(project, count, kind="control", start=count)
    other = add_annotators(project, 1)[0]
    done = services.assignment_next(project=project, annotator=other)
    services.annotation_submit(assignment=done, answer=ANSWER)
    # Starting a batch reserves all of it at once (24 queries with the look for an answer sent
    # back, once per batch, and for answers to flags); later items come from two queries.
    with django_assert_max_num_queries(24):
        response = annotator_client.post(f"/api/projects/{project.slug}/next/")
    assert response.status_code == 200 and response.data["batch"]["size"] == 5
    for _ in range(5):
        with django_assert_max_num_queries(9):  # with the answers to the annotator's flags
            response = annotator_client.post(f"/api/projects/{project.slug}/next/")
        # Submits of controls and regular items alike: scoring, accuracy check, batch bookkeeping.
        with django_assert_max_num_queries(17):
            submitted = annotator_client.post(
                f"/api/assignments/{response.data['id']}/submit/", {"answer": ANSWER}, format="json"
            )
        assert submitted.status_code == 201
    with django_assert_max_num_queries(15):  # with the look for an answer sent back
        stop = annotator_client.post(f"/api/projects/{project.slug}/next/")
    assert stop.data["stop"]["reason"] == "batch_complete"


def test_paused_archived_and_draft_projects_hand_out_no_new_items(
    project, annotator, items, annotator_client
):
    for status in ("paused", "archived", "draft"):
        project.status = status
        project.save()
        assert services.assignment_next(project=project, annotator=annotator) is None
        response = annotator_client.post(f"/api/projects/{project.slug}/next/")
        assert response.status_code == 200 and response.data["stop"]["reason"] == "project_closed"


def test_an_open_reservation_can_still_be_finished_after_a_pause(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    project.status = "paused"
    project.save()
    assert services.assignment_next(project=project, annotator=annotator).pk == assignment.pk
    services.annotation_submit(assignment=assignment, answer=ANSWER)


def test_removed_or_disqualified_annotators_cannot_change_their_work(
    project, annotator, items, annotator_client
):
    from projects.models import Membership

    assignment = services.assignment_next(project=project, annotator=annotator)
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    membership = Membership.objects.get(project=project, user=annotator)
    membership.qualification = "disqualified"
    membership.save()
    revised = {"answer": {"sentences": [0], "helpfulness": 1}}
    response = annotator_client.post(
        f"/api/assignments/{assignment.id}/submit/", revised, format="json"
    )
    assert response.status_code == 403
    membership.delete()
    assert annotator_client.get(f"/api/assignments/{assignment.id}/").status_code == 404
    response = annotator_client.put(
        f"/api/assignments/{assignment.id}/draft/", {"answer": {}, "revision": 99}, format="json"
    )
    assert response.status_code == 403
    assert Annotation.objects.filter(assignment=assignment).count() == 1


def test_an_autosave_in_flight_during_the_submit_does_not_come_back_over_the_answer(
    project, annotator, items
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.draft_save(
        assignment=assignment, answer={"sentences": [0]}, time_spent_ms=10, revision=4
    )
    services.annotation_submit(assignment=assignment, answer=ANSWER, revision=5)
    late = services.draft_save(
        assignment=assignment, answer={"sentences": [0]}, time_spent_ms=10, revision=5
    )
    assert late is None and not Draft.objects.filter(assignment=assignment).exists()
    newer = services.draft_save(
        assignment=assignment, answer={"sentences": [2]}, time_spent_ms=10, revision=6
    )
    assert newer is not None and newer.revision == 6  # a real revision after the submit is kept


def _submit(client, assignment, answer, submission_id):
    return client.post(
        f"/api/assignments/{assignment.pk}/submit/",
        {"answer": answer, "time_spent_ms": 1000, "submission_id": str(submission_id)},
        format="json",
    )


def test_retrying_a_submit_that_another_tab_replaced_returns_the_current_version(
    project, annotator, annotator_client, items
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    first_id, other_tab_id = uuid.uuid4(), uuid.uuid4()
    assert _submit(annotator_client, assignment, ANSWER, first_id).status_code == 201
    revised = {"sentences": [], "none": True, "helpfulness": 20}
    assert _submit(annotator_client, assignment, revised, other_tab_id).status_code == 201
    # The first tab never saw its response and sends the same request again.
    retry = _submit(annotator_client, assignment, ANSWER, first_id)
    assert retry.status_code == 200, retry.content
    assert retry.json()["version"] == 2 and retry.json()["answer"]["none"] is True
    assert Annotation.objects.filter(assignment=assignment).count() == 2


def test_a_resubmit_after_an_error_with_a_new_submission_id_and_the_same_answer_stores_nothing(
    project, annotator, annotator_client, items
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    first = _submit(annotator_client, assignment, ANSWER, uuid.uuid4())
    assert first.status_code == 201
    # The client saw an error instead of the response; Submit again makes a new submission id.
    again = _submit(annotator_client, assignment, dict(reversed(ANSWER.items())), uuid.uuid4())
    assert again.status_code == 200, again.content
    assert again.json()["version"] == 1 == first.json()["version"]
    assert again.json()["annotation"] == first.json()["annotation"]
    assert Annotation.objects.filter(assignment=assignment).count() == 1


@pytest.mark.parametrize("change", ["demoted", "disqualified"])
def test_a_retried_submit_that_landed_before_the_annotator_lost_the_right_to_write_says_stored(
    project, annotator, annotator_client, items, change
):
    # Found by an outside probe: the annotator submitted, the response was lost, they were made
    # a reviewer (or disqualified), and the retry got a 403, as if the answer had not been kept.
    from projects.models import Membership

    assignment = services.assignment_next(project=project, annotator=annotator)
    key = uuid.uuid4()
    assert _submit(annotator_client, assignment, ANSWER, key).status_code == 201
    member = Membership.objects.filter(project=project, user=annotator)
    if change == "demoted":
        member.update(role="reviewer")
    else:
        member.update(qualification="disqualified")
    retry = _submit(annotator_client, assignment, ANSWER, key)
    assert retry.status_code == 200, retry.content
    assert retry.json()["version"] == 1 and retry.json()["answer"] == ANSWER
    # Anything new is still refused: a changed answer, or the same one under a new id.
    changed = {"sentences": [], "none": True, "helpfulness": 20}
    assert _submit(annotator_client, assignment, changed, key).status_code == 403
    assert _submit(annotator_client, assignment, changed, uuid.uuid4()).status_code == 403
    assert Annotation.objects.filter(assignment=assignment).count() == 1
