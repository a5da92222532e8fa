"""Argument-structure exports compute CheckWhy's metrics in bulk, not per row (issue 34: a 100k
export re-ran the embedding model and the metrics for every row, ~50 rows/s): one model call per
batch of items whatever the number of rows, the draft's metrics once per item and an answer's
once per distinct answer of the item, with the rows' values unchanged."""

import io
import json

import numpy as np
import pytest

import task_types.argument_structure.task as structure_task
from annotation import services
from studies.models import ReadyExportColumns
from studies.services import exports
from studies.services.exports import export_jsonl
from studies.services.imports import import_items
from task_types.argument_structure import scoring
from task_types.argument_structure.models import StoredMetrics
from task_types.argument_structure.serializers import METRIC_KEYS
from tests import factories

STEPS = [
    {"premises": ["E1", "E2"], "conclusion": "E3"},
    {"premises": ["E3"], "conclusion": "claim"},
]
OTHER_STEPS = [
    {"premises": ["E1"], "conclusion": "E3"},
    {"premises": ["E3", "E2"], "conclusion": "claim"},
]


def record(n: int) -> dict:
    return {
        "id": f"why-{n}",
        "claim": f"Claim {n} holds because of its causes.",
        "cause": "the causes",
        "effect": "the effect",
        "label": "supports",
        "evidence": [
            {"id": "E1", "text": f"First statement about case {n}."},
            {"id": "E2", "text": f"Second statement about case {n}."},
            {"id": "E3", "text": f"The conclusion drawn in case {n}."},
        ],
        "structure": OTHER_STEPS,
        "reference_structure": STEPS,
    }


