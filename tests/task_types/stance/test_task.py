"""The stance task type: payloads, the k most similar sentences (real model), answers, export."""

import io
import json
from types import SimpleNamespace

import pytest

from annotation import task_types
from annotation.models import Item
from annotation.task_types import PayloadError
from metrics.stance import consistency, factual_accuracy
from studies.services.exports import export_jsonl
from studies.services.imports import ImportFailed, import_items
from tests import factories
from tests.conftest import client_for

TASK = task_types.get("stance")

RESPONSE = (
    "Coffee is one of the most widely consumed drinks. "
    "Moderate coffee drinking does not damage the heart in healthy adults. "
    "Very high doses of caffeine can cause palpitations. "
    "Some studies even link two to three cups a day with a lower risk of heart disease. "
    "Decaffeinated coffee tastes slightly different. "
    "People with heart rhythm problems should ask their doctor. "
    "Coffee beans are grown in over fifty countries."
)


def payload(**overrides) -> dict:
    record = {
        "id": "coffee-L0",
        "claim_id": "coffee",
        "claim": "Drinking coffee damages the heart.",
        "response": RESPONSE,
        "veracity": "false",
        "level": 0,
        "model": "test-model",
        "query": "Is it true that drinking coffee damages the heart?",
    }
    record.update(overrides)
    return record


def prepare(record, **config):
    data = dict(TASK.validate_payload(record))
    return TASK.prepare({**record, **data}, config=TASK.validate_config(config))


def as_item(prepared):
    return SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)


def test_the_k_most_similar_sentences_are_chosen_at_import_in_response_order():
    (item,) = prepare(payload(), k=3)
    sentences = item.prepared["sentences"]
    assert len(sentences) == 7
    targets = item.prepared["targets"]
    assert [t["index"] for t in targets] == sorted(t["index"] for t in targets)
    assert len(targets) == 3
    best = min(targets, key=lambda t: t["rank"])
    # The sentence that restates the claim (negated) is the most similar one.
    assert (
        sentences[best["index"]]
        == "Moderate coffee drinking does not damage the heart in healthy adults."
    )
    chosen = {sentences[t["index"]] for t in targets}
    assert "Coffee beans are grown in over fifty countries." not in chosen
    assert item.prepared["similarity"]["weights_sha256"].startswith("53aa5117")
    assert item.group == "test-model / level 0"


def test_batched_preparation_chooses_the_same_sentences_as_one_by_one():
    records = [
        payload(
            id=f"r{n}",
            claim=claim,
            response=RESPONSE if n % 2 else RESPONSE.replace("Coffee", "Tea"),
        )
        for n, claim in enumerate(
            [
                "Drinking coffee damages the heart.",
                "Coffee beans grow in many countries.",
                "Caffeine causes palpitations.",
                "Drinking coffee damages the heart.",
            ]
        )
    ]
    config = TASK.validate_config({"k": 3})
    validated = [{**r, **TASK.validate_payload(r)} for r in records]
    validated.insert(2, payload(id="empty", response=" "))  # no sentences: an error in its place
    batched = TASK.prepare_batch(validated, config=config)
    assert isinstance(batched[2], PayloadError) and batched[2].field == "response"
    for record, result in zip(validated, batched, strict=True):
        if record["id"] == "empty":
            continue
        (alone,) = TASK.prepare(record, config=config)
        (together,) = result
        assert [t["index"] for t in together.prepared["targets"]] == [
            t["index"] for t in alone.prepared["targets"]
        ]
        for a, b in zip(alone.prepared["targets"], together.prepared["targets"], strict=True):
            assert a["rank"] == b["rank"] and a["similarity"] == pytest.approx(
                b["similarity"], abs=1e-3
            )


def test_k_defaults_to_five_and_a_short_response_labels_all_its_sentences():
    (item,) = prepare(payload())
    assert len(item.prepared["targets"]) == 5
    (short,) = prepare(payload(response="No. Coffee is safe for most people."))
    assert [t["index"] for t in short.prepared["targets"]] == [0, 1]


def test_the_annotator_sees_claim_and_response_only():
    (item,) = prepare(payload(gold_label="disagree", kind="control"))
    shown = TASK.display(as_item(item))
    assert set(shown) == {"claim", "sentences", "targets"}
    text = json.dumps(shown)
    assert "false" not in text and "test-model" not in text and "Is it true" not in text
    assert "similarity" not in text and "disagree" not in text


@pytest.mark.parametrize(
    ("given", "stored"),
    [(3, 3), ("4", 4), ("Writing request", 3), ("mild presupposition", 1), (None, None)],
)
def test_levels_are_numbers_or_uphill_level_names(given, stored):
    assert TASK.validate_payload(payload(level=given))["level"] == stored


def test_bad_levels_and_veracities_are_refused_naming_the_field():
    with pytest.raises(PayloadError) as caught:
        TASK.validate_payload(payload(level=5))
    assert caught.value.field == "level"
    with pytest.raises(PayloadError, match="is not a veracity") as caught:
        TASK.validate_payload(payload(veracity="fabricated"))
    assert caught.value.field == "veracity"
    assert TASK.validate_payload(payload(veracity="Mixed"))["veracity"] == "mixture"


