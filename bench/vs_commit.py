"""This code against an older commit of Concord through HTTP only (issue 16): 20 annotators.

    .venv/bin/python bench/vs_commit.py [--ref 27a8b99 | --old-checkout PATH] [--items 10000]
        [--fill 0.99] [--rounds 3] [--cycles 6] [--quick] [--keep]
        [--databases concord_bench_old concord_bench_new]

The issue's last target: "20 annotators, 3 sync workers: same p95 at 100k items 99 % full;
throughput per worker >= 1.5x today", where "today" is the code before the issue-16 work (commit
27a8b99, the parent of its first commit e36bc2f). Both versions run in this one run, on this
machine, under the same load, so the ratio is measured rather than taken from another day:

- the old side is a git worktree of ``--ref`` in a temporary directory (or ``--old-checkout``),
  removed at the end; each side's ``manage.py`` (migrate, accounts) and gunicorn run with this
  venv's interpreter and that side's checkout as working directory and first on ``PYTHONPATH``
  (``bench/concord_http.py``); the run prints which ``annotation`` package each side imports,
  whether its tree has ``annotation/migrations/0007_open_queue_triggers.py`` (issue 16's triggers)
  and its database's last annotation migration, so one can see the old code is what runs;
- each side gets its own scratch PostgreSQL database (dropped at the end unless ``--keep``),
  a citation-recovery project with 3 annotators per item and 20 annotator accounts created through
  the API, and the same synthetic file (``bench/import_speed.py``) of ``--items`` items imported
  through ``POST /api/projects/<slug>/import/`` (the import's items/s is printed, for information);
- each project is then filled to ``--fill`` of its items full (positions 1..fill x items get 3
  submitted answers from 30 filler accounts) with the same SQL on both sides, valid for both
  schemas (it writes only columns both have; the new schema's triggers keep its own counters),
  then ANALYZE; when the open places left are too few for the rounds, fewer cycles are run (said);
- after an untimed warm-up round on each side (it also walks each side's open queue once), the
  timed rounds: 20 threads, each its own account, ``--cycles`` next + submit each, against
  gunicorn with 3 sync workers, old first in odd rounds and new first in even ones.

It prints, per round and in all: requests/s, throughput per worker (requests/s / 3), request
p50/p95 (client side, next and submit together) for old and new, the ratios new/old (throughput:
target >= 1.5; p95: below 1 means new is faster) with the spread of the per-round throughput
ratios, the share of items full before and after, and the 1-minute load average. No timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402  (the synthetic citation-recovery items)
import scale_data  # noqa: E402  (scratch databases)
from concord_http import (  # noqa: E402  (Concord over HTTP, any checkout)
    ANSWER,
    Concord,
    annotator_round,
    load,
    p50,
    p95,
    summarise,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_REF = "27a8b99"  # the parent of e36bc2f, the first issue-16 commit
ISSUE_16_MIGRATION = "annotation/migrations/0007_open_queue_triggers.py"
CLIENTS = 20
WORKERS = 3
PER_ITEM = 3
FILLERS = 30

# The same statements on both sides; only columns and tables both schemas have.
FILLER_SQL = """
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
    is_staff, is_active, date_joined)
SELECT '!', false, 'vsc-filler-' || n, '', '', '', false, true, now()
FROM generate_series(1, %(count)s) AS n
ON CONFLICT (username) DO NOTHING
"""
FILL_SQL = """
WITH fillers AS (
    SELECT array_agg(id ORDER BY id) AS ids FROM auth_user WHERE username LIKE 'vsc-filler-%%'
), slots AS (
    SELECT i.id AS item_id, i.position, j
    FROM annotation_item i
    CROSS JOIN generate_series(0, %(per_item)s - 1) AS j
    WHERE i.project_id = %(project)s AND i.kind = 'regular' AND i.position <= %(upto)s
      AND j < %(per_item)s - i.assigned_count
), assigned AS (
    INSERT INTO annotation_assignment (project_id, item_id, annotator_id, state, reserved_at,
        expires_at, submitted_at, submitted_revision, sequence)
    SELECT %(project)s, s.item_id,
        f.ids[1 + ((s.position * %(per_item)s + s.j) %% array_length(f.ids, 1))],
        'submitted', now(), now(), now(), 0, s.position
    FROM slots s CROSS JOIN fillers f
    ON CONFLICT DO NOTHING
    RETURNING id, item_id, annotator_id
), answered AS (
    INSERT INTO annotation_annotation (assignment_id, item_id, annotator_id, answer, version,
        is_current, submission_id, time_spent_ms, reported_time_ms, created_at)
    SELECT a.id, a.item_id, a.annotator_id, %(answer)s::jsonb, 1, true, gen_random_uuid(),
        20000, 20000, now()
    FROM assigned a
    RETURNING item_id
)
SELECT count(*) FROM answered
"""
FULL_SQL = """
UPDATE annotation_item SET assigned_count = %(per_item)s
WHERE project_id = %(project)s AND kind = 'regular' AND position <= %(upto)s
  AND assigned_count <> %(per_item)s
