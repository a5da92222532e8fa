"""Concord against Label Studio through HTTP only (issue 16): API import and the annotator path.

    .venv/bin/python bench/vs_label_studio.py [--quick] [--sizes 10000 100000]
        [--clients 1 10 20] [--worker-class sync|gthread [--threads 4]] [--workers 3]
        [--client-processes]
        [--label-studio-url http://127.0.0.1:8081 --label-studio-token TOKEN
         [--label-studio-tokens T2 T3 ...] [--label-studio-pid PID]
         [--label-studio-database ls_bench]]

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
- annotator path: next + submit with 1, 10 and 20 concurrent clients (``--clients``; Concord:
  ``POST /api/projects/<slug>/next/`` + ``POST /api/assignments/<id>/submit/``; Label Studio:
  ``GET /api/projects/<id>/next`` + ``POST /api/tasks/<id>/annotations/``), requests/s and the
  client-side p50/p95 per request, rounds alternated between the systems, about 200 requests
  per round at every client count. Concord's annotator-path server is gunicorn with
  ``--workers`` (3) workers of ``--worker-class`` (sync; gthread with ``--threads`` each); Label
  Studio runs as it was started (it ships 3 sync workers). The clients are threads of this
  process, or one process each with ``--client-processes``; each round also prints the CPU
  milliseconds per request spent by the clients and by the server (its process tree, where its
  pid is known, and its PostgreSQL backends: Concord's scratch database, Label Studio's
  ``--label-studio-database``), so a client that eats the machine shows.

With a Label Studio the report prints Concord/Label Studio ratios (items/s, requests/s: above 1
means Concord is faster; latency: below 1 means Concord is faster). Label Studio's clients
use one account per token given (``--label-studio-tokens``); with fewer tokens than clients they
share them (with one token the report says so). Without ``--label-studio-url`` it prints Concord's figures and says that no
ratio is printed. The 1-minute load average is printed with each figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402  (the sibling benchmark: the synthetic items)
import scale_data  # noqa: E402  (scratch database, production-like environment)
from concord_http import (  # noqa: E402  (Concord over HTTP, shared with bench/vs_commit.py)
    Concord,
    annotator_round,
    load,
    p50,
    peak_rss_mb,
    summarise,
)

DATABASE = "concord_vsls_bench"
CLIENTS = (1, 10, 20)
WARM_UP_ITEMS = 20
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


# --- Label Studio ----------------------------------------------------------------------------


class LabelStudio:
    """An already running Label Studio, reached with its API tokens."""

    def __init__(
        self, url: str, tokens: list[str], pid: int | None, database: str | None = None
    ) -> None:
        import requests

        self.requests = requests
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.pid = pid
        self.database = database  # on this PostgreSQL: its backends' CPU is the server's
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


def cpu(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms:.1f}"


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
    parser.add_argument(
        "--label-studio-database",
        help="Label Studio's database on the same PostgreSQL (its backends' CPU is counted)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--imports-only", action="store_true", help="measure the imports, not the annotator path"
    )
    parser.add_argument(
        "--database", default=DATABASE, help=f"Concord's scratch database (default {DATABASE})"
    )
    parser.add_argument(
        "--clients", type=int, nargs="+", default=list(CLIENTS), help="concurrent annotators"
    )
    parser.add_argument(
        "--worker-class",
        choices=["sync", "gthread"],
        default="sync",
        help="Concord's gunicorn workers on the annotator path (Label Studio runs as it ships)",
    )
    parser.add_argument("--workers", type=int, default=3, help="Concord's gunicorn workers")
    parser.add_argument("--threads", type=int, default=1, help="threads per gthread worker")
    parser.add_argument(
        "--client-processes",
        action="store_true",
        help="one client process per annotator (default: threads of this process)",
    )
    args = parser.parse_args()
    if args.worker_class == "sync" and args.threads != 1:
        raise SystemExit("--threads needs --worker-class gthread")
    clients_list = sorted(set(args.clients))
    sizes = [1_000, 5_000] if args.quick else args.sizes
    rounds = args.rounds or (2 if args.quick else 3)
    # About as many requests per round at every client count (at least 4 cycles per client).
    per_round = 80 if args.quick else 200
    cycles = {n: max(4, per_round // (2 * n)) for n in clients_list}
    if args.imports_only:
        rounds = 0
    if min(sizes) < rounds * sum(c * n for n, c in cycles.items()):
        raise SystemExit("the smallest size has too few items for the annotator rounds")

    label_studio = None
    if args.label_studio_url:
        if not args.label_studio_token:
            raise SystemExit("--label-studio-url needs --label-studio-token")
        tokens = [args.label_studio_token, *args.label_studio_tokens]
        label_studio = LabelStudio(
            args.label_studio_url, tokens, args.label_studio_pid, args.label_studio_database
        )
    database_url = scale_data.scratch_database(args.database)
    concord = Concord(database_url, annotators=max(clients_list), prefix="vsls")
    path_shape = f"{args.workers} {args.worker_class} workers" + (
        f" x {args.threads} threads" if args.worker_class == "gthread" else ""
    )
    concord.kind = (
        f"gunicorn (imports: 1 sync worker; annotator path: {path_shape})"
        if concord.gunicorn
        else concord.kind
    )
    client_kind = "one process per client" if args.client_processes else "threads of one process"
    print(f"Clients: {client_kind}")
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
            concord.start(
                workers=args.workers, worker_class=args.worker_class, threads=args.threads
            )
        path_rounds: dict[tuple[str, int], list[dict]] = {}
        for r in range(rounds):
            for clients in clients_list:
                systems = [("Concord", concord), ("Label Studio", label_studio)]
                if r % 2:
                    systems.reverse()
                for name, system in systems:
                    if system is None:
                        continue
                    result = annotator_round(
                        system,
                        first_projects[name],
                        clients,
                        cycles[clients],
                        processes=args.client_processes,
                    )
                    path_rounds.setdefault((name, clients), []).append(result)
                    served = len(result["latencies"])
                    server = (
                        f"{1000 * result['server_cpu'] / served:5.1f} "
                        f"(database {1000 * result['database_cpu'] / served:4.1f})"
                        if result["server_cpu"] is not None
                        else "  n/a"
                    )
                    print(
                        f"round {r + 1} {name:<12} {clients:>2} client(s): "
                        f"{served / result['wall']:6.1f} req/s "
                        f"p50 {p50(result['latencies']):6.1f} ms  CPU ms/request: client "
                        f"{1000 * result['client_cpu'] / served:5.1f} server {server}  "
                        f"load {result['load']:.2f}",
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
    for clients in clients_list if rounds else ():
        ours = summarise(path_rounds[("Concord", clients)])
        line = (
            f"  {clients:>2} client(s)  Concord {ours['requests_per_s']:6.1f} req/s "
            f"p50 {ours['p50']:6.1f} ms p95 {ours['p95']:6.1f} ms"
            f" (CPU ms/req server {cpu(ours['server_cpu_ms'])}, of which database "
            f"{cpu(ours['database_cpu_ms'])}; client {ours['client_cpu_ms']:.1f})"
        )
        if ("Label Studio", clients) in path_rounds:
            theirs = summarise(path_rounds[("Label Studio", clients)])
            line += (
                f"  Label Studio {theirs['requests_per_s']:6.1f} req/s p50 {theirs['p50']:6.1f} ms "
                f"p95 {theirs['p95']:6.1f} ms  ratio Concord/LS req/s "
                f"{ours['requests_per_s'] / theirs['requests_per_s']:.2f}, p95 "
                f"{ours['p95'] / theirs['p95']:.2f}"
                f" (LS CPU ms/req server {cpu(theirs['server_cpu_ms'])}, of which database "
                f"{cpu(theirs['database_cpu_ms'])}; client {theirs['client_cpu_ms']:.1f})"
            )
            ours["load"] = max(ours["load"], theirs["load"])
        print(line + f"  (load ≤ {ours['load']:.2f})")
    if label_studio is None:
        print("No Label Studio was given, so no ratio is printed (see --label-studio-url).")


if __name__ == "__main__":
    main()
