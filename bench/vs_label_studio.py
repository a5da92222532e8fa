"""Concord against Label Studio through HTTP only (issue 16): API import and the annotator path.

    .venv/bin/python bench/vs_label_studio.py [--quick] [--sizes 10000 100000]
        [--label-studio-url http://127.0.0.1:8081 --label-studio-token TOKEN
         [--label-studio-tokens T2 T3 ...] [--label-studio-pid PID]]

Both systems get the same synthetic citation-recovery items (``bench/import_speed.py``'s
``record()``/``write_file()``). Concord is served by gunicorn (3 sync workers, a fresh server per
import, one worker, warmed up by a 20-item import so peak memory is the import's own; 3 sync
workers for the annotator path; ``manage.py runserver --noreload`` when gunicorn is not in this
venv) on a scratch PostgreSQL database (``concord_vsls_bench``, dropped at the end).
Accounts are created with ``manage.py`` before timing starts; everything measured goes through HTTP:

- import: ``POST /api/projects/<slug>/import/`` (JSONL upload; the job polled until done) against
  Label Studio's ``POST /api/projects/<id>/import`` (the same records as a JSON list of tasks);
  items/s and the server's peak RSS (Concord: the largest VmHWM of its processes; Label Studio:
  of ``--label-studio-pid`` and its children when given, else not measured: that server is not
  restarted, so its figure is the peak so far, over the whole run); both systems get the same
  untimed 20-item warm-up import into a throwaway project before each timed one;
- annotator path: next + submit with 1 and with 10 concurrent clients (Concord:
  ``POST /api/projects/<slug>/next/`` + ``POST /api/assignments/<id>/submit/``; Label Studio:
  ``GET /api/projects/<id>/next`` + ``POST /api/tasks/<id>/annotations/``), requests/s and the
  client-side p50/p95 per request, rounds alternated between the systems.

With a Label Studio the report prints Concord/Label Studio ratios (items/s, requests/s: above 1
means Concord is faster; latency: below 1 means Concord is faster). Label Studio's ten clients
use one account per token given (``--label-studio-tokens``); with only one token they share it,
which the report says. Without ``--label-studio-url`` it prints Concord's figures and says that no
ratio is printed. The 1-minute load average is printed with each figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402  (the sibling benchmark: the synthetic items)
import scale_data  # noqa: E402  (scratch database, production-like environment)

REPO = Path(__file__).resolve().parents[1]
DATABASE = "concord_vsls_bench"
PASSWORD = "vsls-bench-password-0123"
CLIENTS = (1, 10)
WARM_UP_ITEMS = 20
CONCORD_ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}
LABEL_CONFIG = """<View>
  <Header value="Claim"/>
  <Text name="claim" value="$claim"/>
  <Header value="Explanation"/>
  <Text name="explanation" value="$explanation"/>
  <Choices name="cited" toName="explanation" choice="multiple">
    <Choice value="sentence 1"/><Choice value="sentence 2"/><Choice value="none"/>
  </Choices>
  <Number name="helpfulness" toName="explanation" min="0" max="100"/>
</View>"""
LS_RESULT = [
    {
        "from_name": "cited",
        "to_name": "explanation",
        "type": "choices",
        "value": {"choices": ["sentence 1"]},
    },
    {
        "from_name": "helpfulness",
        "to_name": "explanation",
        "type": "number",
        "value": {"number": 70},
    },
]


def load() -> float:
    return os.getloadavg()[0]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def peak_rss_mb(root_pid: int) -> float:
    """Largest VmHWM (peak resident set) among ``root_pid`` and its descendants, in MB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    peak, todo = 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            continue
    return peak


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Concord ---------------------------------------------------------------------------------