"""
SHARE_FULL_SQL = """
SELECT count(*) FILTER (WHERE assigned_count >= %(per_item)s)::float / greatest(count(*), 1)
FROM annotation_item WHERE project_id = %(project)s AND kind = 'regular'
"""


class Side:
    """One version: its checkout, scratch database, server and project."""

    def __init__(self, name: str, checkout: Path, database: str) -> None:
        self.name = name
        self.checkout = checkout
        self.database = database
        self.url = scale_data.scratch_database(database)
        self.concord = Concord(
            self.url, checkout=checkout, annotators=CLIENTS, prefix="vsc", per_item=PER_ITEM
        )
        self.concord.kind = f"{name} ({checkout})"
        self.rounds: list[dict] = []

    def sql(self, statement: str, params: dict | list | None = None):
        import psycopg2

        connection = psycopg2.connect(self.url)
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, params)
                return cursor.fetchall() if cursor.description else None
        finally:
            connection.close()

    def probe(self) -> str:
        """Which code this side runs: the package imported, the issue-16 migration, the schema."""
        imported = self.concord.python("import annotation; print(annotation.__file__)").strip()
        if not Path(imported).resolve().is_relative_to(self.checkout.resolve()):
            raise SystemExit(
                f"{self.name}: annotation is imported from {imported}, not the checkout"
            )
        has_0007 = (self.checkout / ISSUE_16_MIGRATION).exists()
        ((last,),) = self.sql("SELECT max(name) FROM django_migrations WHERE app = 'annotation'")
        is_full = self.sql(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'annotation_item' "
            "AND column_name = 'is_full'"
        )
        commit = subprocess.run(
            ["git", "-C", str(self.checkout), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.has_issue_16 = has_0007
        return (
            f"{self.name}: commit {commit or '?'}, imports {imported}; "
            f"{ISSUE_16_MIGRATION} {'present' if has_0007 else 'absent'}; database "
            f"{self.database} last annotation migration {last}, item.is_full column "
            f"{'present' if is_full else 'absent'}"
        )

    def project_id(self) -> int:
        ((pk,),) = self.sql("SELECT id FROM projects_project WHERE slug = %s", [self.slug])
        return pk

    def fill(self, upto: int) -> int:
        """Positions 1..upto get their 3 submitted answers (the same SQL on both sides)."""
        project = self.project_id()
        self.sql(FILLER_SQL, {"count": FILLERS})
        params = {
            "project": project,
            "upto": upto,
            "per_item": PER_ITEM,
            "answer": json.dumps(ANSWER),
        }
        ((written,),) = self.sql(FILL_SQL, params)
        self.sql(FULL_SQL, params)
        self.sql("ANALYZE")
        return written

    def share_full(self) -> float:
        ((share,),) = self.sql(SHARE_FULL_SQL, {"project": self.project_id(), "per_item": PER_ITEM})
        return share

    def settle(self, timeout: float = 120.0) -> float:
        """Wait until the fill's old row versions are dead to every running snapshot (other
        sessions' transactions on the shared server hold that back); seconds waited."""
        started = time.monotonic()
        ((mark,),) = self.sql("SELECT pg_current_xact_id()")
        while time.monotonic() - started < timeout:
            ((done,),) = self.sql(
                "SELECT pg_snapshot_xmin(pg_current_snapshot()) > %s::xid8", [mark]
            )
            if done:
                break
            time.sleep(0.2)
        return time.monotonic() - started


def old_checkout(ref: str, tmp: Path) -> Path:
    path = tmp / f"concord-{ref}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(path), ref],
        check=True,
    )
    return path


def remove_checkout(path: Path) -> None:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False
    )


