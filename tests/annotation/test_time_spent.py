"""Active time is measured on the server: the client's figure is kept as reported, and the figure
that quality control, the "too fast" counts, payments and exports use is bounded by the time
between the assignment's reservation (or its reopening for a revision, or the annotator's previous
submit in the project) and the submit."""

import csv
import io
import json

from django.test import Client

from annotation import services
from annotation.models import Annotation, Assignment
from crowd.models import CrowdEntry
from crowd.selectors import quality_overview
from projects.models import Membership
from studies.services.exports import export_jsonl
from tests.conftest import client_for
from tests.crowd.conftest import RIGHT, add_annotator, crowd_project

HOUR_MS = 3_600_000


def submit(client, assignment_id, *, ms):
    response = client.post(
        f"/api/assignments/{assignment_id}/submit/",
        {"answer": RIGHT, "time_spent_ms": ms},
        format="json",
    )
    assert response.status_code in (200, 201), response.content
    return response


def test_four_items_in_087_seconds_claiming_an_hour_each_count_as_the_real_elapsed_time(db, clock):
    """The probe's case: a batch of four reserved at once, all submitted within 0.87 s, each
    claiming an hour. Each counts the time since the previous submit; 0.87 s in all."""
    project = crowd_project(
        crowd={"batch_size": 4, "controls_per_batch": 0, "min_seconds_per_item": 5},
        regular=4,
        controls=0,
    )
    worker = add_annotator(project)
    client = client_for(worker)
    for step_ms in (200, 250, 300, 120):
        assignment = client.post(f"/api/projects/{project.slug}/next/").json()
        clock.advance(milliseconds=step_ms)
        submit(client, assignment["id"], ms=HOUR_MS)

    annotations = Annotation.objects.filter(annotator=worker).order_by("created_at", "id")
    assert [a.reported_time_ms for a in annotations] == [HOUR_MS] * 4
    assert [a.time_spent_ms for a in annotations] == [200, 250, 300, 120]
    person = quality_overview(project=project)["annotators"][0]
    assert (person["answers"], person["fast_answers"]) == (4, 4)
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert sorted(r["time_spent_s"] for r in rows) == [0.1, 0.2, 0.2, 0.3]
    assert {r["reported_time_s"] for r in rows} == {3600.0}


def test_a_slow_honest_submit_keeps_the_clients_figure(db, clock):
    project = crowd_project(crowd={"min_seconds_per_item": 5}, regular=2, controls=0)
    user = add_annotator(project)
    client = client_for(user)
    assignment = client.post(f"/api/projects/{project.slug}/next/").json()
    clock.advance(minutes=10)  # the page was open ten minutes, four of them active
    submit(client, assignment["id"], ms=240_000)
    annotation = Annotation.objects.get(annotator=user)
    assert (annotation.time_spent_ms, annotation.reported_time_ms) == (240_000, 240_000)
    person = quality_overview(project=project)["annotators"][0]
    assert (person["fast_answers"], person["mean_seconds"]) == (0, 240)
    (row,) = [json.loads(line) for line in export_jsonl(project=project)]
    assert (row["time_spent_s"], row["reported_time_s"]) == (240.0, 240.0)


def test_a_revision_counts_from_its_reopening_not_from_the_reservation(db, clock):
    project = crowd_project(crowd={}, regular=2, controls=0)
    user = add_annotator(project)
    client = client_for(user)
    assignment = client.post(f"/api/projects/{project.slug}/next/").json()
    clock.advance(seconds=90)
    submit(client, assignment["id"], ms=60_000)
    clock.advance(hours=3)  # a break, then the annotator reopens the item to revise it
    assert client.get(f"/api/assignments/{assignment['id']}/").status_code == 200
    clock.advance(seconds=30)
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/",
        {"answer": {**RIGHT, "helpfulness": 10}, "time_spent_ms": HOUR_MS},
        format="json",
    )
    assert response.status_code == 201 and response.json()["version"] == 2
    first, second = Annotation.objects.filter(annotator=user).order_by("version")
    assert (first.time_spent_ms, first.reported_time_ms) == (60_000, 60_000)
    assert (second.time_spent_ms, second.reported_time_ms) == (30_000, HOUR_MS)


