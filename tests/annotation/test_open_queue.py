"""The open queue and the maintained counters (issue 16).

``Item.is_full`` and the project counters are kept by database triggers; these tests check them
against a fresh count after every kind of write (reservations, submits, expiry, N changed, kinds
changed, deletes, concurrent submits), that the free-item lookup reads the partial index and keeps
the queue order, that a next or an assignment read never counts the project's items, and that
bulk imports refresh the planner's statistics."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import selectors, services
from annotation.models import (
    Annotation,
    AnnotatorAnswerCounts,
    Assignment,
    Item,
    ProjectAnswerCounts,
    ProjectItemCounts,
)
from annotation.quality import expire_open_work
from projects.crowd import crowd_settings
from projects.models import Project
from tests import factories
from tests.annotation.test_concurrency import at_once
from tests.conftest import client_for, require

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def add_annotators(project, count):
    users = [factories.UserFactory() for _ in range(count)]
    for user in users:
        factories.MembershipFactory(project=project, user=user, role="annotator")
    return users


def fresh(project) -> dict:
    """What the triggers must have kept, counted from the rows now."""
    project.refresh_from_db()
    items = Item.objects.filter(project=project).aggregate(
        items=Count("id"), regular=Count("id", filter=Q(kind="regular"))
    )
    submitted = Assignment.objects.filter(project=project, state="submitted")
    per_item = dict(submitted.values("item_id").annotate(n=Count("id")).values_list("item_id", "n"))
    regular = Item.objects.filter(project=project, kind="regular").values_list("id", flat=True)
    return {
        "items": items["items"],
        "regular_items": items["regular"],
        "submitted": submitted.count(),
        "complete_items": sum(
            1 for pk in regular if per_item.get(pk, 0) >= project.annotators_per_item
        ),
        "annotations": Annotation.objects.filter(item__project=project).count(),
        "full": sorted(
            Item.objects.filter(
                project=project, kind="regular", assigned_count__gte=project.annotators_per_item
            ).values_list("id", flat=True)
        ),
        "item_submitted": {pk: n for pk, n in per_item.items() if n},
        "annotator_submitted": dict(
            submitted.values("annotator_id")
            .annotate(n=Count("id"))
            .values_list("annotator_id", "n")
        ),
    }


def kept(project) -> dict:
    """What the triggers kept (the revision numbers apart: :func:`revisions`)."""
    counts = selectors.project_counts(project=project)
    return {
        **{k: v for k, v in counts.items() if not k.endswith("_revision")},
        "full": sorted(
            Item.objects.filter(is_full=True, project=project).values_list("id", flat=True)
        ),
        "item_submitted": dict(
            Item.objects.filter(project=project, submitted_count__gt=0).values_list(
                "id", "submitted_count"
            )
        ),
        "annotator_submitted": dict(
            AnnotatorAnswerCounts.objects.filter(project=project)
            .exclude(submitted=0)
            .values_list("annotator_id", "submitted")
        ),
    }


def revisions(project) -> tuple[int, int]:
    counts = selectors.project_counts(project=project)
    return counts["items_revision"], counts["annotations_revision"]


def test_is_full_and_counters_follow_reservations_submits_expiry_and_n(project, clock):
    factories.make_items(project, 4)
    factories.make_items(project, 2, kind="control", start=100)
    annotators = add_annotators(project, 3)
    assert (
        kept(project)
        == fresh(project)
        == {
            "items": 6,
            "regular_items": 4,
            "submitted": 0,
            "complete_items": 0,
            "annotations": 0,
            "full": [],
            "item_submitted": {},
            "annotator_submitted": {},
        }
    )
    first = services.assignment_next(project=project, annotator=annotators[0])
    second = services.assignment_next(project=project, annotator=annotators[1])
    assert first.item_id == second.item_id  # N = 2: the first item takes both
    assert Item.objects.get(pk=first.item_id).is_full
    services.annotation_submit(assignment=first, answer=ANSWER)
    assert kept(project) == fresh(project)
    assert kept(project)["submitted"] == 1

    # The second reservation expires: its place goes back, the item reopens.
    clock.advance(days=2)
    services.reservations_reclaim(project_id=project.id)
    assert not Item.objects.get(pk=first.item_id).is_full
    assert kept(project) == fresh(project)

    # A late submit on the expired reservation takes the place again.
    services.annotation_submit(assignment=second, answer=ANSWER)
    assert Item.objects.get(pk=first.item_id).is_full
    assert kept(project) == fresh(project) and kept(project)["submitted"] == 2

    # N raised (a project save, as the admin and study files do): the item has room again.
    project.annotators_per_item = 3
    project.save()
    assert not Item.objects.get(pk=first.item_id).is_full
    third = services.assignment_next(project=project, annotator=annotators[2])
    assert third.item_id == first.item_id  # queue order: the first item, which has room again
    # N lowered through a bulk update (no save signal): still kept.
    Project.objects.filter(pk=project.pk).update(annotators_per_item=1)
    assert kept(project) == fresh(project)
    assert len(kept(project)["full"]) == 1


def test_controls_never_fill_and_kind_changes_and_deletes_are_counted(project):
    regular = factories.make_items(project, 3)
    controls = factories.make_items(project, 2, kind="control", start=100)
    Item.objects.filter(pk=controls[0].pk).update(assigned_count=5)
    assert not Item.objects.get(pk=controls[0].pk).is_full
    Item.objects.filter(pk=regular[0].pk).update(kind="control")
    Item.objects.filter(pk=controls[1].pk).update(kind="regular", assigned_count=2)
    assert Item.objects.get(pk=controls[1].pk).is_full
    assert kept(project) == fresh(project)
    assert kept(project)["regular_items"] == 3
    Item.objects.filter(pk__in=[regular[1].pk, controls[1].pk]).delete()
    assert kept(project) == fresh(project)
    assert kept(project)["items"] == 3


def test_queue_order_is_kept_for_both_strategies(project):
    items = factories.make_items(project, 6)
    Item.objects.filter(pk=items[0].pk).update(assigned_count=2)  # full (N = 2)
    Item.objects.filter(pk=items[1].pk).update(assigned_count=1)
    crowd = crowd_settings(project)
    (annotator,) = add_annotators(project, 1)
    first = list(
        services._free_items(project, annotator, crowd, seed=0)[0].values_list("id", flat=True)
    )
    assert first == [i.pk for i in items[1:]]

    project.crowd = {**(project.crowd or {}), "assignment_strategy": "least_annotated"}
    project.save()
    project._crowd_settings = None  # parsed once per instance
    least = crowd_settings(project)
    assert least.assignment_strategy == "least_annotated"
    order = list(
        services._free_items(project, annotator, least, seed=0)[0].values_list("id", flat=True)
    )
    assert order == [i.pk for i in items[2:]] + [items[1].pk]


def test_the_free_item_lookup_and_nothing_left_read_only_the_open_queue(postgres, project):
    """At 95 % full, the planner reads the partial index (it holds only items with room) for the
    next item and for "nothing left"; never a scan over the project's items."""
    factories.make_items(project, 2000)
    filled = Item.objects.filter(project=project).order_by("position")[:1900]
    Item.objects.filter(pk__in=[i.pk for i in filled]).update(assigned_count=2)
    assert Item.objects.filter(project=project, is_full=True).count() == 1900
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item")
        cursor.execute("ANALYZE annotation_assignment")
    (annotator,) = add_annotators(project, 1)
    for strategy, index in (
        ("in_order", "item_open_queue_idx"),
        ("least_annotated", "item_open_least_idx"),
        ("random", "item_open_shuffle_idx"),
    ):
        project.crowd = {"assignment_strategy": strategy}
        project.save()
        project._crowd_settings = None  # parsed once per instance
        # Both directions of the random walk, and both parts of it (before and after the wrap).
        for seed in (2**30, 2**31 + 2**30):
            for free in services._free_items(
                project, annotator, crowd_settings(project), seed=seed
            ):
                plan = free[:1].explain()
                assert index in plan, plan
                assert "Seq Scan on annotation_item" not in plan, plan
    # "Nothing left" when every item is full: an empty range of the same index.
    Item.objects.filter(project=project).update(assigned_count=2)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item")
    plan = services._open_items(project, annotator).explain()
    assert "Seq Scan on annotation_item" not in plan, plan
    assert services.assignment_next(project=project, annotator=annotator) is None