class Concord:
    """Concord on the scratch database, served over HTTP (gunicorn when installed)."""

    def __init__(self, database_url: str) -> None:
        import requests

        self.requests = requests
        self.env = {
            **os.environ,
            **scale_data.server_environment(database_url),
            "CONCORD_MAX_UPLOAD_BYTES": str(2**40),
        }
        self.env.pop("REDIS_URL", None)  # no broker: the import job runs in the request
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "--verbosity", "0"], cwd=REPO, env=self.env, check=True)
        usernames = ["vsls-researcher", *[f"vsls-annotator-{n}" for n in range(max(CLIENTS))]]
        script = (
            "from django.contrib.auth.models import User\n"
            f"for name in {usernames!r}:\n"
            "    user, _ = User.objects.get_or_create(username=name)\n"
            f"    user.is_staff = name == 'vsls-researcher'; user.set_password({PASSWORD!r})\n"
            "    user.save()\n"
        )
        subprocess.run([*manage, "shell", "-c", script], cwd=REPO, env=self.env, check=True)
        self.researcher = usernames[0]
        self.annotators = usernames[1:]
        self.gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
        self.kind = (
            "gunicorn (imports: 1 sync worker; annotator path: 3)"
            if self.gunicorn
            else "manage.py runserver --noreload"
        )
        self.process = None
        self.projects = 0

    def start(self, *, workers: int = 3) -> None:
        self.port = free_port()
        if self.gunicorn:
            command = [
                self.gunicorn,
                "config.wsgi",
                "--workers",
                str(workers),
                "--worker-class",
                "sync",
                "--timeout",
                "1800",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--log-level",
                "warning",
            ]
        else:
            command = [sys.executable, "manage.py", "runserver", "--noreload", str(self.port)]
        self.process = subprocess.Popen(command, cwd=REPO, env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self.requests.get(f"{self.url}/api/projects/", timeout=2)
                break
            except self.requests.RequestException:
                time.sleep(0.3)
        else:
            self.stop()
            raise RuntimeError("Concord did not answer within 60 s")
        self.tokens = {name: self.token(name) for name in [self.researcher, *self.annotators]}

    def token(self, username: str) -> str:
        response = self.requests.post(
            f"{self.url}/api/auth/token/", json={"username": username, "password": PASSWORD}
        )
        response.raise_for_status()
        return response.json()["token"]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)
            self.process = None

    def session(self, username: str):
        session = self.requests.Session()
        session.headers["Authorization"] = f"Token {self.tokens[username]}"
        return session

    def create_project(self) -> str:
        self.projects += 1
        slug = f"vsls-{self.projects}"
        study = {
            "slug": slug,
            "name": f"Label Studio comparison {self.projects}",
            "task_type": "citation_recovery",
            "annotators_per_item": 1,
            "config": {"masking": "sample", "seed": 13},
            "members": [{"username": name, "role": "annotator"} for name in self.annotators],
        }
        response = self.session(self.researcher).post(f"{self.url}/api/projects/", json=study)
        if response.status_code != 201:
            raise RuntimeError(f"project create answered {response.status_code}: {response.text}")
        return slug

    def import_file(self, slug: str, path: Path) -> int:
        session = self.session(self.researcher)
        with path.open("rb") as stream:
            response = session.post(
                f"{self.url}/api/projects/{slug}/import/",
                files={"file": (path.name, stream, "application/x-ndjson")},
                data={"format": "jsonl"},
            )
        while response.status_code == 202:
            time.sleep(0.5)
            job = response.json()["id"]
            response = session.get(f"{self.url}/api/projects/{slug}/imports/{job}/")
        if response.status_code not in (200, 201):
            raise RuntimeError(f"import answered {response.status_code}: {response.text[:300]}")
        return response.json()["created"]

    def cycle(self, session, project: str) -> tuple[float, float]:
        began = time.perf_counter()
        response = session.post(f"{self.url}/api/projects/{project}/next/", json={})
        next_ms = (time.perf_counter() - began) * 1000
        if response.status_code != 200 or "id" not in response.json():
            raise RuntimeError(
                f"Concord next answered {response.status_code}: {response.text[:200]}"
            )
        assignment = response.json()["id"]
        began = time.perf_counter()
        response = session.post(
            f"{self.url}/api/assignments/{assignment}/submit/", json={"answer": CONCORD_ANSWER}
        )
        submit_ms = (time.perf_counter() - began) * 1000
        if response.status_code not in (200, 201):
            raise RuntimeError(f"Concord submit answered {response.status_code}: {response.text}")
        return next_ms, submit_ms

    def clients(self, count: int) -> list:
        return [self.session(name) for name in self.annotators[:count]]

    def peak_mb(self) -> float | None:
        return peak_rss_mb(self.process.pid) if self.process else None


