"""A large PostgreSQL project for the scale benchmarks (issue 16), built in bulk in SQL.

    .venv/bin/python bench/scale_data.py [--items 100000] [--fill 1.0] [--database concord_scale]

Creates a scratch database (dropped first if it exists) from ``$BENCH_POSTGRES_URL`` (default
``postgres://postgres@127.0.0.1:5432/postgres``), migrates it, and builds a citation-recovery
project of ``--items`` items, filled to ``--fill`` of them with ``annotators_per_item`` (3)
submitted answers each (100k items at fill 1.0: 300k answers) by 30 filler annotators. Items are
prepared by the task type once and repeated with their own external ids, so rows have the size
imported items have. Everything is ``INSERT … SELECT generate_series`` (a minute or less on a
2-core machine, where the ORM would take many); the database's own triggers keep ``is_full`` and
the counters as for any other write, and ANALYZE runs after each bulk step as after an import.

``bench/scale.py`` imports the helpers here (``scratch_database``, ``setup_django``,
``build_project``, ``fill_to``) to build the project step by step between measurements. The
database helpers (``database_url``, ``scratch_database``, ``ensure_database``, ``drop_database``,
``server_environment``) and the synthetic vocabulary ``WORDS`` are shared by the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}
FILLERS = 30
TASK_TYPE = "citation_recovery"
# The vocabulary of the synthetic citation-recovery text (import, export and agreement benchmarks).
WORDS = (
    "the claim report evidence state budget percent million voters policy official data study "
    "county tax federal program health school rate year said according shows increase"
).split()


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB. Not ``ru_maxrss``: Linux carries a
    parent's peak into a child across fork and exec, so a measurement process started by a large
    one (``bench/scale.py``) would report the parent's peak instead of its own."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # not Linux: the best there is

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def admin_url() -> str:
    return os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def database_url(name: str) -> str:
    """The URL of the database ``name`` on the benchmark server."""
    return admin_url().rsplit("/", 1)[0] + f"/{name}"


def scratch_database(name: str, *, required: bool = True) -> str | None:
    """Drop and create ``name`` on the benchmark server; returns its URL. When PostgreSQL is not
    reachable: exits with a message (``required``, as for the scale benchmark, PostgreSQL only),
    else returns None."""
    import psycopg2

    try:
        connection = psycopg2.connect(admin_url(), connect_timeout=3)
    except Exception as exc:
        if not required:
            return None
        sys.exit(f"PostgreSQL is not reachable at {admin_url()} ({exc}); set BENCH_POSTGRES_URL.")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    return database_url(name)


def ensure_database(url: str) -> None:
    """Create the database of ``url`` when it does not exist (kept, with its data, when it does)."""
    import psycopg2

    base, name = url.rsplit("/", 1)
    connection = psycopg2.connect(base + "/postgres", connect_timeout=5)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()


def drop_database(name: str) -> None:
    import psycopg2

    connection = psycopg2.connect(admin_url(), connect_timeout=3)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    connection.close()


def server_environment(database_url: str) -> dict[str, str]:
    """The environment a production-like Concord process runs with against ``database_url``."""
    return {
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "scale-benchmark-secret-key-not-for-production-0123456789",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_CONN_MAX_AGE": "60",
    }


def setup_django(database_url: str, *, migrate: bool = True) -> None:
    os.environ.update(server_environment(database_url))
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def prepared_item(n: int = 0) -> dict:
    """One citation-recovery record through the task type's validation and ``prepare``."""
    from annotation import task_types

    task_type = task_types.get(TASK_TYPE)
    config = task_type.validate_config({"masking": "sample", "seed": 13})
    payload = task_type.validate_payload(
        {
            "id": f"claim-{n}",
            "claim": f"Claim number {n} about the county budget is accurate.",
            "label": "half-true",
            "evidence": [
                {"id": i, "text": f"Evidence passage {i}: the county report on the budget."}
                for i in range(1, 7)
            ],
            "explanation": [
                f"Sentence {i} of the explanation cites the county report [{i}]."
                for i in range(1, 7)
            ],
            "masked_evidence": 2,
            "generator": "scale-bench",
        }
    )
    (prepared,) = task_type.prepare(dict(payload), config=config)
    return {"payload": prepared.payload, "prepared": prepared.prepared, "gold": prepared.gold}


def annotators(prefix: str, count: int, project) -> list:
    """``count`` annotator accounts (created in bulk) who are members of ``project``."""
    from django.contrib.auth.models import User

    from projects.models import Membership

    first = User.objects.filter(username__startswith=f"{prefix}-{project.pk}-").count()
    users = User.objects.bulk_create(
        [
            User(username=f"{prefix}-{project.pk}-{n}", password="!")
            for n in range(first, first + count)
        ]
    )
    Membership.objects.bulk_create(
        [Membership(project=project, user=user, role=Membership.Role.ANNOTATOR) for user in users]
    )
    return users


