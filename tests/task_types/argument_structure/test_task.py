"""The argument-structure task type: payloads, both modes, answers, API, export and demo."""

import io
import json
from types import SimpleNamespace

import pytest
from django.utils import translation

from annotation import task_types
from annotation.models import Item
from annotation.task_types import PayloadError
from studies.services.exports import export_jsonl
from studies.services.imports import ImportFailed, import_items
from task_types.argument_structure.graph import CLAIM, Problem
from tests import factories
from tests.conftest import client_for

TASK = task_types.get("argument_structure")


def payload(**overrides) -> dict:
    record = {
        "id": "why-1",
        "claim": "The bridge closed because its cables corroded.",
        "cause": "corroded cables",
        "effect": "the bridge closed",
        "label": "supports",
        "evidence": [
            {"id": "E1", "text": "Inspectors found rust on the main cables."},
            {"id": "E2", "text": "Rust weakens steel cables."},
            {"id": "E3", "text": "The cables could no longer carry the bridge's load safely."},
            {"id": "E4", "text": "Engineers recommended closing the bridge."},
        ],
    }
    record.update(overrides)
    return record


def prepare(record, **config):
    data = dict(TASK.validate_payload(record))
    return TASK.prepare({**record, **data}, config=TASK.validate_config(config))


def as_item(prepared):
    return SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)


GOOD_STEPS = [
    {"premises": ["E1", "E2"], "conclusion": "E3"},
    {"premises": ["E3"], "conclusion": "E4"},
    {"premises": ["E4"], "conclusion": "claim"},
]


def edit_answer(steps=GOOD_STEPS, **overrides):
    answer = {
        "claim": "The bridge closed because its cables corroded.",
        "evidence": [{"id": e["id"], "text": e["text"]} for e in payload()["evidence"]],
        "steps": steps,
    }
    answer.update(overrides)
    return answer


def validate_answer(item, answer):
    serializer = TASK.answer_serializer(data=answer, context={"item": item})
    return serializer.is_valid(), serializer


# --- payload -------------------------------------------------------------------------------------


def test_a_draft_structure_is_accepted_as_compact_text_or_as_steps():
    text = "(E1, E2) -> E3 -> E4 -> claim"
    (from_text,) = prepare(payload(structure=text))
    (from_steps,) = prepare(payload(structure=GOOD_STEPS))
    assert from_text.prepared["draft"] == from_steps.prepared["draft"] == GOOD_STEPS


def test_a_draft_naming_a_missing_evidence_id_is_refused_naming_the_item_and_the_id():
    with pytest.raises(PayloadError) as caught:
        TASK.validate_payload(payload(structure="(E1, E2) -> E9 -> claim"))
    assert caught.value.field == "structure"
    assert "'why-1'" in str(caught.value) and "'E9'" in str(caught.value)


def test_an_import_with_a_missing_evidence_id_names_line_item_and_id_and_imports_nothing(db):
    project = factories.ProjectFactory(task_type="argument_structure", config={})
    records = [payload(id="why-1"), payload(id="why-2", reference_structure="(E1, E7) -> claim")]
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    with pytest.raises(ImportFailed) as caught:
        import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    message = str(caught.value)
    assert "line 2" in message and "reference_structure" in message
    assert "'why-2'" in message and "'E7'" in message
    assert not Item.objects.exists()


def test_unreadable_compact_text_is_refused_with_its_column():
    with pytest.raises(PayloadError, match=r"column 4"):
        TASK.validate_payload(payload(structure="E1 E2 -> claim"))


def test_evidence_ids_must_be_unique_and_cannot_be_claim():
    evidence = payload()["evidence"]
    with pytest.raises(PayloadError, match="E1 appears twice"):
        TASK.validate_payload(payload(evidence=[*evidence, {"id": "E1", "text": "again"}]))
    with pytest.raises(PayloadError, match="cannot be an evidence id"):
        TASK.validate_payload(payload(evidence=[*evidence, {"id": "Claim", "text": "x"}]))


def test_labels_are_read_in_any_case_and_nei_is_not_enough_info():
    assert TASK.validate_payload(payload(label="NOT_ENOUGH_INFO"))["label"] == "not enough info"
    assert TASK.validate_payload(payload(label="NEI"))["label"] == "not enough info"
    with pytest.raises(PayloadError, match="is not a label"):
        TASK.validate_payload(payload(label="maybe"))


