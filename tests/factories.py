"""factory_boy factories and a fast way to fill a project with realistic items."""

import itertools
import uuid

import factory
from django.contrib.auth import get_user_model

from annotation import task_types
from annotation.models import Item
from projects.models import Membership, Project

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery-staple"


def unique(prefix: str) -> str:
    # Unique across test runs too: the rate limiter's cache may be a shared Redis.
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.LazyFunction(lambda: unique("user"))
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.LazyFunction(lambda: unique("project"))
    name = factory.Sequence(lambda n: f"Project {n}")
    task_type = "citation_recovery"
    config = factory.LazyFunction(lambda: {"masking": "sample", "seed": 13})
    annotators_per_item = 3


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    role = Membership.Role.ANNOTATOR


def citation_payload(n: int, sentences: int = 4, **overrides) -> dict:
    """A citation-recovery record whose explanation cites evidence 1..sentences, one per sentence."""
    payload = {
        "id": f"claim-{n}",
        "claim": f"Claim number {n} is accurate.",
        "label": "half-true",
        "evidence": [
            {"id": i, "text": f"Evidence passage {i} of claim {n}."}
            for i in range(1, sentences + 1)
        ],
        "explanation": [f"Sentence {i} of explanation {n} [{i}]." for i in range(1, sentences + 1)],
        "masked_evidence": 2,
        "generator": "test-gen",
    }
    payload.update(overrides)
    return payload


def make_items(
    project: Project, count: int, *, kind: str = "regular", start: int = 0
) -> list[Item]:
    """Bulk-create ``count`` prepared items (through the task type, as an import would)."""
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    objects = []
    for n in range(start, start + count):
        payload = task_type.validate_payload(citation_payload(n))
        (prepared,) = task_type.prepare(dict(payload), config=config)
        objects.append(
            Item(
                project=project,
                external_id=prepared.external_id,
                payload=prepared.payload,
                prepared=prepared.prepared,
                gold=prepared.gold,
                group=prepared.group,
                kind=kind,
                position=n + 1,
            )
        )
    return Item.objects.bulk_create(objects, batch_size=2000)


def demo_item(slug: str, config: dict | None = None, **overrides):
    """The first item a task type's demo payload (with ``overrides``) prepares into, as judges
    and displays read it: payload, prepared, gold and the project's config. No database."""
    from types import SimpleNamespace

    from annotation import task_types

    task_type = task_types.get(slug)
    clean = task_type.validate_config(config or {})
    payload = task_type.validate_payload({**task_type.demo_payload(), **overrides})
    prepared = task_type.prepare(dict(payload), config=clean)[0]
    return SimpleNamespace(
        payload=prepared.payload,
        prepared=prepared.prepared,
        gold=prepared.gold,
        project=SimpleNamespace(config=config or {}),
    )


def import_job(*, project: Project, content: bytes, **fields):
    """An import job whose upload is ``content`` (stored in parts, as an upload is)."""
    from studies.models import ImportJob
    from studies.services.import_jobs import import_upload_store

    fields.setdefault("filename", "items.jsonl")
    fields.setdefault("fmt", "jsonl")
    job = ImportJob.objects.create(project=project, **fields)
    import_upload_store(job=job, chunks=[content])
    return job


def stored_upload(job) -> bytes:
    """What is kept of a job's upload."""
    from studies.services.import_jobs import import_upload_stream

    return import_upload_stream(job=job).read()
