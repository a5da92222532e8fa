"""Seq2seq NLI judges with a tiny random T5 the test builds and saves (word-level tokenizer made
offline), loaded through the real code path (``AutoModelForSeq2SeqLM.from_pretrained``).

A random model's answers are arbitrary, so the tests never assume them: the model's generation
config only lets it say "entailment", "neutral" or "contradiction" (one token), the tests ask the
saved model itself, one text at a time, what it answers to each rendered input
(:func:`generate_each`), and compare the stored labels with the label mapping applied to those
answers. The mapping is a permutation (contradiction → entailment…), so a judge that ignored it
would store other labels.
"""

import json
from collections import Counter

import pytest
from rest_framework import serializers

from llm_judges import prompts, services
from llm_judges.backends import nli
from llm_judges.backends.nli import Seq2SeqNLIModel, combine_directions, load_nli_model
from llm_judges.models import JudgeResult, JudgeRun
from tests import factories
from tests.llm_judges.conftest import start
from tests.llm_judges.test_worker import broker, run_status, start_worker, wait_for  # noqa: F401
from tests.llm_judges.tiny_nli import build_tiny_nli
from tests.llm_judges.tiny_t5 import build_tiny_t5, generate_each

TEMPLATE = "mnli hypothesis: {hypothesis} premise: {premise}"
# Generated text (any case) → NLI label; deliberately not the identity.
PERMUTED = {"Contradiction": "entailment", "NEUTRAL": "contradiction", "entailment": "neutral"}


def mapped(text):
    return {k.lower(): v for k, v in PERMUTED.items()}.get(text.lower())


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    # Seed and scale picked so that the model's answers to the test items differ between pairs
    # (asserted where it matters): a tiny random T5 often answers the same word to everything.
    return build_tiny_t5(tmp_path_factory.mktemp("t5") / "tiny-t5", seed=0, initializer_factor=3)


def t5_judge(path, project, name="tiny-t5", **parameters):
    defaults = {
        "batch_size": 3,
        "model_type": "auto",
        "label_mapping": PERMUTED,
        "input_template": TEMPLATE,
        "max_new_tokens": 1,
    }
    return services.judge_create(
        project=project,
        name=name,
        kind="nli",
        model=str(path),
        parameters={**defaults, **parameters},
    )


def item_pairs(item):
    return prompts.get(item.project.task_type).pairs(item, "v1")


def rendered(pairs, *, reverse=False):
    return [
        TEMPLATE.format(premise=h, hypothesis=p)
        if reverse
        else TEMPLATE.format(premise=p, hypothesis=h)
        for p, h in pairs
    ]


def reference(t5, items, *, reverse=False):
    """Per item, what the saved model answers to each of its pairs, asked one at a time."""
    return [generate_each(t5, rendered(item_pairs(item), reverse=reverse)) for item in items]


# --- configuration -------------------------------------------------------------------------------


def refusal(**parameters):
    project = factories.ProjectFactory()
    with pytest.raises(serializers.ValidationError) as caught:
        services.judge_create(
            project=project, name="bad", kind="nli", model="/models/t5", parameters=parameters
        )
    return caught.value.detail


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("parameters", "field", "words"),
    [
        ({"model_type": "seq2seq"}, "label_mapping", "needs a label mapping"),
        ({"label_mapping": {"1": "entails"}}, "label_mapping", "'1' maps to 'entails'"),
        ({"label_mapping": {"0": "neutral"}}, "label_mapping", "No text maps to entailment"),
        (
            {"label_mapping": {"Yes": "entailment", " yes": "neutral"}},
            "label_mapping",
            "given twice",
        ),
        (
            {"model_type": "classifier", "label_mapping": {"1": "entailment"}},
            "label_mapping",
            "Only seq2seq",
        ),
        ({"input_template": "nli {claim} {premise} {hypothesis}"}, "input_template", "{claim}"),
        ({"input_template": "nli premise: {premise}"}, "input_template", "{hypothesis} is missing"),
        ({"direction": "sideways"}, "direction", "not a valid choice"),
    ],
)
def test_bad_seq2seq_settings_are_refused_on_save_naming_the_parameter(parameters, field, words):
    detail = refusal(**parameters)
    assert field in detail, detail
    assert words in str(detail[field]), detail[field]


@pytest.mark.django_db
def test_the_label_mapping_is_stored_trimmed_and_lower_cased():
    judge = services.judge_create(
        project=factories.ProjectFactory(),
        name="t5",
        kind="nli",
        model="/models/t5",
        parameters={"label_mapping": {" 1 ": "Entailment", "0": "neutral"}},
    )
    assert judge.parameters["label_mapping"] == {"1": "entailment", "0": "neutral"}
    assert judge.parameters["direction"] == "forward"
    assert judge.parameters["model_type"] == "auto"