def line(side: str, result: dict) -> str:
    rate = len(result["latencies"]) / result["wall"]
    return (
        f"{side:<4} {rate:6.1f} req/s = {rate / WORKERS:5.1f} per worker  "
        f"p50 {p50(result['latencies']):6.1f} ms  p95 {p95(result['latencies']):6.1f} ms  "
        f"load {result['load']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default=DEFAULT_REF, help="the old commit (default: 27a8b99)")
    parser.add_argument("--old-checkout", type=Path, help="an existing checkout of the old code")
    parser.add_argument("--items", type=int, default=None, help="items per project (10,000)")
    parser.add_argument("--fill", type=float, default=None, help="share of items full (0.99)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per side (3)")
    parser.add_argument("--cycles", type=int, default=None, help="next + submit per annotator (6)")
    parser.add_argument(
        "--quick", action="store_true", help="1,000 items 90 %% full, 2 rounds of 3 cycles"
    )
    parser.add_argument("--databases", nargs=2, default=["concord_bench_old", "concord_bench_new"])
    parser.add_argument("--keep", action="store_true", help="keep both scratch databases")
    args = parser.parse_args()
    # A SIGTERM unwinds like Ctrl-C, so the servers, databases and worktree are still removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    items = args.items or (1_000 if args.quick else 10_000)
    rounds = args.rounds or (2 if args.quick else 3)
    cycles = args.cycles or (3 if args.quick else 6)
    fill = args.fill if args.fill is not None else (0.9 if args.quick else 0.99)
    upto = round(items * fill)
    # Open places: (items - upto) x 3; the warm-up takes 20, each round 20 x cycles per side.
    places = (items - upto) * PER_ITEM
    fitting = (int(places * 0.9) - CLIENTS) // (rounds * CLIENTS)
    if fitting < 1:
        raise SystemExit(f"{places} open places at fill {fill}: too few; more items or less fill")
    if cycles > fitting:
        print(f"{places} open places: {fitting} cycles per annotator instead of {cycles}")
        cycles = fitting

    started = time.perf_counter()
    print(
        f"# vs_commit: {items} items, {upto / items:.1%} full, {PER_ITEM} annotators per item; "
        f"{CLIENTS} annotators x {cycles} next + submit, {rounds} rounds per side, gunicorn "
        f"{WORKERS} sync workers; machine {os.cpu_count()} cores, load {load():.2f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="vs-commit-") as tmp:
        created = None
        if args.old_checkout is None:
            created = old_checkout(args.ref, Path(tmp))
        sides: list[Side] = []
        try:
            old_path = args.old_checkout or created
            for name, checkout, database in (
                ("old", old_path, args.databases[0]),
                ("new", REPO, args.databases[1]),
            ):
                sides.append(Side(name, Path(checkout), database))
                print(sides[-1].probe(), flush=True)
            old, new = sides
            if args.old_checkout is None and args.ref == DEFAULT_REF and old.has_issue_16:
                raise SystemExit(f"the old checkout has {ISSUE_16_MIGRATION}: not the old code")
            path = Path(tmp) / "items.jsonl"
            import_speed.write_file(path, items)
            for side in sides:
                side.concord.start(workers=WORKERS)
                side.slug = side.concord.create_project()
                began = time.perf_counter()
                count = side.concord.import_file(side.slug, path)
                seconds = time.perf_counter() - began
                if count != items:
                    raise RuntimeError(f"{side.name}: imported {count} of {items} items")
                began = time.perf_counter()
                written = side.fill(upto)
                print(
                    f"{side.name}: import {items} items through the API {seconds:.1f} s "
                    f"({items / seconds:.0f} items/s, for information); fill {written} answers "
                    f"in {time.perf_counter() - began:.1f} s; load {load():.2f}",
                    flush=True,
                )
            for side in sides:
                waited = side.settle()
                side.before = side.share_full()
                warm = annotator_round(side.concord, side.slug, CLIENTS, 1)
                print(
                    f"{side.name}: settled {waited:.1f} s; {side.before:.2%} of items full; "
                    f"warm-up round {line(side.name, warm)}",
                    flush=True,
                )
            for r in range(rounds):
                order = sides if r % 2 == 0 else sides[::-1]
                for side in order:
                    result = annotator_round(side.concord, side.slug, CLIENTS, cycles)
                    side.rounds.append(result)
                    print(f"round {r + 1} {line(side.name, result)}", flush=True)
            for side in sides:
                side.after = side.share_full()
        finally:
            for side in sides:
                side.concord.stop()
            if not args.keep:
                for side in sides:
                    scale_data.drop_database(side.database)
            if created is not None:
                remove_checkout(created)

    o, n = summarise(old.rounds), summarise(new.rounds)
    per_round = [
        (len(b["latencies"]) / b["wall"]) / (len(a["latencies"]) / a["wall"])
        for a, b in zip(old.rounds, new.rounds, strict=True)
    ]
    print()
    print(
        f"# {CLIENTS} annotators, {WORKERS} sync workers, {items} items "
        f"(full: old {old.before:.1%} -> {old.after:.1%}, new {new.before:.1%} -> {new.after:.1%}), "
        f"{rounds} rounds alternated, {o['requests']} requests per side"
    )
    for name, s in (("old", o), ("new", n)):
        print(
            f"{name} ({args.ref if name == 'old' else 'this checkout'}): "
            f"{s['requests_per_s']:.1f} req/s = {s['requests_per_s'] / WORKERS:.1f} per worker; "
            f"p50 {s['p50']:.1f} ms, p95 {s['p95']:.1f} ms"
        )
    print(
        f"throughput per worker new/old {n['requests_per_s'] / o['requests_per_s']:.2f}x "
        f"(target >= 1.5; per round {min(per_round):.2f}-{max(per_round):.2f}x)"
    )
    print(
        f"p50 new/old {n['p50'] / o['p50']:.2f}x, p95 new/old {n['p95'] / o['p95']:.2f}x "
        f"(below 1: new is faster)"
    )
    print(
        f"load average (1 min) during the rounds <= {max(o['load'], n['load']):.2f}, "
        f"now {load():.2f}; total {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