def test_csv_rows_take_evidence_lines_and_compact_structures(db):
    project = factories.ProjectFactory(task_type="argument_structure", config={})
    rows = io.StringIO()
    rows.write("id,claim,cause,effect,label,evidence,structure\n")
    rows.write('c1,Why claim,cause,effect,refutes,"E1: first\nE2: second",E1 -> E2 -> claim\n')
    import_items(project=project, stream=io.BytesIO(rows.getvalue().encode()), fmt="csv")
    item = Item.objects.get(project=project)
    assert item.payload["evidence"][1] == {"id": "E2", "text": "second", "leaf": None}
    assert item.prepared["draft"] == [
        {"premises": ["E1"], "conclusion": "E2"},
        {"premises": ["E2"], "conclusion": "claim"},
    ]


# --- edit mode -----------------------------------------------------------------------------------


def test_edit_mode_keeps_the_draft_for_the_annotator_and_the_reference_as_gold():
    (item,) = prepare(payload(structure="(E1, E2) -> E4 -> claim", reference_structure=GOOD_STEPS))
    assert item.prepared == {
        "mode": "edit",
        "draft": [
            {"premises": ["E1", "E2"], "conclusion": "E4"},
            {"premises": ["E4"], "conclusion": "claim"},
        ],
    }
    assert item.gold == {
        "structure": GOOD_STEPS,
        "texts": {e["id"]: e["text"] for e in payload()["evidence"]},
    }
    shown = TASK.display(as_item(item))
    assert "reference" not in json.dumps(shown) and shown["draft"] == item.prepared["draft"]


def test_a_well_formed_edited_structure_is_accepted_with_its_compact_text_and_edges():
    (item,) = prepare(payload())
    ok, serializer = validate_answer(as_item(item), edit_answer())
    assert ok, serializer.errors
    assert serializer.validated_data["structure_text"] == "(E1, E2) -> E3 -> E4 -> claim"
    assert serializer.validated_data["edges"] == ["E1->E3", "E2->E3", "E3->E4", "E4->claim"]


def test_the_server_rejects_a_cycle_with_the_same_message_as_the_browser():
    (item,) = prepare(payload())
    ok, serializer = validate_answer(
        as_item(item), edit_answer([*GOOD_STEPS, {"premises": ["E4"], "conclusion": "E1"}])
    )
    assert not ok
    assert serializer.errors["steps"] == [
        "Cycle: E1 → E3 → E4 → E1. A statement cannot support itself, even through other steps."
    ]


def test_added_evidence_can_be_used_and_deleted_evidence_cannot():
    (item,) = prepare(payload())
    evidence = [*edit_answer()["evidence"][:3], {"id": "E5", "text": "A new statement."}]
    steps = [GOOD_STEPS[0], {"premises": ["E3", "E5"], "conclusion": "claim"}]
    ok, serializer = validate_answer(as_item(item), edit_answer(steps, evidence=evidence))
    assert ok, serializer.errors
    ok, serializer = validate_answer(as_item(item), edit_answer(GOOD_STEPS, evidence=evidence))
    assert (
        not ok and "Step 2 concludes E4, which is not an evidence id." in serializer.errors["steps"]
    )


def test_empty_claim_or_evidence_text_is_refused():
    (item,) = prepare(payload())
    ok, serializer = validate_answer(as_item(item), edit_answer(claim="  "))
    assert not ok and "claim" in serializer.errors
    evidence = edit_answer()["evidence"]
    evidence[1]["text"] = ""
    ok, serializer = validate_answer(as_item(item), edit_answer(evidence=evidence))
    assert not ok and "E2 has no text" in str(serializer.errors["evidence"])


# --- review mode ---------------------------------------------------------------------------------


def test_review_mode_with_one_structure_asks_to_retain_or_discard():
    (item,) = prepare(payload(structure=GOOD_STEPS), mode="review")
    shown = TASK.display(as_item(item))
    assert shown["review"] == "filter" and shown["structure"] == GOOD_STEPS
    ok, serializer = validate_answer(
        as_item(item),
        {"decision": "discard", "faithfulness": True, "fluency": True, "validity": False},
    )
    assert ok, serializer.errors
    ok, serializer = validate_answer(as_item(item), {"decision": "retain", "faithfulness": True})
    assert not ok and set(serializer.errors) == {"fluency", "validity"}