def test_both_directions_combine_by_the_documented_rule():
    e, n, c = "entailment", "neutral", "contradiction"
    table = {
        (e, e): e, (n, n): n, (c, c): c,
        (e, n): n, (n, e): n,
        (e, c): c, (c, e): c, (n, c): c, (c, n): c,
        (e, None): None, (None, c): None, (None, None): None,
    }  # fmt: skip
    for (forward, reverse), expected in table.items():
        assert combine_directions(forward, reverse) == expected, (forward, reverse)


# --- the model -----------------------------------------------------------------------------------


def test_a_t5_is_detected_as_seq2seq_and_encoder_only_or_bart_like_classifiers_are_not(
    t5, tmp_path
):
    assert nli.detect_model_type(str(t5)) == "seq2seq"
    assert nli.detect_model_type(str(build_tiny_nli(tmp_path / "bert"))) == "classifier"
    assert isinstance(load_nli_model(str(t5)), Seq2SeqNLIModel)
    assert load_nli_model(str(t5)) is load_nli_model(str(t5), model_type="seq2seq")


def test_batched_generation_equals_one_text_at_a_time(t5):
    model = load_nli_model(str(t5))
    texts = rendered(
        [
            (f"Evidence passage 2 of claim {n}.", f"Sentence {i} of explanation {n}.")
            for n in range(5)
            for i in range(1, 5)
        ]
    )
    texts.append(
        "mnli premise: a much longer text than the others, so that the batch is padded a lot 1 2 3 4 5 6 7 8 9"
    )
    batched = model.generate(texts, batch_size=4, max_new_tokens=1)
    assert batched == generate_each(t5, texts)
    assert len(set(batched)) > 1  # the input matters to this model
    assert all(text in ("entailment", "neutral", "contradiction") for text in batched)


# --- runs ----------------------------------------------------------------------------------------