def test_a_qualification_round_claiming_minutes_in_a_second_fails_the_minimum_time(db, clock):
    project = crowd_project(
        crowd={
            "batch_size": 2,
            "controls_per_batch": 0,
            "qualification_required": True,
            "qualification_size": 2,
            "qualification_pass_mark": 0.5,
            "qualification_min_seconds": 10,
        },
        regular=2,
        controls=0,
        qualification=4,
    )
    hasty, honest = add_annotator(project), add_annotator(project)
    for user, step in ((hasty, {"milliseconds": 400}), (honest, {"seconds": 8})):
        for _ in range(2):
            assignment = services.assignment_next(project=project, annotator=user)
            clock.advance(**step)
            services.annotation_submit(assignment=assignment, answer=RIGHT, time_spent_ms=HOUR_MS)
    states = dict(
        Membership.objects.filter(role="annotator").values_list("user_id", "qualification")
    )
    assert states[hasty.id] != Membership.Qualification.QUALIFIED
    assert states[honest.id] == Membership.Qualification.QUALIFIED  # 16 s ≥ 10 s


def test_the_payments_csv_counts_the_server_measured_minutes(db, clock):
    project = crowd_project(
        crowd={
            "batch_size": 2,
            "controls_per_batch": 0,
        },
        regular=2,
        controls=0,
    )
    worker = add_annotator(project)
    entry = CrowdEntry.objects.create(
        project=project,
        user=worker,
        platform="prolific",
        worker_id="5f1a2b3c4d5e6f7a8b9c0d1e",
        study_id="STUDY42",
        session_id="sess0001",
    )
    for _ in range(2):
        assignment = services.assignment_next(
            project=project, annotator=worker, batch_ref=entry.batch_ref
        )
        clock.advance(seconds=3)
        services.annotation_submit(assignment=assignment, answer=RIGHT, time_spent_ms=HOUR_MS)
    assert Assignment.objects.filter(annotator=worker, state="submitted").count() == 2
    researcher = Client()
    researcher.force_login(project.researcher)
    body = researcher.get(f"/p/{project.slug}/quality/payments.csv").content.decode()
    (row,) = csv.DictReader(io.StringIO(body))
    assert float(row["active_minutes"]) == 0.1  # 6 s
    assert float(row["reported_minutes"]) == 120.0


def test_the_migration_keeps_reported_times_and_bounds_the_recorded_ones(transactional_db, request):
    """Answers stored before the server counted time: what the browser said moves to
    ``reported_time_ms``; ``time_spent_ms`` is bounded by the reservation or the previous submit."""
    from datetime import timedelta

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.utils import timezone

    before, after = (
        ("annotation", "0003_submitted_revision"),
        ("annotation", "0004_server_measured_time"),
    )

    def every_migration_again():
        # Later migrations (of any app) must be back for the rest of the session's tests.
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())

    request.addfinalizer(every_migration_again)
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    user = old.get_model("auth", "User").objects.create(username="migrated")
    project = old.get_model("projects", "Project").objects.create(slug="m", name="m", task_type="x")
    Item, Assignment = (
        old.get_model("annotation", "Item"),
        old.get_model("annotation", "Assignment"),
    )
    Annotation = old.get_model("annotation", "Annotation")
    start = timezone.now() - timedelta(days=1)
    stored = []
    # A batch of two reserved at once and submitted 2 s and 3 s later claiming an hour each,
    # then an honest revision of the first an hour later claiming 10 minutes.
    for n, (seconds, claimed) in enumerate(((2, HOUR_MS), (3, HOUR_MS))):
        item = Item.objects.create(project=project, external_id=f"i{n}", payload={}, prepared={})
        assignment = Assignment.objects.create(
            project=project, item=item, annotator=user, reserved_at=start, expires_at=start
        )
        stored.append((assignment, start + timedelta(seconds=seconds), claimed, 1))
    stored.append((stored[0][0], start + timedelta(hours=1), 600_000, 2))
    for assignment, created_at, claimed, version in stored:
        row = Annotation.objects.create(
            assignment=assignment,
            item_id=assignment.item_id,
            annotator=user,
            answer={},
            version=version,
            is_current=version == 2 or assignment != stored[0][0],
            time_spent_ms=claimed,
        )
        Annotation.objects.filter(pk=row.pk).update(created_at=created_at)

    executor = MigrationExecutor(connection)
    executor.migrate([after])
    rows = list(Annotation.objects.order_by("created_at").values_list("time_spent_ms", flat=True))
    assert rows == [2000, 1000, 600_000]
    from annotation.models import Annotation as Current

    assert list(
        Current.objects.order_by("created_at").values_list("reported_time_ms", flat=True)
    ) == [
        HOUR_MS,
        HOUR_MS,
        600_000,
    ]