class CountingEmbedder:
    """A stand-in for MiniLM: a fixed vector per text (from its hash), counting its calls."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, texts):
        self.calls.append(len(texts))
        vectors = np.array(
            [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(8) for t in texts]
        )
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def embedder(monkeypatch):
    counting = CountingEmbedder()
    monkeypatch.setitem(
        scoring.SCORERS,
        scoring.MINILM,
        lambda: scoring.EmbeddingEdgeScorer(name="counting", embed=counting),
    )
    monkeypatch.setattr(scoring, "_made", {})
    return counting


def answered_project(items: int):
    project = factories.ProjectFactory(
        task_type="argument_structure", config={"mode": "edit"}, annotators_per_item=2
    )
    lines = "".join(json.dumps(record(n)) + "\n" for n in range(items))
    import_items(project=project, stream=io.BytesIO(lines.encode()), fmt="jsonl")
    for k in range(2):
        annotator = factories.UserFactory()
        factories.MembershipFactory(project=project, user=annotator, role="annotator")
        while (
            assignment := services.assignment_next(project=project, annotator=annotator)
        ) is not None:
            n = int(assignment.item.external_id.split("-")[1])
            steps = OTHER_STEPS if (n + k) % 3 == 0 else STEPS
            evidence = [{"id": e["id"], "text": e["text"]} for e in record(n)["evidence"]]
            answer = {"claim": record(n)["claim"], "evidence": evidence, "steps": steps}
            services.annotation_submit(assignment=assignment, answer=answer)
    return project


def count_metrics(monkeypatch) -> list[int]:
    calls: list[int] = []
    measure = structure_task.structure_metrics

    def counted(*args, **kwargs):
        calls.append(1)
        return measure(*args, **kwargs)

    monkeypatch.setattr(structure_task, "structure_metrics", counted)
    return calls


@pytest.mark.django_db
@pytest.mark.parametrize("items", [2, 9])
def test_an_export_embeds_once_per_batch_and_measures_each_draft_once(items, embedder, monkeypatch):
    project = answered_project(items)
    metrics = count_metrics(monkeypatch)
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert len(rows) == 2 * items
    assert len(embedder.calls) == 1  # one model call for every row of the batch
    # Per item: the draft once, each distinct answer once (two answers agree on 1 item in 3).
    distinct = sum(1 if n % 3 == 1 else 2 for n in range(items))
    assert len(metrics) == items + distinct
    assert all(row["structure_scorer"] == "counting" for row in rows)


@pytest.mark.django_db
def test_a_batch_boundary_changes_no_value_and_memory_keeps_one_batch(embedder, monkeypatch):
    project = answered_project(5)
    whole = list(export_jsonl(project=project))
    StoredMetrics.objects.all().delete()  # computed again, in smaller batches
    ReadyExportColumns.objects.all().delete()  # the rows stored from them too
    monkeypatch.setattr(exports, "BATCH_ITEMS", 2)
    assert list(export_jsonl(project=project)) == whole
    assert len(embedder.calls) == 1 + 3  # the first export's batch, then batches of 2, 2, 1


@pytest.mark.django_db
def test_a_submit_computes_nothing_and_the_second_export_reads_what_the_first_stored(
    embedder, monkeypatch
):
    project = answered_project(4)
    assert embedder.calls == []  # no model call on the annotators' submits
    assert StoredMetrics.objects.count() == 0
    first = list(export_jsonl(project=project))
    assert StoredMetrics.objects.count() == 8  # every human answer's
    metrics = count_metrics(monkeypatch)
    calls = len(embedder.calls)
    assert list(export_jsonl(project=project)) == first  # the same bytes, from stored values
    assert metrics == [] and len(embedder.calls) == calls  # nothing computed again


@pytest.mark.django_db
def test_stale_stored_metrics_are_computed_again(embedder, monkeypatch):
    project = answered_project(3)
    first = [json.loads(line) for line in export_jsonl(project=project)]
    stored = StoredMetrics.objects.order_by("pk").first()
    # Values stored under another key (an item fixed since, another scorer): not served.
    StoredMetrics.objects.update(key="0" * 64, values=[[0.5] * len(METRIC_KEYS), None])
    ReadyExportColumns.objects.all().delete()  # the rows made from the metrics, read no more
    metrics = count_metrics(monkeypatch)
    again = [json.loads(line) for line in export_jsonl(project=project)]
    assert again == first
    assert len(metrics) == 3 + 5  # each draft once, each distinct answer once, as at first
    assert StoredMetrics.objects.get(pk=stored.pk).key == stored.key  # stored anew
    # Same key, other values: served as stored (the key is what decides).
    StoredMetrics.objects.filter(pk=stored.pk).update(
        values=[[0.25] * len(METRIC_KEYS), stored.values[1]]
    )
    ReadyExportColumns.objects.all().delete()
    served = [json.loads(line) for line in export_jsonl(project=project)]
    changed = [row for row in served if row["exact_match_similarity"] == 0.25]
    assert len(changed) == 1 and changed[0]["leaf_f1"] == 0.25


@pytest.mark.django_db
def test_the_export_rows_equal_the_row_hook_row_by_row(embedder):
    project = answered_project(4)
    task = structure_task.ArgumentStructure()
    from annotation.models import Annotation

    exported = [json.loads(line) for line in export_jsonl(project=project)]
    by_hook = []
    for annotation in Annotation.objects.filter(item__project=project).order_by(
        "item__position", "assignment__sequence", "id"
    ):
        by_hook.append(task.export_row(annotation.item, annotation))
    for row, expected in zip(exported, by_hook, strict=True):
        assert {key: row[key] for key in expected} == json.loads(json.dumps(expected))


@pytest.mark.django_db
def test_the_command_stores_what_is_missing(embedder, monkeypatch):
    from django.core.management import call_command

    project = answered_project(3)
    out = io.StringIO()
    call_command("argument_structure_metrics", project=[project.slug], stdout=out)
    assert "6 answers with stored metrics (6 new)" in out.getvalue()
    metrics = count_metrics(monkeypatch)
    list(export_jsonl(project=project))
    assert metrics == []  # the export read them all