def test_compared_structures_are_shown_as_a_and_b_in_a_seeded_random_order():
    generated = "(E1, E2) -> E4 -> claim"
    orders = set()
    for n in range(12):
        (item,) = prepare(
            payload(id=f"why-{n}", structure=generated, reference_structure=GOOD_STEPS),
            mode="review",
        )
        shown = TASK.display(as_item(item))
        assert shown["review"] == "compare" and set(shown["structures"]) == {"A", "B"}
        assert "order" not in shown and "reference" not in json.dumps(shown)
        orders.add(tuple(item.prepared["order"]))
        (again,) = prepare(
            payload(id=f"why-{n}", structure=generated, reference_structure=GOOD_STEPS),
            mode="review",
        )
        assert again.prepared["order"] == item.prepared["order"]
    assert orders == {("generated", "reference"), ("reference", "generated")}


@pytest.mark.parametrize(
    ("order", "preference", "outcome"),
    [
        (["generated", "reference"], "A", "win"),
        (["generated", "reference"], "B", "lose"),
        (["reference", "generated"], "A", "lose"),
        (["reference", "generated"], "B", "win"),
        (["reference", "generated"], "tie", "tie"),
    ],
)
def test_a_blind_preference_becomes_win_tie_or_lose_for_the_generated_structure(
    order, preference, outcome
):
    (item,) = prepare(
        payload(structure="E1 -> claim", reference_structure=GOOD_STEPS), mode="review"
    )
    item.prepared["order"] = order
    ok, serializer = validate_answer(
        as_item(item), {"validity_a": True, "validity_b": False, "preference": preference}
    )
    assert ok, serializer.errors
    assert serializer.validated_data["outcome"] == outcome
    assert serializer.validated_data["validity"] is (order[0] == "generated")
    assert serializer.validated_data["reference_validity"] is (order[0] == "reference")


@pytest.mark.parametrize(("preference", "outcome"), [("A", "win"), ("tie", "tie"), ("B", "lose")])
def test_against_the_provided_reference_the_generated_structure_is_a_and_only_its_validity_is_asked(
    preference, outcome
):
    record = payload(structure="E1 -> claim", reference_structure=GOOD_STEPS)
    for seed in range(6):  # no seeded shuffle: A is always the generated structure
        (item,) = prepare(record, mode="review", comparison="reference", seed=seed)
        assert item.prepared["order"] == ["generated", "reference"]
    assert TASK.display(as_item(item))["comparison"] == "reference"
    ok, serializer = validate_answer(as_item(item), {"validity_a": False, "preference": preference})
    assert ok, serializer.errors
    assert serializer.validated_data["outcome"] == outcome
    assert serializer.validated_data["validity"] is False
    assert serializer.validated_data["reference_validity"] is None


def test_a_blind_comparison_still_needs_the_validity_of_both_structures():
    (item,) = prepare(
        payload(structure="E1 -> claim", reference_structure=GOOD_STEPS), mode="review"
    )
    assert TASK.display(as_item(item))["comparison"] == "blind"
    ok, serializer = validate_answer(as_item(item), {"validity_a": True, "preference": "A"})
    assert not ok and "validity_b" in serializer.errors


def test_review_mode_without_any_structure_is_refused():
    with pytest.raises(PayloadError, match="needs a structure"):
        prepare(payload(), mode="review")


# --- the annotator API, export and demo ----------------------------------------------------------


@pytest.fixture
def edit_project(db):
    project = factories.ProjectFactory(
        task_type="argument_structure", config={"mode": "edit"}, annotators_per_item=1
    )
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    record = payload(structure="(E1, E2) -> E4 -> claim", reference_structure=GOOD_STEPS)
    import_items(
        project=project, stream=io.BytesIO((json.dumps(record) + "\n").encode()), fmt="jsonl"
    )
    return project, annotator