# --- Label Studio ----------------------------------------------------------------------------


class LabelStudio:
    """An already running Label Studio, reached with its API tokens."""

    def __init__(self, url: str, tokens: list[str], pid: int | None) -> None:
        import requests

        self.requests = requests
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.pid = pid
        self.kind = f"Label Studio at {self.url}"
        response = self.session(0).get(f"{self.url}/api/projects/")
        if response.status_code != 200:
            raise SystemExit(
                f"Label Studio at {self.url} refused the token: {response.status_code} "
                f"{response.text[:200]}"
            )

    def session(self, n: int):
        session = self.requests.Session()
        session.headers["Authorization"] = f"Token {self.tokens[n % len(self.tokens)]}"
        return session

    def create_project(self) -> int:
        response = self.session(0).post(
            f"{self.url}/api/projects/",
            json={
                "title": f"Concord comparison {time.time():.0f}",
                "label_config": LABEL_CONFIG,
                "maximum_annotations": 1,
            },
        )
        if response.status_code != 201:
            raise RuntimeError(
                f"Label Studio project answered {response.status_code}: {response.text}"
            )
        return response.json()["id"]

    def import_file(self, project: int, path: Path) -> int:
        """The same records as a JSON list of tasks (Label Studio reads no JSONL of raw records)."""
        session = self.session(0)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
            out.write("[")
            with path.open() as stream:
                for n, line in enumerate(stream):
                    out.write(("," if n else "") + '{"data":' + line.strip() + "}")
            out.write("]")
        try:
            with open(out.name, "rb") as stream:
                response = session.post(
                    f"{self.url}/api/projects/{project}/import",
                    files={"file": ("items.json", stream, "application/json")},
                )
        finally:
            os.unlink(out.name)
        if response.status_code not in (200, 201):
            raise RuntimeError(
                f"Label Studio import answered {response.status_code}: {response.text}"
            )
        body = response.json()
        if "task_count" in body and body.get("task_count") is not None:
            return body["task_count"]
        job = body["import"]  # an asynchronous import: poll it
        while True:
            status = session.get(f"{self.url}/api/projects/{project}/imports/{job}").json()
            if status.get("status") == "completed":
                return status["task_count"]
            if status.get("status") == "failed":
                raise RuntimeError(f"Label Studio import failed: {status}")
            time.sleep(0.5)

    def cycle(self, session, project: int) -> tuple[float, float]:
        began = time.perf_counter()
        response = session.get(f"{self.url}/api/projects/{project}/next")
        next_ms = (time.perf_counter() - began) * 1000
        if response.status_code != 200:
            raise RuntimeError(
                f"Label Studio next answered {response.status_code}: {response.text}"
            )
        task = response.json()["id"]
        began = time.perf_counter()
        response = session.post(
            f"{self.url}/api/tasks/{task}/annotations/",
            json={"result": LS_RESULT, "lead_time": 5.0, "project": project},
        )
        submit_ms = (time.perf_counter() - began) * 1000
        if response.status_code not in (200, 201):
            raise RuntimeError(
                f"Label Studio submit answered {response.status_code}: {response.text}"
            )
        return next_ms, submit_ms

    def clients(self, count: int) -> list:
        return [self.session(n) for n in range(count)]

    def peak_mb(self) -> float | None:
        return peak_rss_mb(self.pid) if self.pid else None