def test_next_and_assignment_read_never_count_the_project_items(project, annotator):
    factories.make_items(project, 30)
    client = client_for(annotator)
    with CaptureQueriesContext(connection) as queries:
        response = client.post(f"/api/projects/{project.slug}/next/")
        assert response.status_code == 200
        assert response.data["counts"] == {"submitted": 0, "total": 1, "items": 30}
        again = client.get(f"/api/assignments/{response.data['id']}/")
        assert again.data["counts"]["items"] == 30
    counting_items = [
        q["sql"]
        for q in queries.captured_queries
        if "COUNT(" in q["sql"].upper() and 'FROM "annotation_item"' in q["sql"]
    ]
    assert counting_items == []


def test_progress_reads_the_counters(project, researcher):
    factories.make_items(project, 5)
    factories.make_items(project, 1, kind="control", start=50)
    (annotator,) = add_annotators(project, 1)
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    progress = selectors.project_progress(project=project)
    assert progress["items"] == 6 and progress["regular_items"] == 5
    assert progress["answers_submitted"] == 1 and progress["answers_needed"] == 10


def test_counters_equal_a_fresh_count_after_concurrent_submits(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(annotators_per_item=3)
    factories.make_items(project, 10)
    annotators = add_annotators(project, 12)

    def work(user):
        while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
            services.annotation_submit(assignment=assignment, answer=ANSWER)
            # A retry of the same submit changes nothing (idempotent), counters included.
            services.annotation_submit(assignment=assignment, answer=ANSWER)

    assert not at_once(work, annotators, timeout=120)
    assert kept(project) == fresh(project)
    assert kept(project)["submitted"] == 30
    assert len(kept(project)["full"]) == 10
    # The rebuild agrees with what the triggers kept, and repairs a counter that was damaged.
    ProjectAnswerCounts.objects.filter(project=project).update(
        submitted=7, complete_items=0, annotations=1
    )
    ProjectItemCounts.objects.filter(project=project).update(items=0)
    AnnotatorAnswerCounts.objects.filter(project=project).update(submitted=99)
    AnnotatorAnswerCounts.objects.filter(project=project, annotator=annotators[0]).delete()
    with connection.cursor() as cursor:  # past the triggers, as a restore would
        cursor.execute("ALTER TABLE annotation_item DISABLE TRIGGER USER")
        cursor.execute("UPDATE annotation_item SET submitted_count = 0")
        cursor.execute("ALTER TABLE annotation_item ENABLE TRIGGER USER")
    damaged = revisions(project)
    Item.objects.filter(project=project).update(is_full=False)  # the trigger recomputes it
    assert len(kept(project)["full"]) == 10
    out = io.StringIO()
    call_command("recount", project=[project.slug], stdout=out)
    assert "submitted 7 → 30" in out.getvalue() and "items 0 → 10" in out.getvalue()
    assert "complete_items 0 → 10" in out.getvalue() and "revision" not in out.getvalue()
    assert kept(project) == fresh(project)
    assert all(now > then for now, then in zip(revisions(project), damaged, strict=True))


def test_recount_names_an_unknown_project(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="nope"):
        call_command("recount", project=["nope"])


def test_bulk_imports_refresh_the_planner_statistics(postgres, project):
    from studies.services.imports import import_items

    def lines(start, count):
        rows = [json.dumps(factories.citation_payload(n)) for n in range(start, start + count)]
        return io.BytesIO("\n".join(rows).encode())

    def analyzed(queries) -> list[str]:
        return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("ANALYZE")]

    with CaptureQueriesContext(connection) as small:
        import_items(project=project, stream=lines(0, 999), fmt="jsonl")
    assert analyzed(small) == []  # small imports leave it to the database
    with CaptureQueriesContext(connection) as bulk:
        import_items(project=project, stream=lines(1000, 1000), fmt="jsonl")
    tables = [sql.split()[1] for sql in analyzed(bulk)]
    assert tables == ['"annotation_item"']  # an import writes items only
    # The columns the queue and the reports filter on, not the JSON ones.
    assert '"is_full"' in analyzed(bulk)[0] and '"payload"' not in analyzed(bulk)[0]
    with connection.cursor() as cursor:  # it ran: the planner now knows the table's size
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'annotation_item'")
        assert cursor.fetchone()[0] >= 1999
    assert selectors.project_counts(project=project)["items"] == 1999


