"""Agreement report and dashboard at scale (issue 16), against baselines from the same run.

    .venv/bin/python bench/scale_agreement.py [--quick] [--million] [--database-url URL]
                                              [--project-id N]

Builds (or reuses) synthetic citation-recovery projects in PostgreSQL, in bulk: 100k items with
3 current answers each (300k answers; ``--quick``: 10k items, 30k answers), a project ten times
smaller, and with ``--million`` one of 333,334 items (1M answers). 30 annotators, one of them
disqualified; answers pick 0-2 of an item's sentences and a helpfulness 0-100; 2 % were revised
(an older version the report leaves out). Then, each in a fresh subprocess so that its peak
memory (VmHWM) is its own:

* **report**: what the Celery worker runs for a dashboard request (``snapshot_compute``: gather
  from the database, alpha per answer field with 1,000 bootstrap replicates, the task type's
  section, the stored page), with its time split into gather and the rest. Baseline: the
  plain read of the same current answers, ``values_list(annotator, item, answer)`` with
  psycopg parsing every answer (what the report read before); and the 10x smaller project's
  report, for memory flat in answers. Targets: 1M answers < 60 s and < 1.5 GB.
* **dashboard**: 40 GETs of the dashboard with a fresh snapshot through Django's test client
  (the whole view and template, no HTTP server): p50 and p95, and the process's peak RSS after
  them against its RSS before the first. Baseline: the same on the 10x smaller project.
  Target: < 300 ms p95 at 300k answers, web memory unchanged.

``rows(project_id=..., database_url=..., quick=...)`` is what ``bench/scale.py`` calls with its
own project (the smaller baseline project is then built beside it); it returns a dict. The
database defaults to ``$BENCH_DATABASE_URL``, else ``concord_bench_agreement`` on
``$BENCH_POSTGRES_URL`` (default postgres://postgres@127.0.0.1:5432/postgres), created and
migrated when missing; built projects are reused by later runs. Nothing asserts a timing. The
build is ``bench/answered_project.py``'s, shared with ``bench/scale_export.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answered_project  # noqa: E402  (the project build, shared with bench/scale_export.py)
from answered_project import PER_ITEM, child, setup_django  # noqa: E402
from scale_data import ensure_database, peak_mb  # noqa: E402

DASHBOARD_GETS = 40
RESEARCHER = "bench-agreement-researcher"


def default_database_url() -> str:
    return answered_project.default_database_url("concord_bench_agreement")


def build(*, answers: int, slug: str) -> int:
    """The project ``slug`` with ``answers`` current answers (``answers / 3`` items), reused when
    complete; returns its id. The researcher ``RESEARCHER`` is a member; each item has a gold
    sentence that 70 % of the answers pick alone (the others pick 0-2 sentences at random)."""
    return answered_project.build(
        answers=answers,
        slug=slug,
        name="Agreement benchmark",
        usernames="bench-agreement",
        researcher=RESEARCHER,
        gold_share=0.7,
    )


# --- measurements (each in its own process) -----------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _fresh_snapshot(project, *, compute: bool) -> dict:
    """Delete the project's default-filter snapshots and compute one (``compute``), timed."""
    from agreement import services
    from agreement.models import AgreementSnapshot
    from agreement.reports import gather as gather_module
    from agreement.reports.inputs import AnnotatorFilter, ReportOptions

    AgreementSnapshot.objects.filter(project=project).delete()
    timings = {}
    original = gather_module.gather

    def timed_gather(**kwargs):
        started = time.perf_counter()
        result = original(**kwargs)
        timings["gather_s"] = time.perf_counter() - started
        return result

    services.gather = timed_gather
    started = time.perf_counter()
    state = services.snapshot_request(
        project=project,
        annotator_filter=AnnotatorFilter(),
        options=ReportOptions(),
        inline=compute,
    )
    seconds = time.perf_counter() - started
    services.gather = original
    if state.snapshot is None or not state.fresh:
        raise SystemExit(f"the report was not computed: {state}")
    return {"seconds": seconds, **timings}


