"""Concord over HTTP for the benchmarks that compare it with another server (issue 16).

Shared by ``bench/vs_label_studio.py`` (Concord against Label Studio) and ``bench/vs_commit.py``
(this code against an older commit of Concord). Nothing here imports Concord: a ``Concord`` runs
``manage.py`` and gunicorn of a given checkout (``checkout``, default this one) as subprocesses
with that checkout as working directory and first on ``PYTHONPATH``, on a scratch PostgreSQL
database, and then talks to it through the API only, so it works on any version whose API has the
token, project, import, next and submit endpoints.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402  (the production-like server environment)

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "concord-bench-password-0123"
ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def load() -> float:
    """The 1-minute load average (the machine is shared)."""
    return os.getloadavg()[0]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def peak_rss_mb(root_pid: int) -> float:
    """Largest VmHWM (peak resident set) among ``root_pid`` and its descendants, in MB."""
    peak = 0.0
    for pid in process_tree(root_pid):
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


def serve(
    *, checkout: Path, env: dict, workers: int = 3, worker_class: str = "sync", threads: int = 1
) -> tuple[subprocess.Popen, int]:
    """gunicorn of ``checkout`` on a free port (``workers`` processes of ``worker_class``: "sync",
    one request at a time each, or "gthread", ``threads`` at a time each), once it answers; raises
    when the venv has no gunicorn or it does not answer within a minute."""
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
    if gunicorn is None:
        raise RuntimeError("no gunicorn in this venv")
    port = free_port()
    command = [
        gunicorn,
        "config.wsgi",
        "--chdir",
        str(checkout),
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--threads",
        str(threads),
        "--timeout",
        "1800",
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, cwd=checkout, env=env)
    wait_for(process, f"http://127.0.0.1:{port}/api/projects/")
    return process, port


def wait_for(process: subprocess.Popen, url: str, *, seconds: float = 60) -> None:
    """Until ``url`` answers at all; stops ``process`` and raises if it does not in time."""
    import requests

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.3)
    process.terminate()
    process.wait(timeout=60)
    raise RuntimeError(f"Concord did not answer within {seconds:.0f} s")


class Concord:
    """A checkout of Concord on a scratch database, served over HTTP (gunicorn when installed).

    ``prefix`` names its accounts (``<prefix>-researcher``, ``<prefix>-annotator-<n>``) and
    projects; ``annotators`` accounts are created with ``manage.py`` before anything is timed."""

    def __init__(
        self,
        database_url: str,
        *,
        checkout: Path = REPO,
        annotators: int = 10,
        prefix: str = "vsls",
        per_item: int = 1,
    ) -> None:
        import requests

        self.requests = requests
        self.checkout = Path(checkout).resolve()
        self.prefix = prefix
        self.per_item = per_item
        self.database = database_url.rsplit("/", 1)[1]  # its backends' CPU is the server's
        self.env = {
            **os.environ,
            **scale_data.server_environment(database_url),
            "CONCORD_MAX_UPLOAD_BYTES": str(2**40),
            # The checkout's packages before anything installed (the venv's editable install
            # points at another checkout).
            "PYTHONPATH": os.pathsep.join(
                [str(self.checkout), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        self.env.pop("REDIS_URL", None)  # no broker: the import job runs in the request
        self.manage("migrate", "--verbosity", "0")
        usernames = [
            f"{prefix}-researcher",
            *[f"{prefix}-annotator-{n}" for n in range(annotators)],
        ]
        script = (
            "from django.contrib.auth.models import User\n"
            f"for name in {usernames!r}:\n"
            "    user, _ = User.objects.get_or_create(username=name)\n"
            f"    user.is_staff = name == {usernames[0]!r}; user.set_password({PASSWORD!r})\n"
            "    user.save()\n"
        )
        self.manage("shell", "-c", script)
        self.researcher = usernames[0]
        self.annotators = usernames[1:]
        self.gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
        self.kind = "gunicorn" if self.gunicorn else "manage.py runserver --noreload"
        self.process = None
        self.projects = 0

    def manage(self, *args: str, capture: bool = False) -> str:
        """``manage.py`` of the checkout, run in it with this interpreter."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.checkout,
            env=self.env,
            check=True,
            capture_output=capture,
            text=True,
        )
        return done.stdout if capture else ""

    def python(self, code: str) -> str:
        """Run ``code`` in a fresh interpreter in the checkout's environment; its stdout."""
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.checkout,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def start(self, *, workers: int = 3, worker_class: str = "sync", threads: int = 1) -> None:
        if self.gunicorn:
            self.process, self.port = serve(
                checkout=self.checkout,
                env=self.env,
                workers=workers,
                worker_class=worker_class,
                threads=threads,
            )
        else:
            self.port = free_port()
            command = [sys.executable, "manage.py", "runserver", "--noreload", str(self.port)]
            self.process = subprocess.Popen(command, cwd=self.checkout, env=self.env)
            wait_for(self.process, f"{self.url}/api/projects/")
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
        slug = f"{self.prefix}-{self.projects}"
        study = {
            "slug": slug,
            "name": f"Benchmark project {self.projects}",
            "task_type": "citation_recovery",
            "annotators_per_item": self.per_item,
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
        if response.status_code not in (200, 201) or response.json()["status"] != "done":
            raise RuntimeError(f"import answered {response.status_code}: {response.text[:300]}")
        return response.json()["created"]

    def cycle(self, session, project: str) -> tuple[float, float]:
        """One next + submit; the two request latencies in ms."""
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
            f"{self.url}/api/assignments/{assignment}/submit/", json={"answer": ANSWER}
        )
        submit_ms = (time.perf_counter() - began) * 1000
        if response.status_code not in (200, 201):
            raise RuntimeError(f"Concord submit answered {response.status_code}: {response.text}")
        return next_ms, submit_ms

    def clients(self, count: int) -> list:
        return [self.session(name) for name in self.annotators[:count]]

    def peak_mb(self) -> float | None:
        return peak_rss_mb(self.process.pid) if self.process else None