def test_the_submit_api_refuses_a_cycle_then_accepts_the_fix_and_exports_metrics(edit_project):
    project, annotator = edit_project
    client = client_for(annotator)
    assignment = client.post(f"/api/projects/{project.slug}/next/").json()
    assert assignment["item"]["draft"][0] == {"premises": ["E1", "E2"], "conclusion": "E4"}
    url = f"/api/assignments/{assignment['id']}/submit/"
    cyclic = edit_answer([*GOOD_STEPS, {"premises": ["E4"], "conclusion": "E1"}])
    refused = client.post(url, {"answer": cyclic}, format="json")
    assert refused.status_code == 400
    assert "Cycle: E1 → E3 → E4 → E1" in json.dumps(refused.json(), ensure_ascii=False)
    fixed = edit_answer(claim="The bridge closed because its main cables corroded.")
    assert client.post(url, {"answer": fixed}, format="json").status_code in (200, 201)

    (row,) = [json.loads(line) for line in export_jsonl(project=project)]
    assert row["structure"] == GOOD_STEPS
    assert row["structure_text"] == "(E1, E2) -> E3 -> E4 -> claim"
    assert row["claim_revised"] is True
    assert row["step_all_correct"] is True and row["leaf_f1"] == 1.0
    assert row["exact_match_similarity"] == 1.0 and row["intermediate_all_correct"] is True
    assert row["structure_similarity"] == pytest.approx(1.0)
    assert row["structure_scorer"] == "all-MiniLM-L6-v2 (cosine, local)"
    assert row["draft_structure_text"] == "(E1, E2) -> E4 -> claim"
    assert row["draft_metrics"]["step_all_correct"] is False
    assert row["draft_metrics"]["leaf_all_correct"] is True


