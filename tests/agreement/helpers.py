"""A small citation-recovery study with answers chosen so that every figure can be computed by
hand (the expected values and their derivations live in test_reports.py)."""

from __future__ import annotations

from django.utils import timezone

from annotation import task_types
from annotation.models import Annotation, Assignment, Item
from tests import factories

# Gold for every item: sentence 1 (the sentence citing the masked evidence 2).
# Items c0, c1 are in group "A", c2, c3 in group "B".
ANSWERS = {
    "a": {"c0": [1], "c1": [1], "c2": [0], "c3": [1]},
    "b": {"c0": [1], "c1": [1, 2], "c2": [0], "c3": [1]},
    "c": {"c0": [1], "c1": [2], "c2": [1], "c3": []},
}
HELPFULNESS = {
    "a": {"c0": 80, "c1": 60, "c2": 20, "c3": 70},
    "b": {"c0": 90, "c1": 50, "c2": 30, "c3": 60},
    "c": {"c0": 70, "c1": 40, "c2": 40, "c3": 90},
}
TIMES_S = {"a": [10, 20, 30, 40], "b": [5, 5, 5, 5], "c": [60, 60, 60, 60]}


def make_item(
    project, claim: str, group: str, position: int, *, masked: int | None = 2, sentences: int = 4
) -> list[Item]:
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    payload = factories.citation_payload(
        0, sentences=sentences, id=claim, generator=group, masked_evidence=masked
    )
    payload = task_type.validate_payload(payload)
    items = []
    for k, prepared in enumerate(task_type.prepare(dict(payload), config=config)):
        items.append(
            Item.objects.create(
                project=project,
                external_id=prepared.external_id,
                payload=prepared.payload,
                prepared=prepared.prepared,
                gold=prepared.gold,
                group=prepared.group,
                position=position * 10 + k,
            )
        )
    return items


def answer(item, user, sentences, helpfulness=50, time_ms=1000, version_of=None) -> Annotation:
    """Record a submitted answer directly (the workflow itself is tested elsewhere)."""
    now = timezone.now()
    assignment, _ = Assignment.objects.get_or_create(
        item=item,
        annotator=user,
        defaults={
            "project": item.project,
            "state": Assignment.State.SUBMITTED,
            "reserved_at": now,
            "expires_at": now,
            "submitted_at": now,
            "sequence": Assignment.objects.filter(annotator=user, project=item.project).count() + 1,
        },
    )
    previous = Annotation.objects.filter(assignment=assignment, is_current=True).first()
    version = 1
    if previous is not None:
        Annotation.objects.filter(pk=previous.pk).update(is_current=False)
        version = previous.version + 1
    return Annotation.objects.create(
        assignment=assignment,
        item=item,
        annotator=user,
        answer={"sentences": list(sentences), "none": not sentences, "helpfulness": helpfulness},
        version=version,
        time_spent_ms=time_ms,
    )


def seeded_study(researcher=None, *, project=None, qualification="not_required"):
    """The hand-computable study: 4 items in 2 groups, annotators a, b, c (returned by name)."""
    if project is None:
        project = factories.ProjectFactory(annotators_per_item=3)
    if researcher is not None:
        factories.MembershipFactory(project=project, user=researcher, role="researcher")
    items = {}
    for n, claim in enumerate(["c0", "c1", "c2", "c3"]):
        (items[claim],) = make_item(project, claim, "A" if n < 2 else "B", n)
    users = {}
    for name in ("a", "b", "c"):
        user = factories.UserFactory(username=factories.unique(f"ann-{name}"))
        factories.MembershipFactory(
            project=project, user=user, role="annotator", qualification=qualification
        )
        users[name] = user
        for k, claim in enumerate(items):
            answer(
                items[claim],
                user,
                ANSWERS[name][claim],
                HELPFULNESS[name][claim],
                TIMES_S[name][k] * 1000,
            )
    return project, items, users
