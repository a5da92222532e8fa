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

It prints rows/s, the export's time as a multiple of COPY's, and peak RSS (VmHWM) against
the 10x smaller export: flat memory means a ratio near 1. Nothing asserts a timing.

``rows(project_id=..., database_url=...)`` is what ``bench/scale.py`` calls on its own project
(the small memory-baseline project is then built beside it); it returns the figures as a dict.
The database defaults to ``$BENCH_DATABASE_URL``, else ``concord_bench_export`` on
``$BENCH_POSTGRES_URL`` (default postgres://postgres@127.0.0.1:5432/postgres), created and
migrated when missing. Building 300k answers takes about a minute; later runs reuse them. The
build is ``bench/answered_project.py``'s, shared with ``bench/scale_agreement.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answered_project  # noqa: E402  (the project build, shared with bench/scale_agreement.py)
from answered_project import PER_ITEM, child, setup_django  # noqa: E402
from scale_data import ensure_database, peak_mb  # noqa: E402


def default_database_url() -> str:
    return answered_project.default_database_url("concord_bench_export")


def build(*, answers: int, slug: str) -> int:
    """The project ``slug`` with ``answers`` current answers (``answers / 3`` items), reused when
    it is already complete; returns its id. Answers pick 0-2 sentences at random; a judge's
    pre-selection shown on 1 % of the assignments, 1 % of the items adjudicated."""
    return answered_project.build(
        answers=answers,
        slug=slug,
        name="Export benchmark",
        usernames="bench-export",
        count_first=True,
        judge="bench-export-judge",
        preselection_share=0.01,
        adjudicated_share=0.01,
    )


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


def worker(task: str, url: str, project_id: int, fmt: str) -> None:
    setup_django(url)
    from django.db import connection

    sink = Sink()
    before_mb = peak_mb()
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
        "peak_mb": peak_mb(),
        "setup_mb": before_mb,
    }
    print(json.dumps(result))


def _run(task: str, url: str, project_id: int, fmt: str) -> dict:
    return child(__file__, "--worker", task, url, str(project_id), fmt)


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
    big, answers, small = child(
        __file__, "--prepare", url, str(project_id or ""), "quick" if quick else "full", stderr=True
    )
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