def build_project(slug: str, items: int, *, per_item: int = 3):
    """A project of ``items`` regular items (positions 1..items) and its 30 filler annotators."""
    from django.db import connection

    from projects.models import Project

    project = Project.objects.create(
        slug=slug,
        name=f"Scale benchmark {slug}",
        task_type=TASK_TYPE,
        config={"masking": "sample", "seed": 13},
        annotators_per_item=per_item,
        status="active",
    )
    template = prepared_item()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO annotation_item (project_id, external_id, payload, prepared, gold, kind,
                "group", position, shuffle_key, assigned_count, is_full, created_at, updated_at)
            SELECT %s, 'claim-' || n, %s::jsonb, %s::jsonb, %s::jsonb, 'regular', '', n,
                floor(random() * 2147483648)::int, 0, false, now(), now()
            FROM generate_series(1, %s) AS n
            """,
            [
                project.pk,
                json.dumps(template["payload"]),
                json.dumps(template["prepared"]),
                json.dumps(template["gold"]),
                items,
            ],
        )
    project._fillers = annotators("filler", FILLERS, project)
    analyze()
    return project


def fill_to(project, upto: int, *, vacuum: bool = False) -> int:
    """Give items at positions up to ``upto`` their ``annotators_per_item`` submitted answers
    (filler annotators, distinct per item), starting after the last filled position; returns
    the number of answers written; ``vacuum``: settle as with autovacuum (``settle``). Items the benchmark's own annotators touched in between keep
    their assignments: fillers only take the places still free."""
    from django.db import connection

    fillers = [u.pk for u in project._fillers]
    start = getattr(project, "_filled", 0)
    if upto <= start:
        return 0
    per_item = project.annotators_per_item
    # A fresh server process: the deferred foreign-key checks of the rows written here would
    # otherwise run on plans this connection cached while the tables were nearly empty (a
    # sequential scan per new row: minutes per fill level instead of seconds).
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH slots AS (
                SELECT i.id AS item_id, i.position, j
                FROM annotation_item i
                CROSS JOIN generate_series(0, %(per_item)s - 1) AS j
                WHERE i.project_id = %(project)s AND i.position > %(start)s
                  AND i.position <= %(upto)s AND j < %(per_item)s - i.assigned_count
            ), assigned AS (
                INSERT INTO annotation_assignment (project_id, item_id, annotator_id, state,
                    reserved_at, expires_at, submitted_at, submitted_revision, sequence)
                SELECT %(project)s, s.item_id,
                    (%(fillers)s::int[])[1 + ((s.position * %(per_item)s + s.j) %% %(count)s)],
                    'submitted', now(), now(), now(), 0, s.position
                FROM slots s
                ON CONFLICT DO NOTHING
                RETURNING id, item_id, annotator_id
            ), answered AS (
                INSERT INTO annotation_annotation (assignment_id, item_id, annotator_id, answer,
                    version, is_current, submission_id, time_spent_ms, reported_time_ms, created_at)
                SELECT a.id, a.item_id, a.annotator_id, %(answer)s::jsonb, 1, true,
                    gen_random_uuid(), 20000, 20000, now()
                FROM assigned a
                RETURNING item_id
            )
            SELECT count(*) FROM answered
            """,
            {
                "project": project.pk,
                "start": start,
                "upto": upto,
                "per_item": per_item,
                "fillers": fillers,
                "count": len(fillers),
                "answer": json.dumps(ANSWER),
            },
        )
        (written,) = cursor.fetchone()
        # Every item in the range now has N live assignments (the fillers took the places left;
        # the benchmark's own annotators submit what they reserve). The trigger sets is_full.
        cursor.execute(
            """
            UPDATE annotation_item SET assigned_count = %(per_item)s
            WHERE project_id = %(project)s AND position > %(start)s AND position <= %(upto)s
              AND kind = 'regular' AND assigned_count <> %(per_item)s
            """,
            {"project": project.pk, "start": start, "upto": upto, "per_item": per_item},
        )
    project._filled = upto
    analyze()
    project._settled_s = settle(project, vacuum=vacuum)
    return written


def settle(project, *, timeout: float = 120.0, vacuum: bool = False) -> float:
    """Bring the project to the state a project filled over days is in, without VACUUM (this
    PostgreSQL runs none): wait until the bulk fill's old row versions are dead to every running
    snapshot (other sessions' transactions on the server hold that back), then walk the open
    queue once, which lets PostgreSQL mark their index entries dead, as the next item after each
    reservation does in normal use. With ``vacuum``, then VACUUM the item and assignment tables,
    as a production PostgreSQL's autovacuum does in time, which removes those entries. Returns
    the seconds waited (``timeout`` at most)."""
    from django.db import connection

    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id()")
        (mark,) = cursor.fetchone()
        while time.monotonic() - started < timeout:
            cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot()) > %s::xid8", [mark])
            if cursor.fetchone()[0]:
                break
            time.sleep(0.2)
        cursor.execute(
            """
            SELECT id FROM annotation_item
            WHERE project_id = %s AND kind = 'regular' AND NOT is_full
            ORDER BY position, id LIMIT 1
            """,
            [project.pk],
        )
        cursor.fetchall()
        if vacuum:
            cursor.execute("VACUUM annotation_item, annotation_assignment")
    return time.monotonic() - started


def analyze() -> None:
    """What an import does after a bulk write (``annotation.services.statistics_refresh``)."""
    from annotation.services import statistics_refresh

    statistics_refresh(rows=10**9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--fill", type=float, default=1.0, help="share of items full (0-1)")
    parser.add_argument("--database", default="concord_scale")
    args = parser.parse_args()
    started = time.perf_counter()
    url = scratch_database(args.database)
    setup_django(url)
    migrated = time.perf_counter()
    project = build_project("scale", args.items)
    built = time.perf_counter()
    answers = fill_to(project, round(args.items * args.fill))
    filled = time.perf_counter()
    from annotation.selectors import project_counts

    print(
        f"{args.database}: project 'scale', {args.items} items, {answers} answers "
        f"({project_counts(project=project)}); migrate {migrated - started:.1f} s, "
        f"items {built - migrated:.1f} s, answers {filled - built:.1f} s"
    )


if __name__ == "__main__":
    main()