def worker(task: str, url: str, project_id: int) -> None:
    setup_django(url)
    from django.db import connection

    from annotation.models import Annotation, Item
    from projects.models import Project

    project = Project.objects.get(pk=project_id)
    connection.ensure_connection()
    setup_mb = peak_mb()
    result: dict = {"setup_mb": setup_mb}
    if task == "report":
        result.update(_fresh_snapshot(project, compute=True))
    elif task == "read":
        started = time.perf_counter()
        rows = list(
            Annotation.objects.filter(
                item__project=project, item__kind=Item.Kind.REGULAR, is_current=True
            )
            .order_by("id")
            .values_list("annotator_id", "item_id", "answer")
        )
        result["seconds"] = time.perf_counter() - started
        result["rows"] = len(rows)
    elif task == "dashboard":
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.test import Client

        # Static files are not collected here: plain storage instead of the manifest.
        settings.STORAGES = {
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }

        from agreement.models import AgreementSnapshot

        if not AgreementSnapshot.objects.filter(
            project=project, kind="report", status="done"
        ).exists():
            _fresh_snapshot(project, compute=True)
        client = Client()
        client.force_login(get_user_model().objects.get(username=RESEARCHER))
        path = f"/p/{project.slug}/agreement/"
        first = client.get(path, secure=True)
        if first.status_code != 200 or b"up to date" not in first.content:
            raise SystemExit(f"the dashboard is not fresh: {first.status_code}")
        rss_before = _rss_mb()
        times = []
        for _ in range(DASHBOARD_GETS):
            started = time.perf_counter()
            response = client.get(path, secure=True)
            times.append(time.perf_counter() - started)
            assert response.status_code == 200
        times.sort()
        result.update(
            {
                "p50_ms": 1000 * statistics.median(times),
                "p95_ms": 1000 * times[max(0, int(round(0.95 * len(times))) - 1)],
                "rss_before_mb": rss_before,
                "rss_after_mb": _rss_mb(),
                "bytes": len(first.content),
            }
        )
    result["peak_mb"] = peak_mb()
    print(json.dumps(result))


def _run(task: str, url: str, project_id: int) -> dict:
    return child(__file__, "--worker", task, url, str(project_id))