# --- measurements ----------------------------------------------------------------------------


def timed_import(system, path: Path, size: int) -> dict:
    project = system.create_project()
    load_before = load()
    began = time.perf_counter()
    created = system.import_file(project, path)
    seconds = time.perf_counter() - began
    if created != size:
        raise RuntimeError(f"{system.kind} imported {created} of {size} items")
    return {
        "project": project,
        "seconds": seconds,
        "items_per_s": size / seconds,
        "peak_mb": system.peak_mb(),
        "load": max(load_before, load()),
    }


def annotator_round(system, project, clients: int, cycles: int) -> dict:
    sessions = system.clients(clients)
    start = threading.Barrier(clients + 1)
    latencies: list[float] = []
    errors: list[str] = []

    def run(session) -> None:
        start.wait()
        try:
            for _ in range(cycles):
                latencies.extend(system.cycle(session, project))
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"{system.kind}, {clients} clients: {errors[0]}")
    return {"latencies": latencies, "wall": wall, "load": load()}


def summarise(rounds: list[dict]) -> dict:
    latencies = [ms for r in rounds for ms in r["latencies"]]
    return {
        "requests_per_s": len(latencies) / sum(r["wall"] for r in rounds),
        "p50": p50(latencies),
        "p95": p95(latencies),
        "requests": len(latencies),
        "load": max(r["load"] for r in rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--quick", action="store_true", help="1k and 5k items, fewer cycles")
    parser.add_argument("--rounds", type=int, default=None, help="annotator rounds per system")
    parser.add_argument("--label-studio-url")
    parser.add_argument("--label-studio-token", help="an API token of a Label Studio account")
    parser.add_argument(
        "--label-studio-tokens", nargs="*", default=[], help="more accounts' tokens (clients 2..)"
    )
    parser.add_argument("--label-studio-pid", type=int, help="Label Studio's server process")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--imports-only", action="store_true", help="measure the imports, not the annotator path"
    )
    parser.add_argument(
        "--database", default=DATABASE, help=f"Concord's scratch database (default {DATABASE})"
    )
    args = parser.parse_args()
    sizes = [1_000, 5_000] if args.quick else args.sizes
    rounds = args.rounds or (2 if args.quick else 3)
    cycles = {1: 20, 10: 4} if args.quick else {1: 40, 10: 10}
    if args.imports_only:
        rounds = 0
    if min(sizes) < rounds * sum(c * n for n, c in cycles.items()):
        raise SystemExit("the smallest size has too few items for the annotator rounds")

    label_studio = None
    if args.label_studio_url:
        if not args.label_studio_token:
            raise SystemExit("--label-studio-url needs --label-studio-token")
        tokens = [args.label_studio_token, *args.label_studio_tokens]
        label_studio = LabelStudio(args.label_studio_url, tokens, args.label_studio_pid)
    database_url = scale_data.scratch_database(args.database)
    concord = Concord(database_url)
    print(
        f"Concord: {concord.kind}, PostgreSQL database {args.database}; "
        f"machine: {os.cpu_count()} cores"
    )
    if label_studio is None:
        print(
            "No Label Studio given (--label-studio-url/--label-studio-token): Concord only, no ratio."
        )
    else:
        shared = " (one account: the clients share it)" if len(label_studio.tokens) == 1 else ""
        print(f"Label Studio: {label_studio.kind}, {len(label_studio.tokens)} account(s){shared}")

    imports: dict[tuple[str, int], dict] = {}
    first_projects: dict[str, object] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            warm_up = Path(tmp) / "warm-up.jsonl"
            import_speed.write_file(warm_up, WARM_UP_ITEMS)
            for n, size in enumerate(sizes):
                path = Path(tmp) / f"items-{size}.jsonl"
                import_speed.write_file(path, size)
                systems = [("Concord", concord), ("Label Studio", label_studio)]
                if n % 2:
                    systems.reverse()  # alternate which system goes first
                for name, system in systems:
                    if system is None:
                        continue
                    if system is concord:
                        # A fresh one-worker server: the peak memory is this import's, and the
                        # warm-up import below has loaded what the timed one uses.
                        concord.stop()
                        concord.start(workers=1)
                    timed_import(system, warm_up, WARM_UP_ITEMS)  # both systems, untimed
                    result = timed_import(system, path, size)
                    imports[(name, size)] = result
                    first_projects.setdefault(name, result["project"])
                    peak = f"{result['peak_mb']:.0f} MB" if result["peak_mb"] else "not measured"
                    print(
                        f"import {name:<12} {size:>7} items {result['seconds']:7.1f} s "
                        f"{result['items_per_s']:7.0f} items/s  server peak RSS {peak}  "
                        f"load {result['load']:.2f}",
                        flush=True,
                    )
                path.unlink()

        concord.stop()
        if rounds:
            concord.start(workers=3)  # the annotator path on 3 sync workers
        path_rounds: dict[tuple[str, int], list[dict]] = {}
        for r in range(rounds):
            for clients in CLIENTS:
                systems = [("Concord", concord), ("Label Studio", label_studio)]
                if r % 2:
                    systems.reverse()
                for name, system in systems:
                    if system is None:
                        continue
                    result = annotator_round(system, first_projects[name], clients, cycles[clients])
                    path_rounds.setdefault((name, clients), []).append(result)
                    print(
                        f"round {r + 1} {name:<12} {clients:>2} client(s): "
                        f"{len(result['latencies']) / result['wall']:6.1f} req/s "
                        f"p50 {p50(result['latencies']):6.1f} ms  load {result['load']:.2f}",
                        flush=True,
                    )
    finally:
        concord.stop()
        if not args.keep:
            scale_data.drop_database(args.database)

    print()
    print("import through the API (items/s; peak RSS of the server's processes)")
    for size in sizes:
        ours = imports[("Concord", size)]
        line = f"  {size:>7} items  Concord {ours['items_per_s']:7.0f}/s {ours['peak_mb']:6.0f} MB"
        theirs = imports.get(("Label Studio", size))
        if theirs:
            peak = f"{theirs['peak_mb']:6.0f} MB" if theirs["peak_mb"] else "peak not measured"
            line += (
                f"  Label Studio {theirs['items_per_s']:7.0f}/s {peak}"
                f"  ratio Concord/LS items/s {ours['items_per_s'] / theirs['items_per_s']:.2f}"
            )
        print(line + f"  (load ≤ {max(ours['load'], theirs['load'] if theirs else 0):.2f})")
    if rounds:
        print(f"annotator path: next + submit, {rounds} rounds alternated (client-side latency)")
    for clients in CLIENTS if rounds else ():
        ours = summarise(path_rounds[("Concord", clients)])
        line = (
            f"  {clients:>2} client(s)  Concord {ours['requests_per_s']:6.1f} req/s "
            f"p50 {ours['p50']:6.1f} ms p95 {ours['p95']:6.1f} ms"
        )
        if ("Label Studio", clients) in path_rounds:
            theirs = summarise(path_rounds[("Label Studio", clients)])
            line += (
                f"  Label Studio {theirs['requests_per_s']:6.1f} req/s p50 {theirs['p50']:6.1f} ms "
                f"p95 {theirs['p95']:6.1f} ms  ratio Concord/LS req/s "
                f"{ours['requests_per_s'] / theirs['requests_per_s']:.2f}, p95 "
                f"{ours['p95'] / theirs['p95']:.2f}"
            )
            ours["load"] = max(ours["load"], theirs["load"])
        print(line + f"  (load ≤ {ours['load']:.2f})")
    if label_studio is None:
        print("No Label Studio was given, so no ratio is printed (see --label-studio-url).")


if __name__ == "__main__":
    main()