def test_the_server_refuses_a_structure_in_the_annotators_language(edit_project):
    """graph.py stays Django-free: its problems carry an English template and parameters, and
    the answer serializer renders them with the package's German catalogue."""
    project, annotator = edit_project
    client = client_for(annotator)
    assignment = client.post(f"/api/projects/{project.slug}/next/").json()
    url = f"/api/assignments/{assignment['id']}/submit/?lang=de"
    steps = [
        {"premises": ["E1", "E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "E4"},
        {"premises": ["E4"], "conclusion": "E1"},
        {"premises": ["claim"], "conclusion": "E9"},
    ]
    refused = client.post(url, {"answer": edit_answer(steps)}, format="json")
    assert refused.status_code == 400
    body = refused.json()
    assert body["field"] == "steps"
    assert body["detail"] == "Die Antwort ist unvollständig oder ungültig."
    assert body["errors"]["steps"] == [
        "Schritt 4 verwendet die Behauptung als Prämisse; die Behauptung kann nur eine "
        "Schlussfolgerung sein.",
        "Schritt 4 folgert E9, das keine Beleg-ID ist.",
        "Noch folgert kein Schritt die Behauptung: Verbinden Sie die letzten Aussagen mit der "
        "Behauptung.",
        "Kreis: E1 → E3 → E4 → E1. Eine Aussage kann sich nicht selbst stützen, auch nicht über "
        "andere Schritte.",
        "E1, E2, E3, E4 bilden einen Teil, der nicht mit der Behauptung verbunden ist.",
    ]
    # The claim is named in German inside a list of statements too; English stays the default.
    part = Problem("disconnected", "%(ids)s form a part.", params=(("ids", ("E1", CLAIM)),))
    with translation.override("de"):
        assert part.render(translation.gettext) == "E1, die Behauptung form a part."
    assert part.message == "E1, the claim form a part."


def test_every_mode_exports_the_same_columns():
    (edit,) = prepare(payload(reference_structure=GOOD_STEPS))
    (filtered,) = prepare(payload(structure=GOOD_STEPS), mode="review")
    (compared,) = prepare(
        payload(structure="E1 -> claim", reference_structure=GOOD_STEPS), mode="review"
    )
    answers = [
        (edit, {**edit_answer(), "structure_text": "x"}),
        (filtered, {"decision": "retain", "faithfulness": True, "fluency": True, "validity": True}),
        (
            compared,
            {
                "validity_a": True,
                "validity_b": True,
                "preference": "tie",
                "validity": True,
                "reference_validity": True,
                "outcome": "tie",
            },
        ),
    ]
    keys = [
        set(TASK.export_row(as_item(item), SimpleNamespace(answer=answer)))
        for item, answer in answers
    ]
    assert keys[0] == keys[1] == keys[2]


def test_the_demo_creates_an_edit_and_a_review_project_once(db):
    from task_types.argument_structure import demo

    researcher, annotator = factories.UserFactory(), factories.UserFactory()
    summary = demo.create(researcher=researcher, annotators=[annotator])
    assert "2 items created" in summary
    assert Item.objects.filter(project__slug="argument-structure-demo").count() == 2
    review = Item.objects.filter(project__slug="argument-structure-review-demo")
    assert sorted(i.prepared["review"] for i in review) == ["compare", "filter"]
    assert "already loaded" in demo.create(researcher=researcher, annotators=[annotator])


# --- the A/B seed stays on the server ------------------------------------------------------------

SECRET_SEED = 918273645


@pytest.fixture
def compare_project(db):
    project = factories.ProjectFactory(
        task_type="argument_structure",
        config={"mode": "review", "seed": SECRET_SEED},
        annotators_per_item=1,
    )
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    record = payload(structure="(E1, E2) -> E4 -> claim", reference_structure=GOOD_STEPS)
    import_items(
        project=project, stream=io.BytesIO((json.dumps(record) + "\n").encode()), fmt="jsonl"
    )
    return project, annotator


def test_the_review_page_and_api_never_send_the_ab_seed_and_the_order_still_works(compare_project):
    from django.test import Client

    project, annotator = compare_project
    page = Client()
    page.force_login(annotator)
    html = page.get(f"/p/{project.slug}/annotate/").content.decode()
    assert '"mode": "review"' in html  # the rest of the config is still on the page
    assert '"seed"' not in html and str(SECRET_SEED) not in html

    client = client_for(annotator)
    assignment = client.post(f"/api/projects/{project.slug}/next/")
    again = client.get(f"/api/assignments/{assignment.json()['id']}/")
    for response in (assignment, again):
        text = response.content.decode()
        assert "seed" not in text and str(SECRET_SEED) not in text and "order" not in text
    shown = assignment.json()["item"]
    item = Item.objects.get()
    order = item.prepared["order"]
    assert shown["structures"]["A"] == item.prepared["structures"]["A"]

    answer = {"validity_a": True, "validity_b": False, "preference": "A"}
    url = f"/api/assignments/{assignment.json()['id']}/submit/"
    assert client.post(url, {"answer": answer}, format="json").status_code == 201
    (row,) = [json.loads(line) for line in export_jsonl(project=project)]
    assert row["ab_order"] == order
    assert row["outcome"] == ("win" if order[0] == "generated" else "lose")


# --- discarding a claim that is not a valid causal relation --------------------------------------


def test_an_edit_answer_may_discard_the_claim_as_not_a_valid_causal_relation():
    (item,) = prepare(payload(reference_structure=GOOD_STEPS))
    discard = edit_answer([], invalid_causal_relation=True)
    ok, serializer = validate_answer(as_item(item), discard)
    assert ok, serializer.errors
    answer = serializer.validated_data
    assert answer["invalid_causal_relation"] is True and answer["steps"] == []
    assert TASK.answer_text(answer) == "discarded: not a valid causal relation"
    # Without the discard the same empty structure is refused.
    ok, serializer = validate_answer(as_item(item), edit_answer([]))
    assert not ok and "steps" in serializer.errors
    row = TASK.export_row(as_item(item), SimpleNamespace(answer=answer))
    assert row["invalid_causal_relation"] is True and row["exact_match_similarity"] is None
    assert TASK.score(answer, item.gold) == {"correct": False}


def test_two_discards_agree_and_a_discard_disagrees_with_a_structure():
    (item,) = prepare(payload())
    discards = [
        validate_answer(as_item(item), edit_answer([], invalid_causal_relation=True))[1]
        for _ in range(2)
    ]
    built = validate_answer(as_item(item), edit_answer())[1]
    assert discards[0].validated_data["edges"] == discards[1].validated_data["edges"]
    assert not set(discards[0].validated_data["edges"]) & set(built.validated_data["edges"])


def test_a_judge_comparison_keeps_its_win_or_lose_outcome_beside_the_judge_outcome(
    compare_project,
):
    """The task's ``outcome`` column (win / tie / lose) and the judge's ``judge_outcome`` (ok /
    unparseable / failed) are two columns: neither overwrites the other."""
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult
    from studies.services.exports import export_stream

    project, _ = compare_project
    item = Item.objects.get()
    reply = '{"validity_a": true, "validity_b": false, "preference": "A"}'
    judge = Judge.objects.create(project=project, name="comparer", kind="llm", model="m")
    JudgeResult.objects.create(
        item=item,
        judge=judge,
        prompt_version="v1",
        status="ok",
        answer=prompts.get("argument_structure").parse(reply, item),
    )
    text = "".join(export_stream(project=project, fmt="jsonl", coders="judges"))
    (row,) = [json.loads(line) for line in text.splitlines()]
    assert row["judge_outcome"] == "ok"
    assert row["outcome"] == ("win" if item.prepared["order"][0] == "generated" else "lose")
