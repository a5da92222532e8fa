"""A per-annotator quota outside crowd batches (issue 26, onboarding at scale): the project's
``max_items_per_annotator`` caps the regular items one annotator is given; the annotator is told
why there is nothing more; others go on; expired reservations and controls do not count."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from annotation import services
from annotation.models import Assignment, Item
from projects.crowd import parse_crowd_settings
from tests import factories
from tests.annotation.test_workflow import add_annotators
from tests.conftest import client_for

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def test_an_annotator_gets_at_most_their_quota_and_is_told_why(project, items):
    project.crowd = {"max_items_per_annotator": 2}
    project.save()
    first, second = add_annotators(project, 2)
    for _ in range(2):
        assignment = services.assignment_next(project=project, annotator=first)
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert services.assignment_next(project=project, annotator=first) is None
    stop = client_for(first).post(f"/api/projects/{project.slug}/next/")
    assert stop.status_code == 200 and stop.data["stop"]["reason"] == "quota_reached"
    assert "as many items as this study asks" in stop.data["stop"]["message"]
    assert services.assignment_next(project=project, annotator=second) is not None


def test_a_held_reservation_counts_and_an_expired_one_does_not(project, items):
    project.crowd = {"max_items_per_annotator": 1}
    project.save()
    (person,) = add_annotators(project, 1)
    held = services.assignment_next(project=project, annotator=person)
    assert services.assignment_next(project=project, annotator=person).pk == held.pk
    Assignment.objects.filter(pk=held.pk).update(
        state=Assignment.State.EXPIRED, expires_at=timezone.now() - timedelta(minutes=1)
    )
    again = services.assignment_next(project=project, annotator=person)
    assert again is not None and again.pk != held.pk
    services.annotation_submit(assignment=again, answer=ANSWER)
    assert services.assignment_next(project=project, annotator=person) is None


def test_controls_do_not_count_toward_the_quota(project, items):
    project.crowd = {"max_items_per_annotator": 1, "control_rate": 0.99}
    project.save()
    factories.make_items(project, 1, kind=Item.Kind.CONTROL, start=100)
    (person,) = add_annotators(project, 1)
    kinds = []
    while (assignment := services.assignment_next(project=project, annotator=person)) is not None:
        kinds.append(assignment.item.kind)
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert kinds.count(Item.Kind.REGULAR) == 1 and Item.Kind.CONTROL in kinds


def test_the_quota_is_refused_beside_batches():
    with pytest.raises(serializers.ValidationError, match="leave this empty"):
        parse_crowd_settings({"max_items_per_annotator": 5, "batch_size": 10})
    assert parse_crowd_settings({"max_items_per_annotator": 5}).max_items_per_annotator == 5
    assert parse_crowd_settings({}).max_items_per_annotator is None
