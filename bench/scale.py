"""Scale benchmark (issue 16): the annotator path on a 100k-item project as it fills.

    .venv/bin/python bench/scale.py [--quick] [--items 100000] [--database concord_scale_bench]
        [--vacuum]

Builds, in a scratch PostgreSQL database (``bench/scale_data.py``; dropped at the end unless
``--keep``), a 100k-item citation-recovery project (``--quick``: 10k) with N = 3, and fills it in
bulk to 0, 50, 90, 99 and 100 % of its items full (100 %: 300k answers). Every row is printed as a
ratio against a baseline measured in the same run, on the same machine, interleaved sample by
sample (this 2-core machine is shared, so absolute times move; ratios much less). After each bulk
fill the data settles as a project filled over days has (``scale_data.settle``: no VACUUM, but the
fill's old row versions dead to every snapshot and their index entries marked dead by one walk of
the open queue; ``--vacuum``: then VACUUM, as a production PostgreSQL's autovacuum does in time);
the seconds it waited for other sessions' transactions are printed:

- next p50 at each fill level, against a fresh 100-item project (target ≤ 1.2×);
- queries per next, against the 100-item project (target 1.0×: constant);
- the assignment read that carries "item k of n" (counts), p50 at 99 %, against the 100-item
  project, and how many of its queries COUNT the project's items (target: none);
- "nothing left" when every item is full, against a next on the 100-item project (target ≤ 1×);
- 20 annotators (threads, next + submit) against gunicorn with 3 sync workers when gunicorn is
  in the venv (else the in-process test client): request p95 on the 100k project at 99 % full
  against a 100-item project, rounds alternated (target ≤ 1×), and throughput per worker.

Then ``bench/import_speed.py`` (the upload path at 10k items: items/s against reading and
parsing the file, peak memory; Label Studio's items/s is bench/vs_label_studio.py's; in its own
scratch database ``<--database>_import``, dropped after),
``bench/scale_export.py`` and ``bench/scale_agreement.py`` (``rows(**context)``) print their
rows against the same 300k-answer project, each with baselines from the same run, and
``bench/researcher_pages.py`` every researcher page at ``--items`` against 100 items (p50, p95,
the ratio and the queries; its own pair of projects, built in the same database).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import concord_http  # noqa: E402  (gunicorn start, shared with the HTTP benchmarks)
import scale_data  # noqa: E402  (the sibling module, also runnable on its own)

REPO = Path(__file__).resolve().parents[1]
ANSWER = scale_data.ANSWER
FILL_LEVELS = (0.0, 0.5, 0.9, 0.99)


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def ratio_row(name: str, value: float, baseline: float, unit: str, target: str) -> str:
    ratio = value / baseline if baseline else float("inf")
    return f"{name:<58} {ratio:6.2f}×   ({value:.1f} vs {baseline:.1f} {unit}; target {target})"


class Annotator:
    """An annotator with an in-process API client (authenticated as in the tests)."""

    def __init__(self, user, project) -> None:
        from rest_framework.test import APIClient

        self.user = user
        self.project = project
        self.client = APIClient()
        self.client.force_authenticate(user)

    def next(self):
        return self.client.post(f"/api/projects/{self.project.slug}/next/")

    def submit(self, assignment_id: int) -> None:
        from annotation import selectors, services

        assignment = selectors.own_assignment(user=self.user, assignment_id=assignment_id)
        services.annotation_submit(assignment=assignment, answer=ANSWER)


def timers(project, count: int) -> list[Annotator]:
    return [Annotator(u, project) for u in scale_data.annotators("timer", count, project)]


def timed(call) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result


def next_samples(groups: list[list[Annotator]], samples: int, *, expect=(200, 200)) -> list:
    """For each group, ``samples`` next calls (ms), interleaved across the groups and rotating
    through each group's annotators; each reserved item is submitted (untimed) so that the
    following next reserves again. ``expect``: the status each group's next must answer (204:
    nothing left)."""
    times: list[list[float]] = [[] for _ in groups]
    for k in range(samples + 2):
        order = list(enumerate(groups))
        if k % 2:
            order.reverse()  # neither side always runs first
        for index, group in order:
            annotator = group[k % len(group)]
            ms, response = timed(annotator.next)
            if response.status_code != expect[index]:
                raise RuntimeError(
                    f"next answered {response.status_code}, expected {expect[index]}"
                )
            if k >= 2:  # two warm-up rounds
                times[index].append(ms)
            if response.status_code == 200:
                annotator.submit(response.data["id"])
    return times


def queries_of(call) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        call()
    return [q["sql"] for q in queries.captured_queries]


def counting_items(sql: list[str]) -> int:
    return sum(1 for s in sql if "COUNT(" in s.upper() and 'FROM "annotation_item"' in s)


def small_project(tag: str, timer_count: int):
    project = scale_data.build_project(f"small-{tag}", 100)
    return project, timers(project, timer_count)


def queries_and_counts(big_timers, small_timers, samples: int, emit) -> None:
    """Queries per next, and the assignment read (item k of n) p50, big vs small."""
    big_sql = queries_of(lambda: big_timers[0].submit(big_timers[0].next().data["id"]))
    small_sql = queries_of(lambda: small_timers[0].submit(small_timers[0].next().data["id"]))
    next_big = queries_of(big_timers[1].next)
    next_small = queries_of(small_timers[1].next)
    emit(
        ratio_row(
            "queries per next at 99 % vs 100-item project",
            len(next_big),
            len(next_small),
            "queries",
            "1.0×",
        )
        + f"  [next + submit: {len(big_sql)} vs {len(small_sql)}]"
    )
    # The assignment read (item k of n): reopen the item just reserved.
    read_big, read_small = [], []
    big_id = big_timers[1].next().data["id"]
    small_id = small_timers[1].next().data["id"]
    for k in range(samples):
        pairs = [(big_timers[1], big_id, read_big), (small_timers[1], small_id, read_small)]
        for annotator, assignment, bucket in pairs if k % 2 else reversed(pairs):
            ms, _ = timed(lambda a=annotator, i=assignment: a.client.get(f"/api/assignments/{i}/"))
            bucket.append(ms)
    read_sql = queries_of(lambda: big_timers[1].client.get(f"/api/assignments/{big_id}/"))
    emit(
        ratio_row(
            "assignment read (with counts) p50 at 99 % vs 100-item",
            p50(read_big),
            p50(read_small),
            "ms",
            "≤ 1.2×",
        )
        + f"  [COUNTs over items: next {counting_items(next_big)}, read "
        f"{counting_items(read_sql)}]"
    )
    big_timers[1].submit(big_id)
    small_timers[1].submit(small_id)


# --- 20 annotators against gunicorn ----------------------------------------------------------


class Server:
    """gunicorn with 3 sync workers on the scratch database, or None without gunicorn."""

    def __init__(self, database_url: str) -> None:
        self.process = None
        if shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None:
            return
        env = {**os.environ, **scale_data.server_environment(database_url)}
        env.pop("REDIS_URL", None)
        self.process, self.port = concord_http.serve(checkout=REPO, env=env, workers=3)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


def http_worker(base: str, slug: str, key: str, cycles: int, out: list, start) -> None:
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Token {key}"
    start.wait()
    for _ in range(cycles):
        began = time.perf_counter()
        response = session.post(f"{base}/api/projects/{slug}/next/", json={})
        out.append((time.perf_counter() - began) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"next answered {response.status_code}: {response.text[:200]}")
        assignment = response.json()["id"]
        began = time.perf_counter()
        response = session.post(
            f"{base}/api/assignments/{assignment}/submit/", json={"answer": ANSWER}
        )
        out.append((time.perf_counter() - began) * 1000)
        if response.status_code not in (200, 201):
            raise RuntimeError(f"submit answered {response.status_code}: {response.text[:200]}")


def client_worker(base, slug, annotator: Annotator, cycles, out, start) -> None:
    from django.db import connections

    start.wait()
    try:
        for _ in range(cycles):
            ms, response = timed(annotator.next)
            out.append(ms)
            if response.status_code != 200:
                raise RuntimeError(f"next answered {response.status_code}")
            assignment = response.data["id"]
            ms, response = timed(
                lambda a=assignment: annotator.client.post(
                    f"/api/assignments/{a}/submit/", {"answer": ANSWER}, format="json"
                )
            )
            out.append(ms)
    finally:
        connections.close_all()


def load_round(server, project, users, cycles: int) -> tuple[list[float], float]:
    """All ``users`` at once, ``cycles`` next + submit each; (request latencies ms, wall s)."""
    start = threading.Barrier(len(users) + 1)
    outputs = [[] for _ in users]
    errors: list[str] = []
    threads = []
    for user, out in zip(users, outputs, strict=True):
        if server.process is not None:
            from knox.models import AuthToken

            _, key = AuthToken.objects.create(user)
            args = (server.url, project.slug, key, cycles, out, start)
            target = http_worker
        else:
            args = ("", project.slug, Annotator(user, project), cycles, out, start)
            target = client_worker

        def run(target=target, args=args):
            try:
                target(*args)
            except Exception as exc:
                errors.append(repr(exc))

        threads.append(threading.Thread(target=run))
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"load round failed: {errors[0]}")
    return [ms for out in outputs for ms in out], wall


# --- the run ---------------------------------------------------------------------------------


def _export_lines(figures: dict) -> list[str]:
    lines = []
    for fmt in ("jsonl", "csv"):
        f = figures[fmt]
        lines.append(
            f"export {f['rows']:,} rows {fmt}: {f['rows_per_s']:,} rows/s (target ≥ 30k); "
            f"time vs PostgreSQL COPY of the same rows {f['vs_copy']}× "
            f"(COPY {f['copy_rows_per_s']:,} rows/s); {f['rows_per_cpu_s']:,} rows per CPU-second; "
            f"peak {f['peak_mb']} MB vs {f['small_peak_mb']} MB at {f['small_rows']:,} rows "
            f"= {f['memory_ratio']}× (flat: ≈ 1)"
        )
    return lines


def _agreement_lines(figures: dict) -> list[str]:
    r, d = figures["report"], figures["dashboard"]
    lines = [
        f"agreement report {figures['answers']:,} answers: {r['seconds']} s, peak {r['peak_mb']} MB; "
        f"vs reading the answers {r['vs_read']}×; memory vs {figures['small_answers']:,} answers "
        f"{r['memory_ratio']}×",
        f"dashboard with a fresh snapshot, {figures['answers']:,} answers: p95 {d['p95_ms']} ms "
        f"(target < 300 ms) vs {d['small_p95_ms']} ms at {figures['small_answers']:,} = "
        f"{d['vs_small_p95']}×; web memory {d['memory_ratio']}× (growth {d['rss_growth_mb']} MB)",
    ]
    if "million" in figures:
        m = figures["million"]
        lines.append(
            "agreement report 1M answers: "
            + ", ".join(f"{key} {value}" for key, value in m.items())
            + " (target < 60 s, < 1.5 GB)"
        )
    return lines


def _import_lines(figures: dict) -> list[str]:
    return [
        f"import through the upload path, {f['items']:,} items: {f['items_per_s']:,.0f} items/s, "
        f"{f['vs_parse']}× the time to read and parse the file; peak {f['peak_mb']:.0f} MB "
        f"(target ≤ 500 MB at 100k; vs Label Studio: bench/vs_label_studio.py)"
        for f in figures["sizes"]
    ]


FORMATTERS = {
    "import_speed": _import_lines,
    "scale_export": _export_lines,
    "scale_agreement": _agreement_lines,
    # issue 31: every researcher page at ``items`` vs 100 items (its own pair of projects)
    "researcher_pages": list,
}


def other_rows(context: dict) -> None:
    """Rows of the import, export and agreement benchmarks (each builds or reuses its own
    scratch data and measures its baselines in the same run)."""
    for name, lines in FORMATTERS.items():
        if not (Path(__file__).parent / f"{name}.py").exists():
            print(f"{name}: bench/{name}.py is missing; its rows are skipped")
            continue
        module = importlib.import_module(name)
        accepted = inspect.signature(module.rows).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
        kwargs = {k: v for k, v in context.items() if takes_all or k in accepted}
        started = time.perf_counter()
        for line in lines(module.rows(**kwargs)):
            print(line, flush=True)
        print(f"  [{name}: {time.perf_counter() - started:.0f} s]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k items, fewer samples")
    parser.add_argument("--items", type=int, default=None)
    parser.add_argument("--samples", type=int, default=None, help="next calls per fill level")
    parser.add_argument("--database", default="concord_scale_bench")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--vacuum",
        action="store_true",
        help="VACUUM after each fill, as a production PostgreSQL's autovacuum does in time",
    )
    args = parser.parse_args()
    items = args.items or (10_000 if args.quick else 100_000)
    samples = args.samples or (12 if args.quick else 40)
    cycles, rounds = (4, 1) if args.quick else (6, 2)
    run_started = time.perf_counter()

    url = scale_data.scratch_database(args.database)
    scale_data.setup_django(url)
    from django.conf import settings

    settings.DEBUG = False
    big = scale_data.build_project("scale-big", items)
    big_timers = timers(big, 6)
    print(
        f"# scale benchmark: {items} items, N = 3, PostgreSQL ({args.database}); "
        f"built in {time.perf_counter() - run_started:.0f} s; baselines: 100-item projects "
        "measured interleaved in the same run"
        + ("; VACUUM after each fill (--vacuum)" if args.vacuum else "; no VACUUM after the fills")
    )
    rows: list[str] = []

    def emit(row: str) -> None:
        rows.append(row)
        print(row, flush=True)

    for level in FILL_LEVELS:
        step = time.perf_counter()
        written = scale_data.fill_to(big, round(items * level), vacuum=args.vacuum)
        small, small_timers = small_project(f"fill{round(level * 100)}", 6)
        big_times, small_times = next_samples([big_timers, small_timers], samples)
        emit(
            ratio_row(
                f"next p50 at {level:.0%} full ({items // 1000}k) vs 100-item project",
                p50(big_times),
                p50(small_times),
                "ms",
                "≤ 1.2×",
            )
            + f"  [fill +{written} answers, {time.perf_counter() - step:.0f} s, settled "
            f"{getattr(big, '_settled_s', 0):.1f} s]"
        )

    # Still at 99 % full: queries per next, and the assignment read with its counts.
    queries_and_counts(big_timers, small_timers, samples, emit)

    # 20 annotators, 3 sync workers, at 99 % full.
    step = time.perf_counter()
    server = Server(url)
    kind = "gunicorn, 3 sync workers" if server.process else "test client (no gunicorn)"
    load_users = scale_data.annotators("load", 20, big)
    big_lat, small_lat, big_wall, small_wall, big_n, small_n = [], [], 0.0, 0.0, 0, 0
    try:
        for r in range(rounds):
            small = scale_data.build_project(f"small-load{r}", 100)
            small_users = scale_data.annotators("load", 20, small)
            for project, users, side in ((small, small_users, "small"), (big, load_users, "big")):
                latencies, wall = load_round(server, project, users, cycles)
                if side == "big":
                    big_lat += latencies
                    big_wall += wall
                    big_n += len(latencies)
                else:
                    small_lat += latencies
                    small_wall += wall
                    small_n += len(latencies)
    finally:
        server.stop()
    emit(
        ratio_row(
            f"20 annotators p95 at 99 % ({kind}) vs 100-item",
            p95(big_lat),
            p95(small_lat),
            "ms",
            "≤ 1×",
        )
        + f"  [{time.perf_counter() - step:.0f} s]"
    )
    emit(
        ratio_row(
            "20 annotators throughput per worker at 99 % vs 100-item",
            big_n / big_wall / 3,
            small_n / small_wall / 3,
            "req/s",
            "≥ 1× here; issue: ≥ 1.5× of 12-22 req/s per worker before",
        )
    )

    # Every item full (300k answers at 100k items): "nothing left" against a next.
    step = time.perf_counter()
    scale_data.fill_to(big, items, vacuum=args.vacuum)
    small, small_timers = small_project("empty", 6)
    done = timers(big, 6)
    nothing, nexts = next_samples([done, small_timers], samples, expect=(204, 200))
    emit(
        ratio_row(
            f'"nothing left" at 100 % full ({items // 1000}k) vs a next (100-item)',
            p50(nothing),
            p50(nexts),
            "ms",
            "≤ 1×",
        )
        + f"  [{time.perf_counter() - step:.0f} s]"
    )

    from annotation.selectors import project_counts

    counts = project_counts(project=big)
    print(f"# big project now: {counts}")
    other_rows(
        {
            "project": big,
            "project_id": big.pk,
            "slug": big.slug,
            "database_url": url,
            # import_speed's scratch database (it drops and recreates it): never the one above
            "database": f"{args.database}_import",
            "quick": args.quick,
            "items": items,
        }
    )
    print(f"# total {time.perf_counter() - run_started:.0f} s")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        scale_data.drop_database(args.database)


if __name__ == "__main__":
    main()
