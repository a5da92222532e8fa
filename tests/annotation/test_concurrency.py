"""N annotators per item under concurrent requests (PostgreSQL row locks, real threads)."""

import threading
from collections import Counter

from django.db import connection, connections

from annotation import services
from annotation.models import Assignment, Item
from tests import factories
from tests.conftest import require

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def test_n_annotators_per_item_holds_when_20_annotators_ask_at_once(transactional_db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory(annotators_per_item=3)
    factories.make_items(project, 12)
    annotators = [factories.UserFactory() for _ in range(20)]
    for user in annotators:
        factories.MembershipFactory(project=project, user=user, role="annotator")
    start = threading.Barrier(len(annotators))
    errors = []

    def work(user):
        try:
            start.wait()
            while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
                services.annotation_submit(assignment=assignment, answer=ANSWER)
        except Exception as exc:  # surfaced below: a thread must not die silently
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors
    per_item = Counter(Assignment.objects.filter(project=project).values_list("item_id", flat=True))
    assert set(per_item.values()) == {3}, per_item
    assert len(per_item) == 12
    pairs = Assignment.objects.filter(project=project).values_list("item_id", "annotator_id")
    assert len(set(pairs)) == len(pairs)
    assert all(i.assigned_count == 3 for i in Item.objects.filter(project=project))
    assert Assignment.objects.filter(project=project, state="submitted").count() == 36