def test_statistics_refresh_is_postgresql_only_and_from_a_threshold(db):
    assert not services.statistics_refresh(rows=999)
    assert services.statistics_refresh(rows=1000) == (connection.vendor == "postgresql")


def test_expired_reservations_give_the_place_back_in_the_open_queue(project, clock):
    (item,) = factories.make_items(project, 1)
    a, b, c = add_annotators(project, 3)
    services.assignment_next(project=project, annotator=a)
    services.assignment_next(project=project, annotator=b)
    assert services.assignment_next(project=project, annotator=c) is None  # full: nothing left
    Assignment.objects.filter(annotator=a).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = services.assignment_next(project=project, annotator=c)
    assert taken is not None and taken.item_id == item.pk


def test_dashboard_counters_follow_revisions_bulk_writes_deletes_and_n(project, clock):
    """Complete items, answer versions, each annotator's and each item's submitted count, and
    the revision numbers the reports' data version reads (issue 16: the dashboard counts
    nothing)."""
    items = factories.make_items(project, 3)
    factories.make_items(project, 1, kind="control", start=100)
    a, b = add_annotators(project, 2)
    start = revisions(project)
    first = services.assignment_next(project=project, annotator=a)
    second = services.assignment_next(project=project, annotator=b)
    # Reservations change neither revision: a report does not depend on them.
    assert revisions(project) == start
    services.annotation_submit(assignment=first, answer=ANSWER)
    after_submit = revisions(project)
    assert after_submit[1] > start[1] and after_submit[0] == start[0]
    services.annotation_submit(assignment=second, answer=ANSWER)
    assert kept(project) == fresh(project)
    assert kept(project)["complete_items"] == 1  # N = 2: the first item has both answers
    # A revision adds a version and moves the answers' revision.
    before = revisions(project)
    services.annotation_submit(assignment=first, answer={**ANSWER, "helpfulness": 10})
    assert kept(project) == fresh(project) and kept(project)["annotations"] == 3
    assert revisions(project)[1] > before[1]
    # Expiry of a reservation moves nothing a report reads.
    third = services.assignment_next(project=project, annotator=a)
    before = revisions(project)
    clock.advance(days=2)
    services.reservations_reclaim(project_id=project.id)
    assert revisions(project) == before and kept(project) == fresh(project)
    # A re-imported item (a save) moves the items' revision; N lowered completes more items.
    item = Item.objects.get(pk=items[1].pk)
    item.payload = {**item.payload, "note": "re-imported"}
    item.save()
    assert revisions(project)[0] > before[0]
    # Bulk writes (a bundle or a replay writes submitted assignments and answers in bulk).
    c = add_annotators(project, 1)[0]
    bulk = Assignment.objects.bulk_create(
        Assignment(
            project=project,
            item=i,
            annotator=c,
            state="submitted",
            reserved_at=timezone.now(),
            expires_at=timezone.now(),
            submitted_at=timezone.now(),
        )
        for i in items
    )
    Annotation.objects.bulk_create(
        Annotation(assignment=x, item_id=x.item_id, annotator=c, answer=ANSWER) for x in bulk
    )
    assert kept(project) == fresh(project)
    assert kept(project)["annotator_submitted"][c.pk] == 3
    Project.objects.filter(pk=project.pk).update(annotators_per_item=1)
    assert kept(project) == fresh(project) and kept(project)["complete_items"] == 3
    # Kinds changed and items deleted with their answers.
    Item.objects.filter(pk=items[0].pk).update(kind="control")
    assert kept(project) == fresh(project) and kept(project)["complete_items"] == 2
    before = revisions(project)
    Item.objects.filter(pk=items[2].pk).delete()
    assert kept(project) == fresh(project)
    assert revisions(project)[0] > before[0] and revisions(project)[1] > before[1]
    assert third.state == "reserved"


