"""The answered project of the export and agreement benchmarks, built in bulk through the ORM.

``bench/scale_export.py`` and ``bench/scale_agreement.py`` each build (or reuse) synthetic
citation-recovery projects with N = 3 current answers per item by 30 annotators, one of them
disqualified, 2 % of the answers revised (an older version left behind). ``build`` takes what
differs between them as parameters, so that each benchmark's data stays what it was: the same
rows for the same seed (the seed is the number of answers).

Also here, for those two benchmarks: ``default_database_url``, ``setup_django`` and ``child`` (a
measurement in a fresh process); the database helpers themselves, ``peak_mb`` and the vocabulary
``WORDS`` are ``bench/scale_data.py``'s.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_data import WORDS, database_url  # noqa: E402  (the sibling module)

REPO = Path(__file__).resolve().parents[1]
ANNOTATORS = 30
PER_ITEM = 3
DISQUALIFIED = 7  # the annotator whose membership is disqualified


# --- database and Django -----------------------------------------------------------------------


def default_database_url(name: str) -> str:
    """``$BENCH_DATABASE_URL``, else the database ``name`` on ``$BENCH_POSTGRES_URL``."""
    return os.environ.get("BENCH_DATABASE_URL") or database_url(name)


def setup_django(url: str, code: Path | None = None) -> None:
    """Django on the database ``url``, the project's code imported from ``code`` (default: this
    checkout; another one runs the code of another commit on the same data)."""
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"The export and agreement benchmarks need PostgreSQL, not {url!r}.")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("CONCORD_REQUIRE_SERVICES", None)
    # As in production: no query log (DEBUG keeps every statement's SQL, bulk inserts included).
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-" + "x" * 50)
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,localhost")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(code or REPO))
    import django

    django.setup()


def child(script: str, *args: str, stderr: bool = False, cwd: str | Path = REPO):
    """Run ``script`` with ``args`` in a fresh Python process (its own peak memory, its own Django)
    and return the JSON on the last line it prints; ``stderr``: pass its stderr on. ``cwd``: the
    checkout whose code it runs (Celery's Django fix-up puts the working folder first on the
    import path)."""
    output = subprocess.run(
        [sys.executable, script, *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    if stderr:
        sys.stderr.write(output.stderr)
    return json.loads(output.stdout.strip().splitlines()[-1])


# --- the synthetic project -----------------------------------------------------------------------


def payload(n: int, rng: random.Random, *, count_first: bool = False) -> dict:
    """A citation-recovery record: 10 evidence passages, 4-9 explanation sentences citing them.
    ``count_first``: draw the number of sentences before the evidence (the export benchmark's
    order; the agreement benchmark's draws it after), which keeps each benchmark's text as it was.
    """
    count = rng.randint(4, 9) if count_first else 0
    evidence = [
        {"id": i, "text": " ".join(rng.choice(WORDS) for _ in range(15))} for i in range(1, 11)
    ]
    if not count_first:
        count = rng.randint(4, 9)
    sentences = []
    for s in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 22))).capitalize()
        cites = rng.sample(range(1, 11), 1 if s == 0 else rng.randint(0, 2))
        sentences.append(words + "".join(f" [{c}]" for c in cites) + ".")
    return {
        "id": f"synthetic-{n}",
        "claim": " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + ".",
        "label": rng.choice(["true", "false", "half-true"]),
        "evidence": evidence,
        "explanation": sentences,
        "generator": rng.choice(["gpt4", "gpt35", "llama2-70b"]),
    }


def bulk_items(
    *, project, templates: list, count: int, prefix: str, per_item: int = PER_ITEM
) -> list[int]:
    """``count`` items made from prepared ``templates`` in turn (ids ``<prefix>-<n>``), each
    counting ``per_item`` assignments already; bulk-created 5,000 at a time."""
    from annotation.models import Item

    item_ids: list[int] = []
    batch = []
    for n in range(count):
        template = templates[n % len(templates)]
        batch.append(
            Item(
                project=project,
                external_id=f"{prefix}-{n}",
                payload={**template.payload, "id": f"{prefix}-{n}"},
                prepared=template.prepared,
                gold=template.gold,
                group=template.group,
                kind=template.kind,
                position=n + 1,
                assigned_count=per_item,
            )
        )
        if len(batch) == 5000 or n == count - 1:
            item_ids += [i.pk for i in Item.objects.bulk_create(batch)]
            batch = []
    return item_ids


def build(
    *,
    answers: int,
    slug: str,
    name: str,
    usernames: str,
    count_first: bool = False,
    researcher: str | None = None,
    gold_share: float = 0.0,
    judge: str | None = None,
    preselection_share: float = 0.0,
    adjudicated_share: float = 0.0,
) -> int:
    """The project ``slug`` with ``answers`` current answers (``answers / 3`` items), reused when
    it is already complete; returns its id. Bulk inserts through the ORM (no per-row save), then
    ANALYZE (this PostgreSQL has no autovacuum).

    ``name``: the project's name, "{name} ({answers} answers)". ``usernames``: the annotators are
    ``{usernames}-0`` to ``-29``. ``count_first``: as for ``payload``. ``researcher``: a user who
    joins as a researcher (before the annotators). Each answer picks 0-2 of the item's sentences
    at random and a helpfulness 0-100; with ``gold_share``, each item has a gold sentence that
    an answer picks alone that share of the time. ``judge``: the name of the project's own
    judge whose pre-selection was shown on ``preselection_share`` of the assignments;
    ``adjudicated_share`` of the items get an adjudication. A share of 0 draws nothing from the
    random generator."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation import task_types
    from annotation.models import Adjudication, Annotation, Assignment
    from llm_judges.models import Judge, PreselectionShown
    from projects.models import Membership, Project

    existing = Project.objects.filter(slug=slug).first()
    if existing is not None:
        current = Annotation.objects.filter(item__project=existing, is_current=True).count()
        if current == answers:
            return existing.pk
        existing.delete()
    rng = random.Random(answers)
    items_count = answers // PER_ITEM
    User = get_user_model()
    started = time.perf_counter()
    with transaction.atomic():
        project = Project.objects.create(
            slug=slug,
            name=f"{name} ({answers} answers)",
            task_type="citation_recovery",
            config={"masking": "sample", "seed": 13},
            annotators_per_item=PER_ITEM,
        )
        if researcher is not None:
            user, _ = User.objects.get_or_create(username=researcher)
            Membership.objects.create(project=project, user=user, role=Membership.Role.RESEARCHER)
        users = []
        for a in range(ANNOTATORS):
            user, _ = User.objects.get_or_create(username=f"{usernames}-{a}")
            users.append(user)
            Membership.objects.create(
                project=project,
                user=user,
                role=Membership.Role.ANNOTATOR,
                qualification=Membership.Qualification.DISQUALIFIED
                if a == DISQUALIFIED
                else Membership.Qualification.QUALIFIED,
            )
        task_type = task_types.get(project.task_type)
        config = task_type.validate_config(project.config)
        templates = []
        for n in range(200):  # prepared once each, then reused under new ids
            record = task_type.validate_payload(payload(n, rng, count_first=count_first))
            templates.append(task_type.prepare(dict(record), config=config)[0])
        item_ids = bulk_items(
            project=project, templates=templates, count=items_count, prefix="synthetic"
        )
        widths = [len(t.prepared.get("sentences", [])) or 4 for t in templates]
        base = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        sequence = [0] * ANNOTATORS
        assignments: list[Assignment] = []
        annotations: list[Annotation] = []
        shown_by = None
        if judge is not None:
            shown_by, _ = Judge.objects.get_or_create(  # the project's own judge
                project=project, name=judge, defaults={"kind": "embedding", "model": "minilm"}
            )

        def flush() -> None:
            Assignment.objects.bulk_create(assignments, batch_size=5000)
            for annotation in annotations:
                annotation.assignment_id = annotation.assignment.pk
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            if preselection_share:
                shown = [
                    PreselectionShown(assignment=a, judge=shown_by, answer={"sentences": [0]})
                    for a in assignments
                    if rng.random() < preselection_share
                ]
                PreselectionShown.objects.bulk_create(shown)
            assignments.clear()
            annotations.clear()

        for n, item_id in enumerate(item_ids):
            width = widths[n % len(templates)]
            gold = rng.randrange(width) if gold_share else None
            for k in range(PER_ITEM):
                a = (n + k * 11) % ANNOTATORS
                sequence[a] += 1
                reserved = base + timedelta(seconds=n * 2 + k)
                assignment = Assignment(
                    project=project,
                    item_id=item_id,
                    annotator=users[a],
                    state=Assignment.State.SUBMITTED,
                    reserved_at=reserved,
                    expires_at=reserved + timedelta(hours=1),
                    submitted_at=reserved + timedelta(seconds=30),
                    sequence=sequence[a],
                    submitted_revision=1,
                )
                assignments.append(assignment)
                versions = 2 if rng.random() < 0.02 else 1
                for version in range(1, versions + 1):
                    if gold_share and rng.random() < gold_share:
                        chosen = [gold]
                    else:
                        chosen = sorted(rng.sample(range(width), rng.randint(0, min(2, width))))
                    annotations.append(
                        Annotation(
                            assignment=assignment,
                            item_id=item_id,
                            annotator=users[a],
                            answer={
                                "sentences": chosen,
                                "none": not chosen,
                                "helpfulness": rng.randint(0, 100),
                            },
                            version=version,
                            is_current=version == versions,
                            time_spent_ms=rng.randint(2000, 90000),
                            reported_time_ms=rng.randint(2000, 90000),
                        )
                    )
            if len(assignments) >= 15000:
                flush()
        flush()
        if adjudicated_share:
            adjudicated = [
                Adjudication(item_id=item_id, answer={"sentences": [0], "none": False}, version=1)
                for item_id in item_ids
                if rng.random() < adjudicated_share
            ]
            Adjudication.objects.bulk_create(adjudicated, batch_size=5000)
    with connection.cursor() as cursor:  # fresh statistics (this PostgreSQL has no autovacuum)
        for table in ("annotation_item", "annotation_assignment", "annotation_annotation"):
            cursor.execute(f"ANALYZE {table}")
    print(
        f"  built {slug}: {items_count} items, {answers} answers in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return project.pk
