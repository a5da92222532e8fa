"""Exports of 100k answers of every task type: rows/s and peak memory (issue 34: ">= 30k rows/s
each"; a questionnaire export of 100k answers ran at ~1k rows/s).

    .venv/bin/python bench/export_task_types.py [--answers 100000] [--only SLUG ...]
        [--database-url URL] [--label-studio-url URL --label-studio-token T]

For each registered task type it builds (or reuses) a project of ``--answers`` current answers
(2 per item, 30 annotators) in PostgreSQL, in bulk: items prepared once from the task type's
``demo_payload`` (its default config) and copied under new ids, each answer checked once by the
task type's own answer serializer. Then, each in a fresh process (its own peak memory): the JSONL
and the CSV download as the API streams it (``export_download``: rows, then the end line), to
/dev/null. Rows are export rows (a questionnaire writes one per question, claim review one per
claim, ranking one per criterion and system); rows/s and answers/s are both printed, with the
peak RSS (VmHWM) of the exporting process. Nothing asserts a timing.

The baseline, in the same run and the same way (a fresh process, to /dev/null): PostgreSQL's own
``COPY (…) TO STDOUT`` of each project's current answers with their item's JSON, in export order
(the data an export reads, as the database itself writes it fastest). Each export is printed as
a ratio of its answers/s to that baseline's (``vs COPY``), so that runs on machines of different
speed or load compare; the 30k rows/s target is flagged on the absolute figure.

With ``--label-studio-url`` and ``--label-studio-token`` it also imports ``--answers`` tasks,
each with one annotation (two choices and a number, like citation recovery's answer), into a new
Label Studio project and times its JSON and CSV exports through its API (``GET
/api/projects/ID/export?exportType=JSON|CSV``) in the same run; ``--label-studio-pid``: its
server process, for its peak RSS. docs/scale.md has figures.

``--before COMMIT`` (or a folder holding a copy of the code) makes each export with that code too,
alternately with this checkout's, on the same data, and prints the ratios and whether both wrote
the same bytes (the trailer's sha256); ``--rounds N`` keeps the best rows/s and least CPU of N.
The run of 29 Nov 2026 (08:21 UTC, ``--before`` main's 1882e12 ``--rounds 2``, load 7–10), best
of two, rows/s before → after: citation recovery JSONL 58,019 → 64,151, CSV 40,505 → 44,322;
claim review 103,760 → 117,300, 58,481 → 94,445; questionnaire 147,091 → 179,286, 88,572 →
127,496; ranking 256,834 → 290,720, 113,786 → 235,557; stance 36,360 → 41,949, 19,168 → 25,981;
argument structure 3,357 → 4,390, 2,860 → 6,786 (peak RSS 112–172 MB, as before; every export
the same bytes). docs/scale.md has the table, rows per CPU second and what keeps stance CSV and
argument structure under 30k.

The database defaults to ``$BENCH_DATABASE_URL``, else ``concord_bench_export_types`` on
``$BENCH_POSTGRES_URL`` (default postgres://postgres@127.0.0.1:5432/postgres), created and
migrated when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answered_project  # noqa: E402
from answered_project import child, setup_django  # noqa: E402
from scale_data import ensure_database, peak_mb  # noqa: E402

PER_ITEM = 2
ANNOTATORS = 30
TARGET_ROWS_PER_S = 30_000


# --- one valid answer per task type (checked by its answer serializer before use) ------------


def _answer(slug: str, item, n: int) -> dict:
    """A plausible answer to ``item`` (prepared from the task type's demo payload); ``n`` varies
    it. The bench names task types here, as a fixture would; the app never does."""
    prepared, payload = item.prepared, item.payload
    if slug == "citation_recovery":
        return {
            "sentences": [n % len(prepared["sentences"])],
            "none": False,
            "helpfulness": n % 101,
        }
    if slug == "claim_review":
        return {
            "claims": [
                {"id": c["id"], "action": "keep", "agreement": "agree", "label": c["system_label"]}
                for c in payload["claims"]
            ]
        }
    if slug == "ranking":
        keys = list(prepared["keys"])
        criteria = item.config["criteria"]
        rotated = keys[n % len(keys) :] + keys[: n % len(keys)]
        return {
            "order": keys,
            "ranks": {c["name"]: {k: r + 1 for r, k in enumerate(rotated)} for c in criteria},
        }
    if slug == "stance":
        return {
            "label": ["agree", "disagree", "neutral"][n % 3],
            "not_sure": False,
            "sentences": [{"index": t["index"], "label": "neutral"} for t in prepared["targets"]],
        }
    if slug == "argument_structure":
        return {
            "claim": payload["claim"],
            "evidence": [{"id": e["id"], "text": e["text"]} for e in payload["evidence"]],
            "steps": prepared["draft"],
        }
    if slug == "questionnaire":
        answer = {}
        for q in item.config["questions"]:
            kind = q["kind"]
            if kind == "pairwise":
                answer[q["id"]] = [-1, 0, 1][n % 3]
            elif kind == "likert":
                answer[q["id"]] = 1 + n % len(q["points"])
            elif kind == "single":
                answer[q["id"]] = q["options"][n % len(q["options"])]["value"]
            elif kind == "multiple":
                answer[q["id"]] = [q["options"][0]["value"]]
            elif kind == "slider":
                answer[q["id"]] = q.get("min", 0)
            else:
                answer[q["id"]] = "Clear and correct."
        return answer
    raise SystemExit(f"No benchmark answer for task type {slug!r}: add one in _answer().")


def build(slug: str, answers: int) -> int:
    """The project ``bench-export-<slug>-<answers>``, reused when complete; returns its id."""
    from types import SimpleNamespace

    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation import task_types
    from annotation.models import Annotation, Assignment
    from projects.models import Membership, Project

    project_slug = f"bench-export-{slug.replace('_', '-')}-{answers}"
    existing = Project.objects.filter(slug=project_slug).first()
    if existing is not None:
        if Annotation.objects.filter(item__project=existing, is_current=True).count() == answers:
            return existing.pk
        existing.delete()
    task_type = task_types.get(slug)
    config = task_type.validate_config({})
    User = get_user_model()
    started = time.perf_counter()
    with transaction.atomic():
        project = Project.objects.create(
            slug=project_slug,
            name=f"Export benchmark {slug} ({answers} answers)",
            task_type=slug,
            config=config,
            annotators_per_item=PER_ITEM,
        )
        users = []
        for a in range(ANNOTATORS):
            user, _ = User.objects.get_or_create(username=f"bench-export-types-{a}")
            users.append(user)
            Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        record = task_type.validate_payload(task_type.demo_payload())
        template = task_type.prepare(dict(record), config=config)[0]
        view = SimpleNamespace(
            payload=template.payload, prepared=template.prepared, gold=template.gold
        )
        view.project, view.config = project, config
        checked = []
        for n in range(6):  # a few distinct answers, each checked as an annotator's would be
            data = _answer(slug, view, n)
            serializer = task_type.answer_serializer(data=data, context={"item": view})
            if not serializer.is_valid():
                raise SystemExit(f"{slug}: benchmark answer refused: {serializer.errors}")
            checked.append(json.loads(json.dumps(serializer.validated_data)))
        items_count = answers // PER_ITEM
        item_ids = answered_project.bulk_items(
            project=project,
            templates=[template],
            count=items_count,
            prefix=slug,
            per_item=PER_ITEM,
        )
        base = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        sequence = [0] * ANNOTATORS
        assignments: list = []
        annotations: list = []

        def flush() -> None:
            Assignment.objects.bulk_create(assignments, batch_size=5000)
            for annotation in annotations:
                annotation.assignment_id = annotation.assignment.pk
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            assignments.clear()
            annotations.clear()

        for n, item_id in enumerate(item_ids):
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
                annotations.append(
                    Annotation(
                        assignment=assignment,
                        item_id=item_id,
                        annotator=users[a],
                        answer=checked[(n + k) % len(checked)],
                        version=1,
                        is_current=True,
                        time_spent_ms=4000 + n % 50_000,
                        reported_time_ms=4000 + n % 50_000,
                    )
                )
            if len(assignments) >= 15000:
                flush()
        flush()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"built {project_slug} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return project.pk


# --- measurement (each export in its own process) ----------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.bytes = 0
        self.out = open(os.devnull, "wb")  # noqa: SIM115

    def write(self, data: bytes) -> None:
        self.bytes += len(data)
        self.out.write(data)


def worker(url: str, project_id: int, fmt: str, code: str = "") -> None:
    setup_django(url, Path(code) if code else None)
    from projects.models import Project
    from studies.services import exports
    from studies.services.exports import export_download

    project = Project.objects.get(pk=project_id)
    sink, tail = Sink(), b""
    cpu = time.process_time()
    started = time.perf_counter()
    for chunk in export_download(project=project, fmt=fmt):
        sink.write(chunk)
        tail = (tail + chunk)[-512:]
    seconds = time.perf_counter() - started
    end = tail.splitlines()[-1]  # the end line: the export's row count
    if fmt == "jsonl":
        rows, sha256 = json.loads(end)["concord_export_end"].values()
    else:
        rows, sha256 = int(end.split(b"rows=")[1].split(b" ")[0]), end.split(b"sha256=")[1].decode()
    # This process's CPU time too: on a shared machine, rows per CPU second hardly move with the
    # load where rows per second do.
    cpu_seconds = time.process_time() - cpu
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "rows": rows,
                "bytes": sink.bytes,
                "sha256": sha256.strip(),
                "peak_mb": peak_mb(),
                "code": str(Path(exports.__file__).resolve().parents[2]),
            }
        )
    )


BASELINE_SQL = """
COPY (
    SELECT a.*, s.reserved_at, s.sequence, i.external_id, i.payload, i.prepared, i.gold
    FROM annotation_annotation a
    JOIN annotation_item i ON i.id = a.item_id
    JOIN annotation_assignment s ON s.id = a.assignment_id
    WHERE i.project_id = %s AND a.is_current
    ORDER BY i.position, i.id, s.sequence, a.id
) TO STDOUT WITH (FORMAT csv)
"""


def baseline(url: str, project_id: int) -> None:
    """The baseline: PostgreSQL's COPY of the project's current answers and their items' JSON."""
    setup_django(url)
    from django.db import connection

    sink = Sink()
    cpu = time.process_time()
    started = time.perf_counter()
    with connection.cursor() as cursor:
        sql = cursor.mogrify(BASELINE_SQL, [project_id]).decode()
        cursor.copy_expert(sql, sink)
        cursor.execute(
            "SELECT count(*) FROM annotation_annotation a JOIN annotation_item i"
            " ON i.id = a.item_id WHERE i.project_id = %s AND a.is_current",
            [project_id],
        )
        (answers,) = cursor.fetchone()
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": time.process_time() - cpu,
                "rows": answers,
                "bytes": sink.bytes,
                "peak_mb": peak_mb(),
            }
        )
    )


