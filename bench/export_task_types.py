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

A task type that stores its export columns (``export_columns_stored``: argument structure) has
them made first as a worker makes them after answers arrive (``export_columns_prepare``, the
beat task ``studies.prepare_export_columns``): the stored columns and metrics emptied, then the
preparation timed in a fresh process (answers/s, peak RSS: the scorer's model is loaded there)
and printed above the exports, which then only read them. ``--unprepared`` leaves them as they
are instead (an export then makes and stores what is missing, as without a worker).

The baseline, in the same run and the same way (a fresh process, to /dev/null): PostgreSQL's own
``COPY (…) TO STDOUT`` of each project's current answers with their item's JSON, in export order
(the data an export reads, as the database itself writes it fastest). Each export is printed as
a ratio of its answers/s to that baseline's (``vs COPY``), so that runs on machines of different
speed or load compare; the 30k rows/s target is flagged on the absolute figure.

With ``--label-studio-url`` and ``--label-studio-token`` (a legacy ``Token`` of a running Label
Studio) each task type's project is also put into a new Label Studio project, the same items and
the same answers (each item a task, each answer an annotation, imported inline with the tasks:
``POST /api/projects/ID/import``, 5,000 tasks a request; not timed against anything), and Label
Studio's exports of it are timed in the same run, printed under Concord's rows of that type:
``JSON``, what the project's Export dialog does (``GET /api/projects/ID/export?exportType=JSON``),
``CSV`` likewise, and ``snapshot``, the snapshot API the dialog points to for large projects
(``POST /api/projects/ID/exports/``, then its ``download``); ``--label-studio-exports`` picks.
Each Label Studio figure is annotations/s (its rows counted in the bytes received: JSON rows are
tasks, CSV rows annotations), with the largest RSS of its server's processes sampled every 50 ms
during the export and the most one of them grew (``--label-studio-pid``: gunicorn's master; its
workers are not restarted), and the load average. Mirrors
(``HAND_MIRRORS``): questionnaire and ranking go in as Concord's own Label Studio export and
labeling config of the project; citation recovery as Choices (its sentences) + Number; stance as
Choices + one Choices per target sentence; claim review and argument structure are not compared.
A closing table puts Concord's answers/s beside Label Studio's annotations/s per type.

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


def columns_prepared(url: str, project_id: int) -> None:
    """What a worker does after answers arrive for a task type that stores its export columns
    (``studies.prepare_export_columns``): the project's stored columns (and argument
    structure's stored metrics) emptied first, as after a bulk arrival, then
    ``export_columns_prepare`` timed, in this fresh process (its peak memory: the scorer's
    model is loaded here, not in the process that exports)."""
    setup_django(url)
    from django.apps import apps

    from annotation import task_types
    from projects.models import Project
    from studies.models import ReadyExportColumns
    from studies.services.exports import export_columns_prepare

    project = Project.objects.get(pk=project_id)
    if not task_types.get(project.task_type).export_columns_stored:
        print(json.dumps({"stored_columns": False}))
        return
    ReadyExportColumns.objects.filter(annotation__item__project=project).delete()
    if apps.is_installed("task_types.argument_structure"):
        metrics = apps.get_model("argument_structure", "StoredMetrics")
        metrics.objects.filter(annotation__item__project=project).delete()
    cpu = time.process_time()
    started = time.perf_counter()
    done = export_columns_prepare(project=project)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "stored_columns": True,
                "seconds": seconds,
                "cpu_seconds": time.process_time() - cpu,
                "answers": done.answers,
                "stored": done.stored,
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

# How each Concord task type is mirrored in Label Studio. A task type that writes Label Studio
# files itself (``export_formats`` "label-studio" and "label-studio-config": questionnaire,
# ranking) is put into Label Studio as Concord exports it: its own labeling config and its own
# Label Studio JSON export of the very project just measured. The others get a hand-made mirror
# here (the bench names task types, as a fixture would), built from the same project's items and
# answers: citation recovery as Choices (the explanation's sentences, several allowed) + Number
# (helpfulness); stance as Choices (the stance) + one Choices per target sentence (its label).
# Claim review and argument structure have no natural Label Studio mirror and are not compared.
HAND_MIRRORS = {
    "citation_recovery": "Text claim + Text explanation; Choices (multiple) of its sentences, "
    "Number helpfulness",
    "stance": "Text claim + Text response; Choices stance; Choices label per target sentence",
}
LS_CHUNK_TASKS = 5_000  # tasks per import request


def _ls_config_and_task(slug: str, payload: dict, prepared: dict) -> tuple[str, dict]:
    """The hand-made mirror's labeling config and a task's data, for an item of ``slug``."""
    from xml.sax.saxutils import quoteattr

    if slug == "citation_recovery":
        choices = "".join(
            f"<Choice value={quoteattr(f'sentence {i + 1}')}/>"
            for i in range(len(prepared["sentences"]))
        )
        config = (
            '<View><Text name="claim" value="$claim"/><Text name="explanation" '
            'value="$explanation"/><Choices name="sentences" toName="explanation" '
            f'choice="multiple">{choices}</Choices><Number name="helpfulness" '
            'toName="explanation" min="0" max="100"/></View>'
        )
        return config, {"claim": payload["claim"], "explanation": payload["explanation"]}
    if slug == "stance":
        stances = '<Choice value="agree"/><Choice value="disagree"/><Choice value="neutral"/>'
        parts = [
            '<View><Text name="claim" value="$claim"/><Text name="response" value="$response"/>',
            f'<Choices name="stance" toName="response">{stances}</Choices>',
        ]
        data = {"claim": payload["claim"], "response": payload["response"]}
        for t in prepared["targets"]:
            i = t["index"]
            parts.append(
                f'<Text name="sentence_{i}" value="$sentence_{i}"/>'
                f'<Choices name="label_{i}" toName="sentence_{i}">{stances}</Choices>'
            )
            data[f"sentence_{i}"] = prepared["sentences"][i]
        return "".join(parts) + "</View>", data
    raise SystemExit(f"No Label Studio mirror for {slug!r}")


def _ls_results(slug: str, answer: dict) -> list[dict]:
    """A Concord answer of ``slug`` as the hand-made mirror's Label Studio results."""
    if slug == "citation_recovery":
        return [
            {
                "from_name": "sentences",
                "to_name": "explanation",
                "type": "choices",
                "value": {"choices": [f"sentence {i + 1}" for i in answer["sentences"]]},
            },
            {
                "from_name": "helpfulness",
                "to_name": "explanation",
                "type": "number",
                "value": {"number": answer["helpfulness"]},
            },
        ]
    results = [
        {
            "from_name": "stance",
            "to_name": "response",
            "type": "choices",
            "value": {"choices": [answer["label"]]},
        }
    ]
    for s in answer["sentences"]:
        results.append(
            {
                "from_name": f"label_{s['index']}",
                "to_name": f"sentence_{s['index']}",
                "type": "choices",
                "value": {"choices": [s["label"]]},
            }
        )
    return results


def ls_source(url: str, project_id: int, out: str) -> None:
    """Writes the project as Label Studio tasks with their annotations (a JSON list) to ``out``
    and prints the labeling config and how it was made (see ``HAND_MIRRORS``)."""
    setup_django(url)
    from annotation import task_types
    from annotation.models import Annotation, Item
    from projects.models import Project

    project = Project.objects.get(pk=project_id)
    formats = task_types.get(project.task_type).export_formats
    tasks: list[dict] = []
    if "label-studio" in formats and "label-studio-config" in formats:
        config = "".join(formats["label-studio-config"].stream(project))
        exported = json.loads("".join(formats["label-studio"].stream(project)))
        for task in exported:  # Label Studio numbers tasks and users itself
            tasks.append(
                {
                    "data": task["data"],
                    "annotations": [
                        {k: v for k, v in a.items() if k in ("result", "lead_time")}
                        for a in task["annotations"]
                    ],
                }
            )
        how = "the task type's own Label Studio export and labeling config"
    elif project.task_type in HAND_MIRRORS:
        items = Item.objects.filter(project=project).order_by("position", "id")
        answers: dict[int, list] = {}
        for item_id, answer, spent in (
            Annotation.objects.filter(item__project=project, is_current=True)
            .order_by("item_id", "id")
            .values_list("item_id", "answer", "time_spent_ms")
        ):
            answers.setdefault(item_id, []).append((answer, spent))
        config = ""
        for item_id, payload, prepared in items.values_list("id", "payload", "prepared"):
            config, data = _ls_config_and_task(project.task_type, payload, prepared)
            tasks.append(
                {
                    "data": data,
                    "annotations": [
                        {
                            "result": _ls_results(project.task_type, answer),
                            "lead_time": spent / 1000,
                        }
                        for answer, spent in answers.get(item_id, [])
                    ],
                }
            )
        how = "hand-made mirror: " + HAND_MIRRORS[project.task_type]
    else:
        print(json.dumps({"config": None}))
        return
    Path(out).write_text(json.dumps(tasks))
    print(
        json.dumps(
            {
                "config": config,
                "how": how,
                "tasks": len(tasks),
                "annotations": sum(len(t["annotations"]) for t in tasks),
            }
        )
    )


class Refused(RuntimeError):
    """Label Studio answered a request with an error (``detail``: its answer)."""

    def __init__(self, what: str, status: int, detail: str) -> None:
        super().__init__(f"Label Studio {what}: {status} {detail}")
        self.detail = detail


class LabelStudioServer:
    """An already running Label Studio, reached with a legacy API token (``Token …``)."""

    def __init__(self, url: str, token: str, pid: int | None) -> None:
        import requests

        self.url, self.pid = url.rstrip("/"), pid
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        response = self.session.get(f"{self.url}/api/projects/", timeout=60)
        if response.status_code != 200:
            raise SystemExit(
                f"Label Studio at {url} answered {response.status_code} to the token: "
                f"{response.text[:200]}"
            )

    def processes(self) -> list[int]:
        if not self.pid:
            return []
        try:
            children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        except OSError:
            return [self.pid]
        return [self.pid, *(int(p) for p in children)]

    def rss_mb(self) -> dict[int, float]:
        """The current RSS (VmRSS) of each of the server's processes, in MB."""
        found = {}
        for pid in self.processes():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        found[pid] = int(line.split()[1]) / 1024
            except OSError:
                continue
        return found

    def timed(self, call) -> dict:
        """``call()`` timed, the RSS of each of the server's processes sampled every 50 ms
        meanwhile (gunicorn's workers are not restarted: VmHWM would be the peak since they
        started). ``peak_rss_mb``: the largest RSS of a process during the call;
        ``growth_mb``: the most one process grew over its RSS before the call (the worker that
        served it; another worker already larger would hide it in the peak alone)."""
        import threading

        before = self.rss_mb()
        peak = dict(before)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                for pid, rss in self.rss_mb().items():
                    peak[pid] = max(peak.get(pid, 0.0), rss)

        sampler = threading.Thread(target=sample, daemon=True)
        load_before = os.getloadavg()[0]
        sampler.start()
        started = time.perf_counter()
        try:
            result = call()
        finally:
            seconds = time.perf_counter() - started
            done.set()
            sampler.join()
        measured = bool(self.pid and peak)
        return {
            "seconds": round(seconds, 2),
            "result": result,
            "rss_before_mb": round(max(before.values(), default=0)) if measured else None,
            "peak_rss_mb": round(max(peak.values())) if measured else None,
            "growth_mb": (
                round(max(rss - before.get(pid, rss) for pid, rss in peak.items()))
                if measured
                else None
            ),
            "load": round(max(load_before, os.getloadavg()[0]), 1),
        }

    def project(self, title: str, config: str) -> int:
        response = self.session.post(
            f"{self.url}/api/projects/", json={"title": title, "label_config": config}, timeout=60
        )
        if response.status_code != 201:
            raise Refused("project", response.status_code, response.text)
        return response.json()["id"]

    def import_tasks(self, project: int, tasks: list[dict]) -> tuple[int, int]:
        """The tasks with their annotations inline (``POST /api/projects/ID/import``, a JSON body
        of tasks), in chunks; returns (tasks, annotations) Label Studio says it created."""
        created = [0, 0]
        for start in range(0, len(tasks), LS_CHUNK_TASKS):
            response = self.session.post(
                f"{self.url}/api/projects/{project}/import",
                json=tasks[start : start + LS_CHUNK_TASKS],
                timeout=3600,
            )
            if response.status_code != 201:
                raise RuntimeError(f"Label Studio import: {response.status_code} {response.text}")
            body = response.json()
            created[0] += body["task_count"]
            created[1] += body["annotation_count"]
        return created[0], created[1]

    def download(self, path: str, params: dict) -> tuple[int, bytes]:
        with self.session.get(
            f"{self.url}{path}", params=params, stream=True, timeout=7200
        ) as response:
            if response.status_code != 200:
                raise RuntimeError(f"Label Studio {path}: {response.status_code} {response.text}")
            body = b"".join(response.iter_content(1 << 20))
        return len(body), body

    def export(self, project: int, kind: str) -> tuple[int, bytes]:
        """What the project's Export dialog does (the UI's ``exportRaw``): ``GET
        /api/projects/ID/export?exportType=…``; the server builds the file, then sends it."""
        return self.download(f"/api/projects/{project}/export", {"exportType": kind})

    def snapshot(self, project: int) -> tuple[int, bytes]:
        """The snapshot API (what the dialog points to for large projects): ``POST
        /api/projects/ID/exports/`` (without Redis Label Studio runs it in the request), then
        ``GET …/exports/EXPORT/download?exportType=JSON``."""
        response = self.session.post(
            f"{self.url}/api/projects/{project}/exports/", json={}, timeout=7200
        )
        if response.status_code != 201:
            raise RuntimeError(f"Label Studio snapshot: {response.status_code} {response.text}")
        export = response.json()
        while export["status"] not in ("completed", "failed"):
            time.sleep(0.2)
            export = self.session.get(
                f"{self.url}/api/projects/{project}/exports/{export['id']}", timeout=60
            ).json()
        if export["status"] != "completed":
            raise RuntimeError(f"Label Studio snapshot failed: {export}")
        return self.download(
            f"/api/projects/{project}/exports/{export['id']}/download", {"exportType": "JSON"}
        )


def _ls_rows(kind: str, body: bytes) -> tuple[int, int]:
    """(tasks or CSV rows, annotations) in an export's bytes: counted, not assumed."""
    if kind == "CSV":
        import csv
        import io

        rows = sum(1 for _ in csv.reader(io.StringIO(body.decode()))) - 1
        return rows, rows
    tasks = json.loads(body)
    return len(tasks), sum(len(t["annotations"]) for t in tasks)


def label_studio(
    server: LabelStudioServer,
    url: str,
    slug: str,
    project_id: int,
    kinds: list[str],
) -> dict | None:
    """``slug``'s project put into Label Studio (see ``HAND_MIRRORS``), then each of ``kinds``
    of its exports timed; None where the task type has no mirror."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "tasks.json")
        source = child(__file__, "--ls-source", url, str(project_id), path)
        if not source["config"]:
            return None
        tasks = json.loads(Path(path).read_text())
    title = f"Concord {slug} {time.time():.0f}"
    ls_project = server.project(title, source["config"])
    imported = server.timed(lambda: server.import_tasks(ls_project, tasks))
    if tuple(imported["result"]) != (source["tasks"], source["annotations"]):
        raise RuntimeError(f"Label Studio imported {imported['result']} of {source}")
    tasks.clear()
    figures: dict = {
        "how": source["how"],
        "project": ls_project,
        "tasks": source["tasks"],
        "annotations": source["annotations"],
        "import_s": imported["seconds"],
    }
    for kind in kinds:
        run = server.timed(
            (lambda: server.snapshot(ls_project))
            if kind == "snapshot"
            else (lambda kind=kind: server.export(ls_project, kind))
        )
        size, body = run.pop("result")
        rows, annotations = _ls_rows("JSON" if kind == "snapshot" else kind, body)
        del body
        if annotations != source["annotations"]:
            raise RuntimeError(f"Label Studio {kind} export held {annotations} annotations")
        figures[kind] = {
            **run,
            "rows": rows,
            "megabytes": round(size / 1e6, 1),
            "annotations_per_s": round(annotations / run["seconds"]),
            "rows_per_s": round(rows / run["seconds"]),
        }
    return figures


def _print_comparison(results: dict) -> None:
    """Concord's answers/s beside Label Studio's annotations/s, type by type (same answers)."""
    print()
    print("Concord beside Label Studio, the same answers (answers/s; Concord/LS: above 1 = faster)")
    for key, ls in results.items():
        if not key.endswith("/label_studio"):
            continue
        slug = key.split("/")[0]
        mine = {
            fmt: results.get(f"{slug}/{fmt}") or results.get(f"{slug}/{fmt}/after")
            for fmt in ("jsonl", "csv")
        }
        pairs = [("jsonl", "JSON"), ("jsonl", "snapshot"), ("csv", "CSV")]
        for fmt, kind in pairs:
            if kind not in ls or not mine[fmt]:
                continue
            ours, theirs = mine[fmt]["answers_per_s"], ls[kind]["annotations_per_s"]
            print(
                f"  {slug:<20} Concord {fmt:<5} {ours:>9,} answers/s  Label Studio {kind:<8} "
                f"{theirs:>7,} annotations/s  {ours / max(theirs, 1):7.1f}×  "
                f"peak RSS {mine[fmt]['peak_mb']:.0f} MB (exporting process) vs "
                f"{ls[kind]['peak_rss_mb'] or '?'} MB (LS, largest process; a worker grew "
                f"{ls[kind].get('growth_mb', '?')} MB)  load {ls[kind]['load']}"
            )
    print(
        "  Label Studio mirrors: "
        + "; ".join(
            f"{k.split('/')[0]}: {v['how']}"
            for k, v in results.items()
            if k.endswith("/label_studio")
        )
    )


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


def _columns_prepared(results: dict, slug: str, url: str, project_id: int) -> None:
    """A task type that stores its export columns: their preparation on a worker, timed."""
    done = child(__file__, "--columns-prepared", url, str(project_id))
    if not done["stored_columns"]:
        return
    results[f"{slug}/prepared"] = done
    print(
        f"{slug:<20} {'(a worker prepares the columns first)':<28} {done['answers']:>9,} answers "
        f"{done['answers'] / done['seconds']:>7,.0f}/s "
        f"{done['answers'] / done['cpu_seconds']:>7,.0f}/cpu-s, {done['stored']:,} stored, "
        f"peak RSS {done['peak_mb']:.0f} MB"
    )


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
    if len(sys.argv) > 1 and sys.argv[1] == "--columns-prepared":
        _, _, url, project_id = sys.argv
        columns_prepared(url, int(project_id))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--baseline":
        _, _, url, project_id = sys.argv
        baseline(url, int(project_id))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--ls-source":
        _, _, url, project_id, out = sys.argv
        ls_source(url, int(project_id), out)
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
    parser.add_argument(
        "--label-studio-pid", type=int, help="its server's master process (gunicorn): its RSS"
    )
    parser.add_argument(
        "--label-studio-exports",
        nargs="+",
        default=["JSON", "CSV", "snapshot"],
        choices=["JSON", "CSV", "snapshot"],
        help="Label Studio exports to time (default: all three)",
    )
    parser.add_argument(
        "--label-studio-only",
        nargs="*",
        help="task types to put into Label Studio (default: every one with a mirror)",
    )
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
    parser.add_argument(
        "--unprepared",
        action="store_true",
        help="leave a task type's stored export columns as they are (its first export then "
        "makes and stores what is missing) instead of having them prepared as a worker does",
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
    server = None
    if args.label_studio_url:
        if not args.label_studio_token:
            raise SystemExit("--label-studio-url needs --label-studio-token")
        server = LabelStudioServer(
            args.label_studio_url, args.label_studio_token, args.label_studio_pid
        )
    for slug, project_id in built.items():
        copy = child(__file__, "--baseline", url, str(project_id))
        copy_rate = copy["rows"] / copy["seconds"]
        results[f"{slug}/copy"] = {**copy, "rows_per_s": round(copy_rate)}
        print(
            f"{slug:<20} {'COPY':<5} {'':<6} {copy['rows']:>9,} {copy_rate:>9,.0f} "
            f"{copy_rate:>10,.0f} {1:>7.2f}× {'':>10} {copy['bytes'] / 1e6:>7.1f} "
            f"{copy['peak_mb']:>6.0f} MB"
        )
        if not args.unprepared:
            _columns_prepared(results, slug, url, project_id)
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
        if server is not None and (
            args.label_studio_only is None or slug in args.label_studio_only
        ):
            ls = label_studio(server, url, slug, project_id, args.label_studio_exports)
            if ls is None:
                print(f"{slug:<20} Label Studio: no mirror of this task type, not compared")
                continue
            results[f"{slug}/label_studio"] = ls
            print(
                f"{slug:<20} Label Studio ({ls['how']}): {ls['tasks']:,} tasks, "
                f"{ls['annotations']:,} annotations imported in {ls['import_s']:.0f} s"
            )
            for kind in args.label_studio_exports:
                f = ls[kind]
                rss = (
                    f"{f['peak_rss_mb']:>6} MB (a worker grew {f.get('growth_mb')} MB)"
                    if f["peak_rss_mb"]
                    else "server RSS not measured (--label-studio-pid)"
                )
                print(
                    f"{slug:<20} {kind[:5]:<5} {'LS':<6} {f['rows']:>9,} {f['rows_per_s']:>9,.0f} "
                    f"{f['annotations_per_s']:>10,.0f} {'':>8} {'':>10} {f['megabytes']:>7.1f} "
                    f"{rss}  ({f['seconds']} s, load {f['load']})"
                )
    if server is None:
        print("No Label Studio given (--label-studio-url/--label-studio-token): Concord only.")
    else:
        _print_comparison(results)
    print(f"load {os.getloadavg()[0]:.1f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
