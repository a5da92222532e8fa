"""The crowd pilot's control quota (Xing et al.): each batch holds 2 positive controls (gold
sentences) and 1 negative control ("none" is right), in random positions; negative controls are
built from ordinary records by removing the sentences that cite the masked evidence."""

import io
import json
from collections import Counter

import pytest
from django.db import connection

from annotation import services
from annotation.models import Assignment, Batch, Item
from studies.services.imports import ImportFailed, import_items
from tests import factories
from tests.annotation.test_concurrency import at_once
from tests.conftest import require

QUOTA = {"positive": 2, "negative": 1}


def import_records(project, records):
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    return import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")


def pilot(*, regular=60, positive=6, negative=4):
    project = factories.ProjectFactory(
        annotators_per_item=3,
        config={"control_quota": QUOTA},
        crowd={"batch_size": 3, "controls_per_batch": 3},
    )
    records = [factories.citation_payload(n, id=f"main-{n}") for n in range(regular)]
    records += [
        factories.citation_payload(n, id=f"pos-{n}", kind="control") for n in range(positive)
    ]
    records += [
        factories.citation_payload(n, id=f"neg-{n}", kind="control", negative_control=True)
        for n in range(negative)
    ]
    import_records(project, records)
    return project


def test_a_negative_control_loses_the_sentences_citing_the_masked_evidence(db):
    project = pilot(regular=0, positive=1, negative=1)
    positive = Item.objects.get(project=project, external_id="pos-0")
    negative = Item.objects.get(project=project, external_id="neg-0")
    assert positive.gold["sentences"] == [1]  # sentence 2 cites evidence 2
    assert negative.gold["sentences"] == []
    assert len(negative.prepared["sentences"]) == len(positive.prepared["sentences"]) - 1
    assert not any("Sentence 2 " in s for s in negative.prepared["sentences"])


def test_a_negative_control_must_be_a_control_and_keep_some_sentences(db):
    project = factories.ProjectFactory(config={"control_quota": QUOTA})
    with pytest.raises(ImportFailed) as failed:
        import_records(project, [factories.citation_payload(1, negative_control=True)])
    assert "line 1" in str(failed.value) and "negative_control" in str(failed.value)
    lonely = factories.citation_payload(
        2,
        sentences=2,
        kind="control",
        negative_control=True,
        explanation=["Only sentence [2]."],
        evidence=[{"id": 2, "text": "Evidence."}],
    )
    with pytest.raises(ImportFailed) as failed:
        import_records(project, [lonely])
    assert "negative_control" in str(failed.value)
    assert not Item.objects.filter(project=project).exists()


def test_an_unknown_control_kind_in_the_quota_is_refused_by_name(db):
    from annotation import task_types

    task = task_types.get("citation_recovery")
    with pytest.raises(Exception) as refused:
        task.validate_config({"control_quota": {"positive": 2, "tricky": 1}})
    assert "tricky" in str(refused.value)


def test_every_batch_holds_the_quota_in_random_positions_under_20_concurrent_starts(
    transactional_db,
):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = pilot()
    workers = [factories.UserFactory() for _ in range(20)]
    for user in workers:
        factories.MembershipFactory(project=project, user=user, role="annotator")

    def start(user):
        services.assignment_next(project=project, annotator=user, start_batch=True)

    assert not at_once(start, workers)
    batches = list(Batch.objects.filter(project=project, kind="main"))
    assert len(batches) == 20
    patterns = Counter()
    for batch in batches:
        dealt = list(
            Assignment.objects.filter(batch=batch).order_by("sequence").select_related("item")
        )
        assert len(dealt) == 6
        kinds = [
            "regular"
            if a.item.kind == "regular"
            else ("positive" if a.item.gold["sentences"] else "negative")
            for a in dealt
        ]
        assert Counter(kinds) == {"regular": 3, "positive": 2, "negative": 1}, kinds
        patterns[tuple(kinds)] += 1
    assert len(patterns) > 1  # where the controls sit is not fixed
