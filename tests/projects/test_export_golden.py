"""Exports are byte for byte what they were (issue 34: exports made faster must write the same
bytes). Each task type's export of a fixed project, JSONL and CSV, humans and all coders, is
compared with the file written before the speed-ups (``export_golden/<database>/``), whole: a changed byte
fails and shows where.

What the database chooses (pseudonyms, times, the project's slug) is fixed after the answers are
made, so the files hold only what the export code writes. To write the files anew, on purpose,
after a change to what an export holds: ``CONCORD_WRITE_EXPORT_GOLDEN=1 pytest <this file>``, on SQLite and
on PostgreSQL,
then review the diff.

One exception to "byte for byte": a number the export computes in floating point (Structure
Similarity comes out of matrix products) is compared to 12 significant digits, because OpenBLAS
picks its kernels by CPU (AVX2, AVX-512) and the last bits differ from one machine to another.
Every other byte, and every such number to 12 digits, must be as it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from annotation.models import Adjudication, Annotation, Assignment
from llm_judges.models import Judge, JudgeResult
from llm_judges.selectors import _setting
from projects.models import Membership, Project
from studies.services.exports import export_chunks
from studies.services.imports import import_items
from task_types.argument_structure import scoring
from tests import factories
from tests.projects.test_export_rows import answer_all, member, stance_items

GOLDEN = Path(__file__).parent / "export_golden"
WRITE = os.environ.get("CONCORD_WRITE_EXPORT_GOLDEN") == "1"
BASE = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
# a float written with more than 12 significant digits (where BLAS noise can show)
LONG_FLOAT = re.compile(r"-?\d+\.\d{12,}(?:e-?\d+)?")


def to_12_digits(text: str) -> str:
    """``text`` with every long float rounded to 12 significant digits."""
    return LONG_FLOAT.sub(lambda m: format(float(m.group()), ".12g"), text)


def _fixed(project: Project, name: str) -> Project:
    """Pin what the database and the clock chose: the slug, pseudonyms (by membership order),
    times and time spent (by answer order)."""
    Project.objects.filter(pk=project.pk).update(slug=f"golden-{name}")
    for k, membership in enumerate(Membership.objects.filter(project=project).order_by("id")):
        Membership.objects.filter(pk=membership.pk).update(pseudonym=f"ann-{name[:6]}-{k}")
    answers = Annotation.objects.filter(item__project=project).order_by("id")
    for k, annotation in enumerate(answers):
        moment = BASE + timedelta(minutes=7 * k, seconds=k % 13, microseconds=1000 * k)
        Annotation.objects.filter(pk=annotation.pk).update(
            created_at=moment, time_spent_ms=3000 + 137 * k
        )
        Assignment.objects.filter(pk=annotation.assignment_id).update(
            reserved_at=moment - timedelta(seconds=95)
        )
    return Project.objects.get(pk=project.pk)


class _Embedder:
    """A stand-in for MiniLM that gives every text the same vector on every run (from its
    sha256), so Structure Similarity is fixed."""

    def __call__(self, texts):
        vectors = np.array(
            [
                np.random.default_rng(
                    int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "big")
                ).standard_normal(8)
                for t in texts
            ]
        )
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _citation_recovery(monkeypatch) -> Project:
    project = factories.ProjectFactory(annotators_per_item=3)
    items = factories.make_items(project, 4)
    factories.make_items(project, 1, kind="control", start=4)
    alice, bob, carol = (member(project, order_seed=seed) for seed in (11, 12, 13))
    answer_all(project, alice, lambda item: {"sentences": [0, 1], "helpfulness": 64})
    answer_all(project, bob, lambda item: {"sentences": [], "none": True, "helpfulness": 3})
    answer_all(project, carol, lambda item: {"sentences": [1], "helpfulness": 50})
    Membership.objects.filter(project=project, user=bob).update(qualification="disqualified")
    # keys in the order PostgreSQL's jsonb keeps them (shorter first), as SQLite keeps them given
    Adjudication.objects.create(item=items[0], answer={"none": False, "sentences": [1]})
    judge = Judge.objects.create(project=project, name="the-judge", kind="llm", model="m-1")
    for n, item in enumerate(items):
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version="v1",
            setting=_setting(project),
            status="ok" if n != 1 else "failed",
            error="" if n != 1 else "=cmd",
            answer={"sentences": [n % 3], "none": False} if n != 1 else None,
            raw='{"sentences": [1]}',
            attempts=n + 1,
        )
    return project


def _stance(monkeypatch) -> Project:
    project = factories.ProjectFactory(task_type="stance", config={"k": 2}, annotators_per_item=2)
    stance_items(project, 5)
    for label, sure in (("agree", False), ("disagree", True)):
        answer_all(
            project,
            member(project, order_seed=51 if sure else 52),
            lambda item, label=label, sure=sure: {
                "label": label,
                "not_sure": sure,
                "sentences": [
                    {"index": 0, "label": "neutral", "not_sure": sure},
                    {"index": 2, "label": label},
                ],
            },
        )
    return project


def _argument_structure(monkeypatch) -> Project:
    from tests.task_types.argument_structure import test_export_batches as batches

    return batches.answered_project(5)


def _ranking(monkeypatch) -> Project:
    import task_types.ranking.task as ranking_task
    from tests.task_types.ranking.test_ranking import CRITERIA, RECORDS, SYSTEMS, ranks_for

    made = iter(range(1, 1000))  # the outputs' opaque keys, fixed (secrets.token_hex otherwise)
    monkeypatch.setattr(
        ranking_task, "_new_keys", lambda count: [f"{next(made):08x}" for _ in range(count)]
    )

    project = factories.ProjectFactory(
        task_type="ranking",
        config={"criteria": CRITERIA, "systems": SYSTEMS, "seed": 5},
        annotators_per_item=2,
    )
    lines = "".join(json.dumps(r) + "\n" for r in RECORDS[:3])
    import_items(project=project, stream=io.BytesIO(lines.encode()), fmt="jsonl")
    tied = {c["name"]: {"gpt4": 1, "gpt35": 1, "llama2-70b": 3} for c in CRITERIA}
    second = {c["name"]: {"gpt4": 2, "gpt35": 1, "llama2-70b": 3} for c in CRITERIA}
    for seed, ranks in ((21, tied), (22, second)):
        annotator = member(project, order_seed=seed)
        answer_all(project, annotator, lambda item, ranks=ranks: ranks_for(item, ranks))
    return project


def _questionnaire(monkeypatch) -> Project:
    from tests.task_types.questionnaire.test_questionnaire import CONFIG, GOOD, RECORDS

    project = factories.ProjectFactory(task_type="questionnaire", config=CONFIG)
    lines = "".join(json.dumps(r) + "\n" for r in RECORDS[:2])
    import_items(project=project, stream=io.BytesIO(lines.encode()), fmt="jsonl")
    answer_all(project, member(project, order_seed=31), lambda item: GOOD)
    answer_all(project, member(project, order_seed=32), lambda item: {**GOOD, "why": "=1+1"})
    return project


def _claim_review(monkeypatch) -> Project:
    from tests.task_types.claim_review.test_claim_review import TRIAL_LINES, keep_all

    project = factories.ProjectFactory(task_type="claim_review", config={}, annotators_per_item=2)
    body = "\n".join(TRIAL_LINES).encode()
    import_items(project=project, stream=io.BytesIO(body), fmt="fastfact")
    answer_all(project, member(project, order_seed=41), keep_all)
    answer_all(project, member(project, order_seed=42), keep_all)
    return project


PROJECTS = {
    "citation_recovery": _citation_recovery,
    "stance": _stance,
    "argument_structure": _argument_structure,
    "ranking": _ranking,
    "questionnaire": _questionnaire,
    "claim_review": _claim_review,
}


@pytest.fixture
def fixed_embedder(monkeypatch):
    monkeypatch.setitem(
        scoring.SCORERS,
        scoring.MINILM,
        lambda: scoring.EmbeddingEdgeScorer(name="fixed", embed=_Embedder()),
    )
    monkeypatch.setattr(scoring, "_made", {})


@pytest.mark.django_db
@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_every_task_types_export_is_byte_for_byte_what_it_was(slug, fixed_embedder, monkeypatch):
    project = _fixed(PROJECTS[slug](monkeypatch), slug)
    # PostgreSQL's jsonb orders a stored object's keys (shorter first), SQLite keeps them as
    # given: JSON read back from the database (presentation, adjudicated) differs by database.
    golden = GOLDEN / connection.vendor
    for coders in ("humans", "all"):
        for fmt in ("jsonl", "csv"):
            text = "".join(export_chunks(project=project, fmt=fmt, coders=coders))
            path = golden / f"{slug}.{coders}.{fmt}"
            if WRITE:
                golden.mkdir(parents=True, exist_ok=True)
                path.write_bytes(text.encode("utf-8"))
                continue
            assert path.exists(), f"{path.name} is missing: write it (see the module docstring)"
            expected = path.read_bytes().decode("utf-8")
            assert text.count("\n") > 3, "the fixture must have rows"
            text, expected = to_12_digits(text), to_12_digits(expected)
            assert text.splitlines() == expected.splitlines(), path.name
            assert text == expected, path.name


def test_only_float_noise_past_12_digits_is_forgiven():
    written = 'a,0.7364139520983244,"x",12,0.5\n'
    assert to_12_digits(written) == to_12_digits('a,0.7364139520983243,"x",12,0.5\n')
    assert to_12_digits(written) != to_12_digits('a,0.7364139520993244,"x",12,0.5\n')
    assert to_12_digits(written) != to_12_digits('a,0.7364139520983244,"y",12,0.5\n')
    assert to_12_digits("1.25,3") == "1.25,3"  # short numbers are left as written