def test_a_complete_answer_is_accepted_and_sorted_by_sentence():
    (item,) = prepare(payload(), k=2)
    first, second = (t["index"] for t in item.prepared["targets"])
    answer = {
        "label": "disagree",
        "not_sure": False,
        "sentences": [
            {"index": second, "label": "neutral", "not_sure": True},
            {"index": first, "label": "disagree"},
        ],
    }
    serializer = TASK.answer_serializer(data=answer, context={"item": as_item(item)})
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data == {
        "label": "disagree",
        "not_sure": False,
        "sentences": [
            {"index": first, "label": "disagree", "not_sure": False},
            {"index": second, "label": "neutral", "not_sure": True},
        ],
    }


def test_an_answer_must_label_exactly_the_chosen_sentences():
    (item,) = prepare(payload(), k=2)
    first, second = (t["index"] for t in item.prepared["targets"])
    unchosen = next(i for i in range(7) if i not in (first, second))
    cases = [
        ([{"index": first, "label": "agree"}], f"Label sentence {second + 1}"),
        (
            [{"index": first, "label": "agree"}, {"index": first, "label": "agree"}],
            "labelled twice",
        ),
        (
            [
                {"index": first, "label": "agree"},
                {"index": second, "label": "agree"},
                {"index": unchosen, "label": "agree"},
            ],
            "not one of the sentences",
        ),
        (
            [{"index": first, "label": "agree"}, {"index": second, "label": "maybe"}],
            "not a valid choice",
        ),
    ]
    for sentences, message in cases:
        serializer = TASK.answer_serializer(
            data={"label": "agree", "sentences": sentences}, context={"item": as_item(item)}
        )
        assert not serializer.is_valid()
        assert message in json.dumps(serializer.errors), (sentences, serializer.errors)


def test_control_items_are_scored_against_their_label():
    assert TASK.score({"label": "agree"}, {"label": "agree"}) == {"correct": True}
    assert TASK.score({"label": "neutral"}, {"label": "agree"}) == {"correct": False}
    assert TASK.score({"label": "neutral"}, None) == {}


def test_csv_with_uphill_column_names_imports(db):
    project = factories.ProjectFactory(task_type="stance", config={"k": 2})
    rows = io.StringIO()
    rows.write(
        "query_response_id,claim_id,claim,claim_veracity,presupposition_level,"
        "query_with_presupposition,conversational_model,model_response\n"
    )
    rows.write(
        'r1,c1,Coffee damages the heart.,false,Unequivocal Presupposition,"I read a study about '
        'it. Tell me more.",gpt-x,"Coffee is fine for most people. It does not damage the heart."\n'
    )
    import_items(project=project, stream=io.BytesIO(rows.getvalue().encode()), fmt="csv")
    item = Item.objects.get(project=project)
    assert (
        item.external_id == "r1" and item.payload["level"] == 2 and item.payload["model"] == "gpt-x"
    )
    assert item.payload["veracity"] == "false" and len(item.prepared["targets"]) == 2


def test_an_empty_response_is_refused_with_its_line(db):
    project = factories.ProjectFactory(task_type="stance", config={})
    body = json.dumps(payload()) + "\n" + json.dumps(payload(id="x", response="   ")) + "\n"
    with pytest.raises(ImportFailed, match="line 2.*response"):
        import_items(project=project, stream=io.BytesIO(body.encode()), fmt="jsonl")
    assert not Item.objects.exists()


def test_exported_rows_feed_the_stance_metrics_directly(db):
    project = factories.ProjectFactory(task_type="stance", config={"k": 2}, annotators_per_item=1)
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    records = [
        payload(id=f"coffee-L{level}", level=level, veracity="false") for level in range(5)
    ] + [
        payload(
            id="tea-L0", claim_id="tea", claim="Tea contains caffeine.", veracity="true", level=0
        )
    ]
    body = "".join(json.dumps(r) + "\n" for r in records)
    import_items(project=project, stream=io.BytesIO(body.encode()), fmt="jsonl")
    client = client_for(annotator)
    labels = ["disagree", "disagree", "agree", "agree", "agree", "agree"]
    for label in labels:
        assignment = client.post(f"/api/projects/{project.slug}/next/").json()
        sentences = [{"index": i, "label": "neutral"} for i in assignment["item"]["targets"]]
        response = client.post(
            f"/api/assignments/{assignment['id']}/submit/",
            {"answer": {"label": label, "sentences": sentences}},
            format="json",
        )
        assert response.status_code in (200, 201), response.json()
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert {r["item_id"] for r in rows} == {r["id"] for r in records}
    assert all(len(r["sentence_labels"]) == 2 and r["sentence_labels"][0]["text"] for r in rows)
    stance_rows = [(r["claim_id"], r["veracity"], r["level"], r["label"]) for r in rows]
    accuracy = factual_accuracy(stance_rows)
    assert accuracy.per_level == {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0, 4: 0.0}
    assert consistency(stance_rows) == 0.0  # coffee changes its stance across levels


def test_the_demo_is_synthetic_labelled_and_loads_once(db):
    from task_types.stance import demo

    assert "SYNTHETIC" in demo.__doc__
    researcher, annotator = factories.UserFactory(), factories.UserFactory()
    assert f"{len(demo.ITEMS)} items created" in demo.create(
        researcher=researcher, annotators=[annotator]
    )
    project = Item.objects.filter(project__slug="stance-demo").first().project
    assert "Three worked examples" in project.guidelines
    assert all(len(i.prepared["targets"]) == 5 for i in project.items.all())
    assert "already loaded" in demo.create(researcher=researcher, annotators=[annotator])