def test_progress_and_the_report_version_never_count_answers_or_items(project, researcher):
    from agreement.reports.gather import data_version

    factories.make_items(project, 6)
    annotators = add_annotators(project, 3)
    for user in annotators:
        while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
            services.annotation_submit(assignment=assignment, answer=ANSWER)
    with CaptureQueriesContext(connection) as queries:
        progress = selectors.project_progress(project=project)
        version = data_version(project)
    assert progress["complete_items"] == 6 and progress["versions"] == 12
    # N = 2: the first two annotators answer every item, the third finds nothing left.
    assert sorted(row["submitted"] for row in progress["annotators"]) == [0, 6, 6]
    assert version["annotations"][0] == 12 and version["items"][0] == 6
    counted = [
        q["sql"]
        for q in queries.captured_queries
        if "COUNT(" in q["sql"].upper()
        and ('FROM "annotation_annotation"' in q["sql"] or 'FROM "annotation_item"' in q["sql"])
    ]
    assert counted == []
    # A fixed number of queries whatever the size: progress 4, the version 4 (counters, external
    # answers, members, and one for the judges: their results' counter, runs and judges).
    assert len(queries.captured_queries) == 8


def test_expiry_gives_back_two_places_on_one_item_and_one_on_another(project, clock):
    # Two amounts (2 and 1) are two statements: their items are locked in id order first.
    first, second = factories.make_items(project, 2)
    a, b, c = add_annotators(project, 3)
    for annotator in (a, b, c):
        services.assignment_next(project=project, annotator=annotator)
    taken = dict(Item.objects.filter(project=project).values_list("id", "assigned_count"))
    assert taken == {first.pk: 2, second.pk: 1}
    Assignment.objects.filter(project=project).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with transaction.atomic():
        assert expire_open_work(project_id=project.pk) == 3
    counts = dict(Item.objects.filter(project=project).values_list("id", "assigned_count"))
    assert counts == {first.pk: 0, second.pk: 0}
    assert fresh(project)["full"] == []
