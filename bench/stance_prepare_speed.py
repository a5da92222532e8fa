"""Stance import preparation: one record at a time versus batched per chunk (``prepare_batch``).

    .venv/bin/python bench/stance_prepare_speed.py [--items 300]

Preparing a stance item splits the response into sentences and embeds the claim and every
sentence with all-MiniLM-L6-v2 (CPU). The baseline, measured in the same run, is ``prepare`` called
per record (one encode per record); the batched path splits a whole chunk with one spaCy pipe and
encodes all its texts at once, each distinct text once (a claim repeats across its five levels).
The model is loaded before timing; its load time is printed separately. Synthetic records:
five levels per claim, responses of 6–10 sentences.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from annotation import task_types  # noqa: E402
from annotation.text import embeddings  # noqa: E402

WORDS = (
    "vitamin coffee heart risk study trial patients doctors evidence people daily dose effect "
    "health sleep exercise diet sugar blood pressure cancer cold immune children adults"
).split()


def records(count: int, rng: random.Random) -> list[dict]:
    out = []
    for n in range(count):
        claim_number = n // 5
        claim = f"Claim {claim_number}: " + " ".join(rng.choice(WORDS) for _ in range(8)) + "."
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
            for _ in range(rng.randint(6, 10))
        ]
        out.append(
            {
                "id": f"r{n}",
                "claim_id": f"c{claim_number}",
                "claim": claim,
                "response": " ".join(sentences),
                "level": n % 5,
                "veracity": "false",
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    args = parser.parse_args()
    task = task_types.get("stance")
    config = task.validate_config({"k": 5})
    payloads = [{**r, **task.validate_payload(r)} for r in records(args.items, random.Random(5))]

    started = time.perf_counter()
    embeddings.get_model()
    info = embeddings.load_info()
    print(
        f"model: verify {info.verify_seconds:.2f} s, load {info.load_seconds:.2f} s "
        f"(first use in this process: {time.perf_counter() - started:.2f} s)"
    )
    task.prepare(payloads[0], config=config)  # warm spaCy and the first encode

    started = time.perf_counter()
    one_by_one = [task.prepare(p, config=config) for p in payloads]
    baseline = time.perf_counter() - started

    started = time.perf_counter()
    batched = task.prepare_batch(payloads, config=config)
    batch_time = time.perf_counter() - started

    same = sum(
        [t["index"] for t in a[0].prepared["targets"]]
        == [t["index"] for t in b[0].prepared["targets"]]
        for a, b in zip(one_by_one, batched, strict=True)
    )
    print(
        f"{args.items} items · one by one (baseline) {baseline:.2f} s ({args.items / baseline:.0f} items/s)"
    )
    print(
        f"{args.items} items · batched               {batch_time:.2f} s ({args.items / batch_time:.0f} items/s)"
    )
    print(
        f"batched / baseline time ratio: {batch_time / baseline:.2f} (speed-up ×{baseline / batch_time:.1f})"
    )
    print(f"same sentences chosen for {same} of {args.items} items")


if __name__ == "__main__":
    main()