def test_a_seq2seq_judge_stores_the_label_mapping_of_what_the_model_generated(
    project, items, t5, django_capture_on_commit_callbacks
):
    expected_texts = reference(t5, items)
    flat = [text for texts in expected_texts for text in texts]
    labels = {mapped(t) for t in flat}
    assert "entailment" in labels and len(labels) > 1, Counter(flat)  # the answers differ

    run = start(t5_judge(t5, project), project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert run.answered_count == len(items)
    for item, texts in zip(items, expected_texts, strict=True):
        result = JudgeResult.objects.get(item=item, run=run)
        assert result.status == JudgeResult.Status.OK
        assert result.detail["pairs"] == [{"label": mapped(t), "generated": t} for t in texts]
        selected = [i for i, t in enumerate(texts) if mapped(t) == "entailment"]
        assert result.answer == {"sentences": selected, "none": not selected}
        assert result.raw == json.dumps(texts)


def test_generated_text_outside_the_mapping_makes_the_item_unparseable_and_keeps_the_text(
    project, items, t5, django_capture_on_commit_callbacks
):
    expected_texts = reference(t5, items)
    known = Counter(t for texts in expected_texts for t in texts).most_common(1)[0][0]
    judge = t5_judge(t5, project, label_mapping={known: "entailment"})

    run = start(judge, project, django_capture_on_commit_callbacks)

    statuses = Counter()
    for item, texts in zip(items, expected_texts, strict=True):
        result = JudgeResult.objects.get(item=item, run=run)
        statuses[result.status] += 1
        assert result.raw == json.dumps(texts)
        if all(t == known for t in texts):
            assert result.status == JudgeResult.Status.OK
            assert result.answer == {"sentences": list(range(len(texts))), "none": False}
        else:
            assert result.status == JudgeResult.Status.UNPARSEABLE
            assert result.answer is None
            unknown = [i for i, t in enumerate(texts) if t != known]
            assert result.error == "Generated text not in the label mapping: " + "; ".join(
                f"pair {i}: {json.dumps([texts[i]])}" for i in unknown
            )
            assert [p["generated"] for p in result.detail["pairs"]] == texts
    assert statuses[JudgeResult.Status.UNPARSEABLE] >= 1
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE


def test_direction_both_calls_the_model_with_both_orders_and_records_both(
    project, items, t5, django_capture_on_commit_callbacks, monkeypatch
):
    seen: list[str] = []
    generate = Seq2SeqNLIModel.generate

    def spy(self, texts, **kwargs):
        seen.extend(texts)
        return generate(self, texts, **kwargs)

    monkeypatch.setattr(Seq2SeqNLIModel, "generate", spy)
    forward, reverse = reference(t5, items), reference(t5, items, reverse=True)

    run = start(
        t5_judge(t5, project, direction="both"), project, django_capture_on_commit_callbacks
    )

    assert run.status == JudgeRun.Status.DONE
    pairs = [pair for item in items for pair in item_pairs(item)]
    assert sorted(seen) == sorted(rendered(pairs) + rendered(pairs, reverse=True))
    assert rendered(pairs) != rendered(pairs, reverse=True)
    for item, f_texts, r_texts in zip(items, forward, reverse, strict=True):
        result = JudgeResult.objects.get(item=item, run=run)
        labels = [
            combine_directions(mapped(f), mapped(r)) for f, r in zip(f_texts, r_texts, strict=True)
        ]
        assert result.detail["pairs"] == [
            {
                "label": label,
                "forward": {"label": mapped(f), "generated": f},
                "reverse": {"label": mapped(r), "generated": r},
            }
            for label, f, r in zip(labels, f_texts, r_texts, strict=True)
        ]
        selected = [i for i, label in enumerate(labels) if label == "entailment"]
        assert result.answer == {"sentences": selected, "none": not selected}
        assert json.loads(result.raw) == [
            {"forward": f, "reverse": r} for f, r in zip(f_texts, r_texts, strict=True)
        ]


def test_direction_reverse_judges_hypothesis_to_premise(
    project, items, t5, django_capture_on_commit_callbacks, monkeypatch
):
    seen: list[str] = []
    generate = Seq2SeqNLIModel.generate
    monkeypatch.setattr(
        Seq2SeqNLIModel,
        "generate",
        lambda self, texts, **kw: seen.extend(texts) or generate(self, texts, **kw),
    )
    run = start(
        t5_judge(t5, project, direction="reverse"), project, django_capture_on_commit_callbacks
    )
    assert run.status == JudgeRun.Status.DONE
    pairs = [pair for item in items for pair in item_pairs(item)]
    assert sorted(seen) == sorted(rendered(pairs, reverse=True))


def test_a_seq2seq_model_without_a_label_mapping_fails_the_run_naming_the_parameter(
    project, items, t5, django_capture_on_commit_callbacks
):
    judge = services.judge_create(
        project=project, name="t5", kind="nli", model=str(t5), parameters={}
    )
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.FAILED
    assert "seq2seq model: set the judge's label_mapping" in run.error
    assert not JudgeResult.objects.exists()


def test_a_real_worker_runs_a_seq2seq_judge_both_ways(broker, t5):  # noqa: F811
    project = factories.ProjectFactory()
    items = factories.make_items(project, 3)
    judge = t5_judge(t5, project, direction="both", items_per_task=2)
    forward, reverse = reference(t5, items), reference(t5, items, reverse=True)
    worker = start_worker(broker)
    try:
        run = services.judge_run_start(judge=judge, project=project)  # autocommit: enqueued now
        wait_for(
            lambda: run_status(run) == "done", timeout=120, what="the run to finish", worker=worker
        )
    finally:
        worker.stop()
    run.refresh_from_db()
    assert (run.total, run.answered_count, run.failed_count) == (3, 3, 0)
    for item, f_texts, r_texts in zip(items, forward, reverse, strict=True):
        result = JudgeResult.objects.get(item=item, run=run)
        assert [
            (p["forward"]["generated"], p["reverse"]["generated"]) for p in result.detail["pairs"]
        ] == list(zip(f_texts, r_texts, strict=True))
        assert [p["label"] for p in result.detail["pairs"]] == [
            combine_directions(mapped(f), mapped(r)) for f, r in zip(f_texts, r_texts, strict=True)
        ]


def test_a_directory_that_holds_no_model_is_named_without_the_loaders_message(tmp_path, caplog):
    """Found by the outside probe: the loader's own error (the worker's file names and
    permissions) reached the judges page."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "secret-internal-name", ')
    with pytest.raises(nli.ConfigError) as refused:
        nli.detect_model_type(str(broken))
    message = str(refused.value)
    assert "holds no config that loads" in message and "worker's log" in message
    assert "secret-internal-name" not in message and "Expecting" not in message
    assert "could not be loaded" in caplog.text  # the loader's message is in the worker's log
    with pytest.raises(nli.ConfigError, match="holds no classifier that loads"):
        nli.NLIModel(str(broken))