def process_tree(root_pid: int) -> list[int]:
    """``root_pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU time of each of ``pids`` still running (their own, not their waited-for
    children's), in s."""
    seconds: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime and stime (fields 14 and 15 of stat)
        seconds[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def server_pids(system) -> list[int]:
    """The processes that serve ``system``: the server's process tree (where its pid is known)
    and the PostgreSQL backends connected to its database (:func:`backend_pids`)."""
    root = getattr(system, "process", None)
    root_pid = root.pid if root is not None else getattr(system, "pid", None)
    return (process_tree(root_pid) if root_pid else []) + backend_pids(system)


def backend_pids(system) -> list[int]:
    """The PostgreSQL backends connected to ``system``'s database (``database``, where it has
    one on the benchmark server)."""
    database = getattr(system, "database", None)
    if not database:
        return []
    import psycopg2

    with psycopg2.connect(scale_data.admin_url()) as connection:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database])
            return [pid for (pid,) in cursor.fetchall()]


def _client_process(system, session, project, cycles: int, start, results) -> None:
    """One client in its own process (``annotator_round(processes=True)``)."""
    start.wait()
    latencies: list[float] = []
    try:
        for _ in range(cycles):
            latencies.extend(system.cycle(session, project))
        results.put((latencies, None, _own_cpu()))
    except Exception as exc:
        results.put((latencies, repr(exc), _own_cpu()))


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def annotator_round(system, project, clients: int, cycles: int, *, processes: bool = False) -> dict:
    """``clients`` clients at once, ``cycles`` next + submit each (each its own account): the
    request latencies (ms), the wall time (s), the load average after, and the CPU seconds the
    clients and the server spent (``client_cpu``, ``server_cpu``: the server's processes, with
    its PostgreSQL backends, of which ``database_cpu``; None where its pid is unknown).

    The clients are threads of this process, or, with ``processes``, one process each: threads
    share one interpreter lock, so at 20 clients they could slow the client down rather than
    measure the server (``client_cpu`` says how much of the machine the clients used)."""
    sessions = system.clients(clients)
    latencies: list[float] = []
    errors: list[str] = []
    try:
        watched = server_pids(system)
    except Exception:  # no PostgreSQL access for the figure: not measured
        watched = []
    server_before = cpu_seconds(watched)
    if processes:
        context = multiprocessing.get_context("fork")
        start = context.Barrier(clients + 1)
        results = context.Queue()
        workers = [
            context.Process(
                target=_client_process, args=(system, s, project, cycles, start, results)
            )
            for s in sessions
        ]
        for worker in workers:
            worker.start()
        start.wait()
        began = time.perf_counter()
        client_cpu = 0.0
        for _ in workers:
            got, error, cpu = results.get()
            latencies.extend(got)
            client_cpu += cpu
            if error:
                errors.append(error)
        wall = time.perf_counter() - began
        for worker in workers:
            worker.join()
    else:
        barrier = threading.Barrier(clients + 1)

        def run(session) -> None:
            barrier.wait()
            try:
                for _ in range(cycles):
                    latencies.extend(system.cycle(session, project))
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
        for thread in threads:
            thread.start()
        cpu_before = _own_cpu()
        barrier.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        client_cpu = _own_cpu() - cpu_before
    if errors:
        raise RuntimeError(f"{system.kind}, {clients} clients: {errors[0]}")
    server_cpu = database_cpu = None
    if watched:
        backends: set[int] = set()
        try:  # backends opened during the round count too
            backends = set(backend_pids(system))
            watched = sorted(set(watched) | backends)
        except Exception:
            pass
        # Per process (one that ended during the round, a backend past CONN_MAX_AGE, is missed).
        after = cpu_seconds(watched)
        spent = {pid: after[pid] - server_before.get(pid, 0.0) for pid in after}
        server_cpu = sum(spent.values())
        database_cpu = sum(seconds for pid, seconds in spent.items() if pid in backends)
    return {
        "latencies": latencies,
        "wall": wall,
        "load": load(),
        "client_cpu": client_cpu,
        "server_cpu": server_cpu,
        "database_cpu": database_cpu,
    }


def summarise(rounds: list[dict]) -> dict:
    latencies = [ms for r in rounds for ms in r["latencies"]]
    return {
        "requests_per_s": len(latencies) / sum(r["wall"] for r in rounds),
        "p50": p50(latencies),
        "p95": p95(latencies),
        "requests": len(latencies),
        "load": max(r["load"] for r in rounds),
        # CPU seconds per request: the clients' and the server's (None: not measured)
        "client_cpu_ms": 1000 * sum(r.get("client_cpu") or 0 for r in rounds) / len(latencies),
        "server_cpu_ms": (
            1000 * sum(r["server_cpu"] for r in rounds) / len(latencies)
            if all(r.get("server_cpu") is not None for r in rounds)
            else None
        ),
        "database_cpu_ms": (
            1000 * sum(r["database_cpu"] for r in rounds) / len(latencies)
            if all(r.get("database_cpu") is not None for r in rounds)
            else None
        ),
    }