def prepare(url: str, slugs: list[str], answers: int) -> dict[str, int]:
    setup_django(url)
    from django.core.management import call_command

    from annotation import task_types

    call_command("migrate", verbosity=0)
    known = [t.slug for t in task_types.all_task_types()]
    chosen = slugs or known
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise SystemExit(f"Unknown task types: {', '.join(unknown)} (known: {', '.join(known)})")
    built = {slug: build(slug, answers) for slug in chosen}
    print(json.dumps(built))
    return built


# --- Label Studio (over HTTP) -----------------------------------------------------------------


def _peak_of(pid: int | None) -> float | None:
    """Peak RSS (VmHWM, MB) of process ``pid`` and its children (the largest one)."""
    if not pid:
        return None
    pids, peak = [pid], 0.0
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            continue
    return round(peak, 1)


def label_studio(url: str, token: str, answers: int, pid: int | None) -> dict:
    """Import ``answers`` tasks with one annotation each into a new Label Studio project, then
    time its JSON and CSV exports (the whole response read)."""
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    config = (
        '<View><Text name="text" value="$text"/>'
        '<Choices name="sentences" toName="text" choice="multiple">'
        '<Choice value="s0"/><Choice value="s1"/><Choice value="s2"/></Choices>'
        '<Number name="helpfulness" toName="text" min="0" max="100"/></View>'
    )
    project = session.post(
        f"{url}/api/projects/",
        json={"title": f"Export benchmark {answers}", "label_config": config},
        timeout=60,
    )
    project.raise_for_status()
    project_id = project.json()["id"]
    text = "The city added 40 km of lanes in 2023 [1]. It had 80 km before. " * 3
    tasks = [
        {
            "data": {"text": text, "id": f"t{n}"},
            "annotations": [
                {
                    "result": [
                        {
                            "from_name": "sentences",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": [f"s{n % 3}"]},
                        },
                        {
                            "from_name": "helpfulness",
                            "to_name": "text",
                            "type": "number",
                            "value": {"number": n % 101},
                        },
                    ]
                }
            ],
        }
        for n in range(answers)
    ]
    started = time.perf_counter()
    for start in range(0, answers, 20_000):
        response = session.post(
            f"{url}/api/projects/{project_id}/import",
            json=tasks[start : start + 20_000],
            timeout=1800,
        )
        response.raise_for_status()
    imported = time.perf_counter() - started
    figures: dict = {"project": project_id, "import_s": round(imported, 1)}
    for kind in ("JSON", "CSV"):
        started = time.perf_counter()
        size = 0
        with session.get(
            f"{url}/api/projects/{project_id}/export",
            params={"exportType": kind},
            stream=True,
            timeout=3600,
        ) as response:
            response.raise_for_status()
            for chunk in response.iter_content(1 << 20):
                size += len(chunk)
        seconds = time.perf_counter() - started
        figures[kind.lower()] = {
            "seconds": round(seconds, 2),
            "rows_per_s": round(answers / seconds),
            "megabytes": round(size / 1e6, 1),
            "server_peak_mb": _peak_of(pid),
        }
    return figures


