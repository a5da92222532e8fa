"""NLI judges with a tiny model the test builds and saves, loaded through the real code path
(``AutoModelForSequenceClassification.from_pretrained``, offline)."""

import pytest

from llm_judges import services
from llm_judges.backends.nli import load_nli_model
from llm_judges.models import JudgeResult, JudgeRun
from tests.llm_judges.conftest import start
from tests.llm_judges.tiny_nli import build_tiny_nli


@pytest.fixture(scope="module")
def entailing_model(tmp_path_factory):
    """Always answers ENTAILMENT, which this model keeps at index 0."""
    return build_tiny_nli(tmp_path_factory.mktemp("nli") / "entails", bias=(4.0, 0.0, 0.0))


@pytest.fixture(scope="module")
def contradicting_model(tmp_path_factory):
    """Always answers CONTRADICTION, at index 1, where cross-encoder NLI models keep entailment."""
    return build_tiny_nli(tmp_path_factory.mktemp("nli") / "contradicts", bias=(0.0, 4.0, 0.0))


@pytest.fixture(scope="module")
def random_model(tmp_path_factory):
    return build_tiny_nli(
        tmp_path_factory.mktemp("nli") / "random", bias=(0.0, 0.0, 0.0), zero_weights=False, seed=3
    )


def nli_judge(path, project, name="tiny-nli", **parameters):
    return services.judge_create(
        project=project,
        name=name,
        kind="nli",
        model=str(path),
        parameters={"batch_size": 3, **parameters},
    )


def test_labels_come_from_id2label_not_from_their_position(entailing_model):
    model = load_nli_model(str(entailing_model))
    assert model.labels == ["entailment", "contradiction", "neutral"]
    (probabilities,) = model.classify([("A premise.", "A hypothesis.")])
    assert max(probabilities, key=probabilities.get) == "entailment"


def test_an_entailing_model_selects_every_sentence(
    project, items, entailing_model, django_capture_on_commit_callbacks
):
    judge = nli_judge(entailing_model, project)
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert run.answered_count == 5
    result = JudgeResult.objects.get(item=items[0])
    assert result.answer == {"sentences": [0, 1, 2, 3], "none": False}
    pairs = result.detail["pairs"]
    assert [p["label"] for p in pairs] == ["entailment"] * 4
    assert pairs[0]["probabilities"]["entailment"] > 0.9


def test_a_model_that_never_entails_answers_none(
    project, items, contradicting_model, django_capture_on_commit_callbacks
):
    judge = nli_judge(contradicting_model, project)
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.answered_count == 5
    assert JudgeResult.objects.get(item=items[0]).answer == {"sentences": [], "none": True}


def test_batched_scores_equal_one_pair_at_a_time(random_model):
    model = load_nli_model(str(random_model))
    pairs = [
        ("The 2023 report lists 40 km of new lanes.", "The city doubled its bike lanes in 2023."),
        ("Evidence passage 2 of claim 0.", "Sentence 1 of explanation 0."),
        (
            "Most new lanes are painted, not protected.",
            "The network was 80 km long at the end of 2022.",
        ),
        ("Claim number 1 is accurate.", "Claim."),
    ]
    batched = model.classify(pairs, batch_size=4)
    single = [model.classify([pair], batch_size=1)[0] for pair in pairs]
    for a, b in zip(batched, single, strict=True):
        assert a.keys() == b.keys()
        for label in a:
            assert a[label] == pytest.approx(b[label], abs=1e-5)
    assert len({round(p["neutral"], 6) for p in batched}) > 1  # the text matters to this model


def test_the_model_is_loaded_once_per_process(entailing_model):
    assert load_nli_model(str(entailing_model)) is load_nli_model(str(entailing_model))


def test_a_model_without_an_entailment_label_fails_the_run_with_its_labels(
    tmp_path, project, items, django_capture_on_commit_callbacks
):
    path = build_tiny_nli(tmp_path / "odd", labels={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    run = start(nli_judge(path, project), project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.FAILED
    assert "no 'entailment' label" in run.error
    assert "0: LABEL_0" in run.error
    assert not JudgeResult.objects.exists()


def test_the_entailment_label_name_can_be_configured(
    tmp_path, project, items, django_capture_on_commit_callbacks
):
    path = build_tiny_nli(
        tmp_path / "named", labels={0: "entails", 1: "contradicts", 2: "unrelated"}
    )
    run = start(
        nli_judge(path, project, entailment_label="entails"),
        project,
        django_capture_on_commit_callbacks,
    )
    assert run.answered_count == 5


def test_a_missing_model_directory_fails_the_run_with_its_path(
    tmp_path, project, items, django_capture_on_commit_callbacks
):
    run = start(
        nli_judge(tmp_path / "nowhere", project), project, django_capture_on_commit_callbacks
    )
    assert run.status == JudgeRun.Status.FAILED
    assert "nowhere" in run.error


def test_a_classifier_judged_both_ways_records_both_directions(
    project, items, entailing_model, django_capture_on_commit_callbacks
):
    judge = nli_judge(entailing_model, project, direction="both")
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.answered_count == 5
    result = JudgeResult.objects.get(item=items[0])
    assert result.answer == {"sentences": [0, 1, 2, 3], "none": False}
    first = result.detail["pairs"][0]
    assert first["label"] == "entailment"
    assert first["forward"]["label"] == first["reverse"]["label"] == "entailment"
    assert first["reverse"]["probabilities"]["entailment"] > 0.9
    assert result.raw == ""
