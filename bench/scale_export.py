"""Export speed and memory at 300k rows (issue 16: "export, 300k rows: >= 30k rows/s, memory flat").

    .venv/bin/python bench/scale_export.py [--quick] [--database-url URL] [--project-id N]

Builds (or reuses) two synthetic citation-recovery projects in PostgreSQL, in bulk: 100k items
with 3 current answers each (300k rows; ``--quick``: 10k items, 30k rows) and one ten times
smaller. 30 annotators, one of them disqualified; 1 % of the items adjudicated, a judge's
pre-selection shown on 1 % of the answers, 2 % of the answers resubmitted (an older version
that the export leaves out). Then, each in a fresh subprocess (so peak memory is its own):

* the JSONL and the CSV export of the big project through ``export_chunks`` (what the API,
  the page and ``manage.py export_annotations`` stream), written to /dev/null as bytes;
* the speed baseline: PostgreSQL's own ``COPY (SELECT ...) TO STDOUT`` of the same rows (the
  same join and order, item JSON included), read by psycopg2, the fastest the database hands
  these rows out;
* the memory baseline: the same exports of the project with 10x fewer rows.

It prints rows/s, the export's time as a multiple of COPY's, and peak RSS (ru_maxrss) against
the 10x smaller export: flat memory means a ratio near 1. Nothing asserts a timing.

``rows(project_id=..., database_url=...)`` is what ``bench/scale.py`` calls on its own project
(the small memory-baseline project is then built beside it); it returns the figures as a dict.
The database defaults to ``$BENCH_DATABASE_URL``, else ``concord_bench_export`` on
``$BENCH_POSTGRES_URL`` (default postgres://postgres@127.0.0.1:5432/postgres), created and
migrated when missing. Building 300k answers takes about a minute; later runs reuse them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANNOTATORS = 30
PER_ITEM = 3
WORDS = (
    "the claim report evidence state budget percent million voters policy official data study "
    "county tax federal program health school rate year said according shows increase"
).split()


# --- database and Django -----------------------------------------------------------------------


def default_database_url() -> str:
    if os.environ.get("BENCH_DATABASE_URL"):
        return os.environ["BENCH_DATABASE_URL"]
    admin = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    return admin.rsplit("/", 1)[0] + "/concord_bench_export"


def ensure_database(url: str) -> None:
    import psycopg2

    base, name = url.rsplit("/", 1)
    connection = psycopg2.connect(base + "/postgres", connect_timeout=5)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()


def setup_django(url: str) -> None:
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"The export benchmark needs PostgreSQL, not {url!r}.")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    # As in production: no query log (DEBUG keeps every statement's SQL, bulk inserts included).
    os.environ.setdefault("DJANGO_DEBUG", "false")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-" + "x" * 50)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


# --- the synthetic project -----------------------------------------------------------------------


def _payload(n: int, rng: random.Random) -> dict:
    count = rng.randint(4, 9)
    evidence = [
        {"id": i, "text": " ".join(rng.choice(WORDS) for _ in range(15))} for i in range(1, 11)
    ]
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


def build(*, answers: int, slug: str) -> int:
    """The project ``slug`` with ``answers`` current answers (``answers / 3`` items), reused when
    it is already complete; returns its id. Bulk inserts through the ORM (no per-row save)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation import task_types
    from annotation.models import Adjudication, Annotation, Assignment, Item
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
            name=f"Export benchmark ({answers} answers)",
            task_type="citation_recovery",
            config={"masking": "sample", "seed": 13},
            annotators_per_item=PER_ITEM,
        )
        users = []
        for a in range(ANNOTATORS):
            user, _ = User.objects.get_or_create(username=f"bench-export-{a}")
            users.append(user)
            Membership.objects.create(
                project=project,
                user=user,
                role=Membership.Role.ANNOTATOR,
                qualification=Membership.Qualification.DISQUALIFIED
                if a == 7
                else Membership.Qualification.QUALIFIED,
            )
        task_type = task_types.get(project.task_type)
        config = task_type.validate_config(project.config)
        templates = []
        for n in range(200):  # prepared once each, then reused under new ids
            payload = task_type.validate_payload(_payload(n, rng))
            templates.append(task_type.prepare(dict(payload), config=config)[0])
        base = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        item_ids: list[int] = []
        batch = []
        for n in range(items_count):
            template = templates[n % len(templates)]
            batch.append(
                Item(
                    project=project,
                    external_id=f"synthetic-{n}",
                    payload={**template.payload, "id": f"synthetic-{n}"},
                    prepared=template.prepared,
                    gold=template.gold,
                    group=template.group,
                    position=n + 1,
                    assigned_count=PER_ITEM,
                )
            )
            if len(batch) == 5000 or n == items_count - 1:
                item_ids += [i.pk for i in Item.objects.bulk_create(batch)]
                batch = []
        sentences = [len(t.prepared.get("sentences", [])) or 4 for t in templates]
        sequence = [0] * ANNOTATORS
        assignments: list[Assignment] = []
        annotations: list[Annotation] = []
        judge, _ = Judge.objects.get_or_create(
            name="bench-export-judge", defaults={"kind": "embedding", "model": "minilm"}
        )

        def flush() -> None:
            Assignment.objects.bulk_create(assignments, batch_size=5000)
            for annotation in annotations:
                annotation.assignment_id = annotation.assignment.pk
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            shown = [
                PreselectionShown(assignment=a, judge=judge, answer={"sentences": [0]})
                for a in assignments
                if rng.random() < 0.01
            ]
            PreselectionShown.objects.bulk_create(shown)
            assignments.clear()
            annotations.clear()

        for n, item_id in enumerate(item_ids):
            width = sentences[n % len(templates)]
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
        adjudicated = [
            Adjudication(item_id=item_id, answer={"sentences": [0], "none": False}, version=1)
            for item_id in item_ids
            if rng.random() < 0.01
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


# --- measurements (each in its own process) -----------------------------------------------------

COPY_SQL = """
COPY (
  SELECT i.external_id, i.kind, i."group", i.prepared, i.gold, a.annotator_id, a.version,
         a.time_spent_ms, a.reported_time_ms, s.reserved_at, a.created_at, a.answer,
         d.answer AS adjudicated, j.name AS preselection
  FROM annotation_annotation a
  JOIN annotation_item i ON i.id = a.item_id
  JOIN annotation_assignment s ON s.id = a.assignment_id
  LEFT JOIN annotation_adjudication d ON d.item_id = i.id AND d.is_current
  LEFT JOIN llm_judges_preselectionshown p ON p.assignment_id = s.id
  LEFT JOIN llm_judges_judge j ON j.id = p.judge_id
  WHERE i.project_id = {project} AND a.is_current
  ORDER BY i.position, i.id, s.sequence, a.id
) TO STDOUT WITH (FORMAT {fmt})
"""


class Sink:
    """A binary file that counts what is written to it (and writes it to /dev/null)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.lines = 0
        self.out = open(os.devnull, "wb")  # noqa: SIM115

    def write(self, data) -> int:
        if isinstance(data, str):
            data = data.encode()
        self.bytes += len(data)
        self.lines += data.count(b"\n")
        return self.out.write(data)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(task: str, url: str, project_id: int, fmt: str) -> None:
    setup_django(url)
    from django.db import connection

    sink = Sink()
    before_mb = _peak_mb()
    cpu = time.process_time()
    if task == "copy":
        connection.ensure_connection()
        started = time.perf_counter()
        with connection.connection.cursor() as cursor:
            cursor.copy_expert(COPY_SQL.format(project=int(project_id), fmt=fmt), sink)
        seconds = time.perf_counter() - started
    else:
        from projects.models import Project
        from studies.services.exports import export_chunks

        project = Project.objects.get(pk=project_id)
        started = time.perf_counter()
        for chunk in export_chunks(project=project, fmt=fmt):
            sink.write(chunk.encode() if isinstance(chunk, str) else chunk)  # as Django does
        seconds = time.perf_counter() - started
    result = {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu,
        "bytes": sink.bytes,
        "lines": sink.lines,
        "peak_mb": _peak_mb(),
        "setup_mb": before_mb,
    }
    print(json.dumps(result))


def _run(task: str, url: str, project_id: int, fmt: str) -> dict:
    output = subprocess.run(
        [sys.executable, __file__, "--worker", task, url, str(project_id), fmt],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def _prepare(url: str, *, project_id: int | None, quick: bool) -> tuple[int, int, int]:
    """(big project id, its answers, small project id), building what is missing."""
    setup_django(url)
    from django.core.management import call_command

    from annotation.models import Annotation

    call_command("migrate", verbosity=0)
    answers = 30_000 if quick else 300_000
    if project_id is None:
        project_id = build(answers=answers, slug=f"bench-export-{answers}")
    else:
        answers = Annotation.objects.filter(item__project_id=project_id, is_current=True).count()
    small_answers = max(answers // 10 // PER_ITEM * PER_ITEM, PER_ITEM)
    small = build(answers=small_answers, slug=f"bench-export-{small_answers}")
    return project_id, answers, small


def rows(
    *, project_id: int | None = None, database_url: str | None = None, quick: bool = False
) -> dict:
    """Export figures for ``project_id`` (default: the benchmark's own project, built or reused),
    with their baselines from the same run: ``{"rows", "jsonl": {...}, "csv": {...}}`` where each
    format has ``rows_per_s``, ``seconds``, ``copy_seconds``, ``vs_copy`` (export time / COPY
    time), ``peak_mb``, ``small_peak_mb`` and ``memory_ratio`` (peak / peak at 10x fewer rows)."""
    url = database_url or default_database_url()
    ensure_database(url)
    # Django is set up in this process only when building: run the preparation in a child so a
    # caller that has its own Django set up (bench/scale.py) is not disturbed.
    prepared = subprocess.run(
        [
            sys.executable,
            __file__,
            "--prepare",
            url,
            str(project_id or ""),
            "quick" if quick else "full",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    sys.stderr.write(prepared.stderr)
    big, answers, small = json.loads(prepared.stdout.strip().splitlines()[-1])
    figures: dict = {"answers": answers}
    for fmt in ("jsonl", "csv"):
        copy = _run("copy", url, big, "csv" if fmt == "csv" else "text")
        export = _run("export", url, big, fmt)
        small_export = _run("export", url, small, fmt)
        exported = export["lines"] - (1 if fmt == "csv" else 0)
        copied = copy["lines"]
        figures[fmt] = {
            "rows": exported,
            "copy_rows": copied,
            "seconds": round(export["seconds"], 2),
            "rows_per_s": round(exported / export["seconds"]),
            "copy_seconds": round(copy["seconds"], 2),
            "copy_rows_per_s": round(copied / copy["seconds"]),
            "vs_copy": round(export["seconds"] / copy["seconds"], 2),
            # this process's CPU time: what the export costs in Python, whatever the load
            "cpu_seconds": round(export["cpu_seconds"], 2),
            "rows_per_cpu_s": round(exported / export["cpu_seconds"]),
            "megabytes": round(export["bytes"] / 1e6, 1),
            "peak_mb": round(export["peak_mb"], 1),
            "small_rows": small_export["lines"] - (1 if fmt == "csv" else 0),
            "small_peak_mb": round(small_export["peak_mb"], 1),
            "memory_ratio": round(export["peak_mb"] / small_export["peak_mb"], 2),
            "setup_mb": round(export["setup_mb"], 1),
        }
    figures["rows"] = figures["jsonl"]["rows"]
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, task, url, project_id, fmt = sys.argv
        worker(task, url, int(project_id), fmt)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--prepare":
        _, _, url, project_id, mode = sys.argv
        result = _prepare(
            url, project_id=int(project_id) if project_id else None, quick=mode == "quick"
        )
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30k rows instead of 300k")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--project-id", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    figures = rows(project_id=args.project_id, database_url=args.database_url, quick=args.quick)
    print(f"export of {figures['answers']} current answers (target: >= 30k rows/s, memory flat)")
    print(
        f"{'format':6} {'rows':>8} {'s':>7} {'rows/s':>8} {'COPY s':>7} {'COPY rows/s':>11} "
        f"{'x COPY':>7} {'rows/CPU s':>10} {'MB out':>7} {'peak MB':>8} {'10x fewer':>10} "
        f"{'ratio':>6}"
    )
    for fmt in ("jsonl", "csv"):
        f = figures[fmt]
        print(
            f"{fmt:6} {f['rows']:>8} {f['seconds']:>7.2f} {f['rows_per_s']:>8} "
            f"{f['copy_seconds']:>7.2f} {f['copy_rows_per_s']:>11} {f['vs_copy']:>7.2f} "
            f"{f['rows_per_cpu_s']:>10} "
            f"{f['megabytes']:>7.1f} {f['peak_mb']:>8.1f} {f['small_peak_mb']:>10.1f} "
            f"{f['memory_ratio']:>6.2f}"
        )
    print(
        "x COPY: export time / PostgreSQL COPY of the same rows (same join and order); rows/CPU "
        "s: rows per second of the exporting process's own CPU time (the database's not "
        "counted; stable under load); ratio: peak RSS / peak RSS exporting 10x fewer rows "
        "(1.0 = flat)."
    )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