def checkout_of(commit: str) -> str:
    """The code of ``commit`` in a temporary folder (``git archive``), for ``--before``; a
    folder is taken as it is (a copy of the code made before)."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    if Path(commit).is_dir():
        return str(Path(commit).resolve())
    folder = tempfile.mkdtemp(prefix="concord-before-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    archive = subprocess.run(
        ["git", "archive", commit], cwd=answered_project.REPO, check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def _figures(run: dict, copy: dict, copy_rate: float) -> dict:
    rows_per_s = run["rows"] / run["seconds"]
    return {
        **run,
        "rows_per_s": round(rows_per_s),
        "answers_per_s": round(copy["rows"] / run["seconds"]),
        "vs_copy": round(copy["rows"] / run["seconds"] / copy_rate, 3),
        "load": round(os.getloadavg()[0], 1),
    }


def _print_run(slug: str, fmt: str, label: str, run: dict, figures: dict) -> None:
    rows_per_s = figures["rows_per_s"]
    flag = "" if rows_per_s >= TARGET_ROWS_PER_S else "  < 30k rows/s"
    print(
        f"{slug:<20} {fmt:<5} {label:<6} {run['rows']:>9,} {rows_per_s:>9,.0f} "
        f"{figures['answers_per_s']:>10,.0f} {figures['vs_copy']:>7.2f}× "
        f"{run['rows'] / run['cpu_seconds']:>10,.0f} {run['bytes'] / 1e6:>7.1f} "
        f"{run['peak_mb']:>6.0f} MB{flag}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, url, project_id, fmt, *code = sys.argv
        worker(url, int(project_id), fmt, *code)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--baseline":
        _, _, url, project_id = sys.argv
        baseline(url, int(project_id))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--prepare":
        _, _, url, answers, *slugs = sys.argv
        prepare(url, slugs, int(answers))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--only", nargs="*", default=[], help="task type slugs (default: all)")
    parser.add_argument("--database-url")
    parser.add_argument("--label-studio-url")
    parser.add_argument("--label-studio-token")
    parser.add_argument("--label-studio-pid", type=int)
    parser.add_argument(
        "--before",
        metavar="COMMIT",
        help="also export with the code of COMMIT (git archive into a temporary folder; or a "
        "folder holding a copy of the code), each "
        "export beside this checkout's, alternately, on the same data: the same-run baseline",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="exports of each kind (the best rows/s and the least CPU of them are kept: on a "
        "shared machine one export's wall time moves with the load)",
    )
    args = parser.parse_args()
    url = args.database_url or answered_project.default_database_url("concord_bench_export_types")
    ensure_database(url)
    built = child(__file__, "--prepare", url, str(args.answers), *args.only, stderr=True)
    before = checkout_of(args.before) if args.before else None
    load = os.getloadavg()[0]
    print(f"{args.answers:,} answers per task type; load {load:.1f}")
    if before:
        print(f"'before': the code of {args.before} ({before}), run alternately with this one")
    print(
        f"{'task type':<20} {'fmt':<5} {'code':<6} {'rows':>9} {'rows/s':>9} {'answers/s':>10} "
        f"{'vs COPY':>8} {'rows/cpu-s':>10} {'MB':>7} {'peak RSS':>9}"
    )
    results: dict = {}
    for slug, project_id in built.items():
        copy = child(__file__, "--baseline", url, str(project_id))
        copy_rate = copy["rows"] / copy["seconds"]
        results[f"{slug}/copy"] = {**copy, "rows_per_s": round(copy_rate)}
        print(
            f"{slug:<20} {'COPY':<5} {'':<6} {copy['rows']:>9,} {copy_rate:>9,.0f} "
            f"{copy_rate:>10,.0f} {1:>7.2f}× {'':>10} {copy['bytes'] / 1e6:>7.1f} "
            f"{copy['peak_mb']:>6.0f} MB"
        )
        for fmt in ("jsonl", "csv"):
            codes = [("before", before), ("after", None)] if before else [("", None)]
            runs: dict[str, list[dict]] = {label: [] for label, _ in codes}
            for n in range(args.rounds):  # alternately: before first, then after first…
                for label, code in codes if n % 2 == 0 else codes[::-1]:
                    run = child(
                        __file__,
                        "--worker",
                        url,
                        str(project_id),
                        fmt,
                        *([code] if code else []),
                        cwd=code or answered_project.REPO,
                    )
                    runs[label].append(_figures(run, copy, copy_rate))
                    _print_run(slug, fmt, label, run, runs[label][-1])
            for label, done in runs.items():  # the best of the rounds: the least disturbed
                key = f"{slug}/{fmt}" + (f"/{label}" if label else "")
                results[key] = {
                    **max(done, key=lambda figures: figures["rows_per_s"]),
                    "cpu_seconds": min(figures["cpu_seconds"] for figures in done),
                    "rounds_rows_per_s": [figures["rows_per_s"] for figures in done],
                }
            if before:
                if results[f"{slug}/{fmt}/before"]["code"] != str(Path(before).resolve()):
                    raise SystemExit("the 'before' export did not run the code of --before")
                same = (
                    results[f"{slug}/{fmt}/before"]["sha256"]
                    == results[f"{slug}/{fmt}/after"]["sha256"]
                )
                ratio = results[f"{slug}/{fmt}/after"]["rows_per_s"] / max(
                    results[f"{slug}/{fmt}/before"]["rows_per_s"], 1
                )
                cpu_ratio = results[f"{slug}/{fmt}/before"]["cpu_seconds"] / max(
                    results[f"{slug}/{fmt}/after"]["cpu_seconds"], 1e-9
                )
                results[f"{slug}/{fmt}/after_vs_before"] = {
                    "rows_per_s": round(ratio, 2),
                    "cpu": round(cpu_ratio, 2),
                    "same_bytes": same,
                }
                print(
                    f"{slug:<20} {fmt:<5} {'ratio':<6} after/before: {ratio:.2f}× rows/s, "
                    f"{cpu_ratio:.2f}× less CPU; "
                    + ("the same bytes (sha256)" if same else "THE BYTES DIFFER")
                )
    if args.label_studio_url:
        if not args.label_studio_token:
            raise SystemExit("--label-studio-url needs --label-studio-token")
        ls = label_studio(
            args.label_studio_url, args.label_studio_token, args.answers, args.label_studio_pid
        )
        results["label_studio"] = ls
        print(f"Label Studio: import {ls['import_s']} s")
        for kind in ("json", "csv"):
            f = ls[kind]
            print(
                f"label_studio        {kind:<5} {args.answers:>9,} {f['rows_per_s']:>9,} "
                f"{f['rows_per_s']:>10,} {f['megabytes']:>7.1f} "
                f"{f['server_peak_mb'] or 0:>6.0f} MB  ({f['seconds']} s)"
            )
    else:
        print("No Label Studio given (--label-studio-url/--label-studio-token): Concord only.")
    print(f"load {os.getloadavg()[0]:.1f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
