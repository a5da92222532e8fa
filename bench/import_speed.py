"""Import speed and memory: synthetic citation-recovery items into SQLite and PostgreSQL.

    .venv/bin/python bench/import_speed.py [--sizes 10000 100000] [--quick] [--database NAME]

Two paths are measured: ``import_items`` on the file (the CLI's path) and, on PostgreSQL, the
upload path the web form and the API take (``import_job_create`` stores the upload in parts,
then the job reads them back as a stream; Celery runs it in-process here).

Each (database, size) runs in a fresh subprocess so peak memory (VmHWM) is its own. The
baseline measured in the same run is reading + JSON-parsing the same file; the report prints
items/s, time relative to that baseline, and peak memory relative to the smallest size (flat
memory means the ratio stays near 1 while the file grows). Target from the issue: 100k items in
under 60 s on a 2-core machine. PostgreSQL is used when reachable at $BENCH_POSTGRES_URL
(default postgres://postgres@127.0.0.1:5432/postgres); it creates a scratch database,
``--database`` (default ``concord_bench``), afresh for each run and drops it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402  (scratch databases)
from scale_data import WORDS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATABASE = "concord_bench"


def sentence(rng: random.Random, cite: list[int]) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 22)))
    markers = "".join(f"[{c}]" for c in cite)
    return (
        f"{words.capitalize()}{markers}."
        if rng.random() < 0.5
        else f"{words.capitalize()} {markers}."
    )


def record(n: int, rng: random.Random) -> dict:
    count = rng.randint(4, 10)
    evidence = [
        {"id": i, "text": " ".join(rng.choice(WORDS) for _ in range(15))} for i in range(12)
    ]
    sentences = [sentence(rng, rng.sample(range(12), rng.randint(0, 2))) for _ in range(count)]
    sentences[0] = sentence(rng, [rng.randrange(12)])
    return {
        "id": f"synthetic-{n}",
        "claim": sentence(rng, []),
        "label": rng.choice(["true", "false", "half-true"]),
        "evidence": evidence,
        "explanation": " ".join(sentences),  # raw text: the import splits it with spaCy
        "generator": rng.choice(["gpt4", "gpt35", "llama2-70b"]),
    }


def write_file(path: Path, size: int) -> None:
    rng = random.Random(size)
    with path.open("w") as out:
        for n in range(size):
            out.write(json.dumps(record(n, rng)) + "\n")


def worker(database_url: str, path: str, mode: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from projects.models import Project
    from studies.services.imports import import_items

    project = Project.objects.create(slug="bench", name="bench", task_type="citation_recovery")
    from annotation.text import split_sentences

    split_sentences("Warm up the pipeline [1].")
    started = time.perf_counter()
    if mode == "upload":
        from django.conf import settings
        from django.core.files import File

        from studies.services.import_jobs import import_job_create

        settings.CONCORD_MAX_UPLOAD_BYTES = 2**40
        with open(path, "rb") as stream:
            job = import_job_create(
                project=project,
                user=None,
                uploaded_file=File(stream, name="items.jsonl"),
                fmt="jsonl",
            )
        job.refresh_from_db()
        assert job.status == "done", job.message
        created = job.report["created"]
    else:
        with open(path, "rb") as stream:
            created = import_items(project=project, stream=stream, fmt="jsonl").created
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "items": created, "peak_mb": scale_data.peak_mb()}))


def baseline(path: Path) -> float:
    started = time.perf_counter()
    with path.open() as stream:
        for line in stream:
            json.loads(line)
    return time.perf_counter() - started


def postgres_url(database: str) -> str | None:
    """The URL of ``database``, dropped and created afresh; None when PostgreSQL is not reachable."""
    return scale_data.scratch_database(database, required=False)


def rows(*, quick: bool = False, database: str = DATABASE) -> dict:
    """The upload path (PostgreSQL) at 10k items (2k with ``quick``) for bench/scale.py:
    items/s, time relative to reading and parsing the file, and peak memory. ``database``: the
    scratch database (recreated, dropped at the end)."""
    sizes = [2_000] if quick else [10_000]
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"items-{size}.jsonl"
            write_file(path, size)
            base = baseline(path)
            url = postgres_url(database)
            if url is None:
                return {"sizes": []}
            out = subprocess.run(
                [sys.executable, __file__, "--worker", url, str(path), "upload"],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            figures.append(
                {
                    "items": result["items"],
                    "items_per_s": result["items"] / result["seconds"],
                    "vs_parse": round(result["seconds"] / base, 1),
                    "peak_mb": result["peak_mb"],
                }
            )
    scale_data.drop_database(database)
    return {"sizes": figures}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--quick", action="store_true", help="1k and 5k items only")
    parser.add_argument(
        "--targets",
        nargs="+",
        default=["sqlite", "postgresql", "pg upload"],
        help="which of: sqlite, postgresql, 'pg upload'",
    )
    parser.add_argument(
        "--database",
        default=DATABASE,
        help=f"the scratch PostgreSQL database, recreated for each run (default {DATABASE})",
    )
    args = parser.parse_args()
    sizes = [1_000, 5_000] if args.quick else args.sizes
    rows = []
    created = False  # the scratch PostgreSQL database, to drop at the end
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"items-{size}.jsonl"
            write_file(path, size)
            base = baseline(path)
            targets = [("sqlite", f"sqlite:///{tmp}/bench-{size}.sqlite3", "file")]
            if postgres_url(args.database):
                created = True
                targets.append(("postgresql", "fresh", "file"))
                targets.append(("pg upload", "fresh", "upload"))
            for name, url, mode in targets:
                if name not in args.targets:
                    continue
                # a fresh database per run
                url = postgres_url(args.database) if url == "fresh" else url
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", url, str(path), mode],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=REPO,
                )
                result = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append((name, size, result, base, path.stat().st_size / 1e6))
                print(name, size, result, flush=True)
    if created:
        scale_data.drop_database(args.database)
    smallest = {name: r["peak_mb"] for name, s, r, _, _ in rows if s == sizes[0]}
    for name, _, r, _, _ in rows:
        smallest.setdefault(name, r["peak_mb"])
    print(
        f"{'database':<11}{'items':>9}{'file MB':>9}{'seconds':>9}{'items/s':>10}"
        f"{'x parse':>9}{'peak MB':>9}{'mem ratio':>10}"
    )
    for name, size, r, base, megabytes in rows:
        print(
            f"{name:<11}{size:>9}{megabytes:>9.1f}{r['seconds']:>9.1f}{r['items'] / r['seconds']:>10.0f}"
            f"{r['seconds'] / base:>9.1f}{r['peak_mb']:>9.0f}{r['peak_mb'] / smallest[name]:>10.2f}"
        )
    print("x parse: import time / time to read and JSON-parse the same file (baseline, same run).")
    print("mem ratio: peak memory / peak memory at the smallest size (flat memory stays near 1).")


if __name__ == "__main__":
    main()