def _prepare(url: str, *, project_id: int | None, quick: bool, million: bool) -> dict:
    """Project ids and answers, building what is missing."""
    setup_django(url)
    from django.core.management import call_command

    from annotation.models import Annotation

    call_command("migrate", verbosity=0)
    answers = 30_000 if quick else 300_000
    if project_id is None:
        project_id = build(answers=answers, slug=f"bench-agreement-{answers}")
    else:  # a project built elsewhere (bench/scale.py): the benchmark's researcher joins it
        from django.contrib.auth import get_user_model

        from projects.models import Membership

        answers = Annotation.objects.filter(item__project_id=project_id, is_current=True).count()
        researcher, _ = get_user_model().objects.get_or_create(username=RESEARCHER)
        Membership.objects.get_or_create(
            project_id=project_id,
            user=researcher,
            defaults={"role": Membership.Role.RESEARCHER},
        )
    small_answers = max(answers // 10 // PER_ITEM * PER_ITEM, PER_ITEM)
    prepared = {
        "big": project_id,
        "answers": answers,
        "small": build(answers=small_answers, slug=f"bench-agreement-{small_answers}"),
        "small_answers": small_answers,
    }
    if million:
        prepared["million"] = build(answers=1_000_002, slug="bench-agreement-1000002")
    return prepared


def rows(
    *,
    project_id: int | None = None,
    database_url: str | None = None,
    quick: bool = False,
    million: bool = False,
) -> dict:
    """Report and dashboard figures for ``project_id`` (default: the benchmark's own project,
    built or reused) with their baselines from the same run. Returns ``{"answers", "report":
    {seconds, gather_s, peak_mb, read_s, read_peak_mb, vs_read, small_seconds, small_peak_mb,
    memory_ratio}, "dashboard": {p50_ms, p95_ms, peak_mb, rss_growth_mb, small_p95_ms,
    small_peak_mb, vs_small_p95, memory_ratio}, "million": {...} (with ``million``)}``."""
    url = database_url or default_database_url()
    ensure_database(url)
    # Django is set up in a child: a caller with its own Django (bench/scale.py) is not disturbed.
    ids = child(
        __file__,
        "--prepare",
        url,
        str(project_id or ""),
        "quick" if quick else "full",
        "million" if million else "",
        stderr=True,
    )
    big, small = ids["big"], ids["small"]
    report = _run("report", url, big)
    read = _run("read", url, big)
    small_report = _run("report", url, small)
    dashboard = _run("dashboard", url, big)
    small_dashboard = _run("dashboard", url, small)
    figures: dict = {
        "answers": ids["answers"],
        "small_answers": ids["small_answers"],
        "report": {
            "seconds": round(report["seconds"], 2),
            "gather_s": round(report["gather_s"], 2),
            "peak_mb": round(report["peak_mb"], 1),
            "read_s": round(read["seconds"], 2),
            "read_peak_mb": round(read["peak_mb"], 1),
            "vs_read": round(report["seconds"] / read["seconds"], 2),
            "small_seconds": round(small_report["seconds"], 2),
            "small_peak_mb": round(small_report["peak_mb"], 1),
            "memory_ratio": round(report["peak_mb"] / small_report["peak_mb"], 2),
        },
        "dashboard": {
            "p50_ms": round(dashboard["p50_ms"], 1),
            "p95_ms": round(dashboard["p95_ms"], 1),
            "peak_mb": round(dashboard["peak_mb"], 1),
            "rss_growth_mb": round(dashboard["rss_after_mb"] - dashboard["rss_before_mb"], 1),
            "page_kb": round(dashboard["bytes"] / 1024, 1),
            "small_p50_ms": round(small_dashboard["p50_ms"], 1),
            "small_p95_ms": round(small_dashboard["p95_ms"], 1),
            "small_peak_mb": round(small_dashboard["peak_mb"], 1),
            "vs_small_p95": round(dashboard["p95_ms"] / small_dashboard["p95_ms"], 2),
            "memory_ratio": round(dashboard["peak_mb"] / small_dashboard["peak_mb"], 2),
        },
    }
    if million:
        report_1m = _run("report", url, ids["million"])
        read_1m = _run("read", url, ids["million"])
        figures["million"] = {
            "seconds": round(report_1m["seconds"], 2),
            "gather_s": round(report_1m["gather_s"], 2),
            "peak_mb": round(report_1m["peak_mb"], 1),
            "read_s": round(read_1m["seconds"], 2),
            "read_peak_mb": round(read_1m["peak_mb"], 1),
            "vs_read": round(report_1m["seconds"] / read_1m["seconds"], 2),
            "memory_ratio": round(report_1m["peak_mb"] / report["peak_mb"], 2),
        }
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, task, url, project_id = sys.argv
        worker(task, url, int(project_id))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--prepare":
        _, _, url, project_id, mode, million = sys.argv
        result = _prepare(
            url,
            project_id=int(project_id) if project_id else None,
            quick=mode == "quick",
            million=million == "million",
        )
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30k answers instead of 300k")
    parser.add_argument("--million", action="store_true", help="also the report at 1M answers")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--project-id", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    f = rows(
        project_id=args.project_id,
        database_url=args.database_url,
        quick=args.quick,
        million=args.million,
    )
    r, d = f["report"], f["dashboard"]
    print(
        f"agreement report, {f['answers']:,} answers (worker process, 1,000 bootstrap replicates)"
    )
    print(
        f"  {r['seconds']:.2f} s (gather {r['gather_s']:.2f} s), peak {r['peak_mb']:.0f} MB; "
        f"plain read of the answers {r['read_s']:.2f} s, {r['read_peak_mb']:.0f} MB "
        f"-> report = {r['vs_read']:.2f}x the read"
    )
    print(
        f"  {f['small_answers']:,} answers: {r['small_seconds']:.2f} s, peak "
        f"{r['small_peak_mb']:.0f} MB -> memory ratio {r['memory_ratio']:.2f} at 10x the answers"
    )
    if "million" in f:
        m = f["million"]
        print(
            f"  1,000,002 answers: {m['seconds']:.2f} s (gather {m['gather_s']:.2f} s), peak "
            f"{m['peak_mb']:.0f} MB (target < 60 s, < 1.5 GB); plain read {m['read_s']:.2f} s, "
            f"{m['read_peak_mb']:.0f} MB; memory {m['memory_ratio']:.2f}x the 300k report's"
        )
    print(f"dashboard with a fresh snapshot, {DASHBOARD_GETS} GETs (target p95 < 300 ms)")
    print(
        f"  {f['answers']:,} answers: p50 {d['p50_ms']:.0f} ms, p95 {d['p95_ms']:.0f} ms, "
        f"peak {d['peak_mb']:.0f} MB, RSS growth over the GETs {d['rss_growth_mb']:.1f} MB, "
        f"page {d['page_kb']:.0f} kB"
    )
    print(
        f"  {f['small_answers']:,} answers: p50 {d['small_p50_ms']:.0f} ms, p95 "
        f"{d['small_p95_ms']:.0f} ms, peak {d['small_peak_mb']:.0f} MB -> p95 ratio "
        f"{d['vs_small_p95']:.2f}, memory ratio {d['memory_ratio']:.2f}"
    )
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
