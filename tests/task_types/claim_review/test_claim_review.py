"""Claim review: FaStfact import, answer validation, display, per-claim export and statistics."""

import copy
import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services, task_types
from annotation.models import Item
from studies.services.exports import export_stream
from studies.services.imports import ImportFailed, import_items
from task_types.claim_review.formats import parse_verification_context
from task_types.claim_review.spans import response_segments, source_span
from tests import factories
from tests.conftest import REPO, client_for

TASK = task_types.get("claim_review")
TRIAL = REPO / "data" / "fastfact" / "trial.jsonl"
TRIAL_LINES = TRIAL.read_text().splitlines()


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(task_type="claim_review", config={}, annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


def import_trial(project, lines=None):
    body = "\n".join(lines if lines is not None else TRIAL_LINES).encode()
    return import_items(project=project, stream=io.BytesIO(body), fmt="fastfact")


def annotator_in(project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


def keep_all(item, agreement="agree"):
    return {
        "claims": [
            {"id": c["id"], "action": "keep", "agreement": agreement}
            for c in item.payload["claims"]
        ]
    }


# --- import ----------------------------------------------------------------------------------------


def test_importing_the_trial_file_gives_two_items_with_all_claims_evidence_and_reasoning(project):
    report = import_trial(project)
    assert (report.records, report.created) == (2, 2)
    source = [json.loads(line) for line in TRIAL_LINES]
    items = list(Item.objects.filter(project=project).order_by("position"))
    assert [i.group for i in items] == ["gpt-4o / freshQA", "DeepSeek-R1 / factcheck-bench"]
    for item, record in zip(items, source, strict=True):
        assert item.payload["question"] == record["question"]
        assert item.payload["response"] == record["response"]
        assert [c["id"] for c in item.payload["claims"]] == [
            c["claim_id"] for c in record["claims_lst"]
        ]
        assert [c["text"] for c in item.payload["claims"]] == [
            c["claim"] for c in record["claims_lst"]
        ]
    swift = items[0].payload["claims"]
    assert [c["system_label"] for c in swift] == ["refuted", "unsupported", "supported"]
    assert [len(c["evidence"]) for c in swift] == [10, 0, 0]
    context = source[0]["claims_lst"][0]["verification_result"]
    assert swift[0]["reasoning"] == context["reasoning_for_verification_label"]
    assert (
        swift[0]["evidence"][2]["title"]
        == "Has Taylor Swift ever won a Golden Globe? How many times has she been nominated?"
    )
    assert swift[0]["evidence"][2]["content"].startswith("art of translating cliché-speak.")
    # Every passage's content is in the original context, in order, nothing lost in between.
    text = context["verification_context"]
    position = 0
    for number, passage in enumerate(swift[0]["evidence"], start=1):
        position = text.index(
            f"Evidence {number}\nSource Title: {passage['title']}\nContent: {passage['content']}",
            position,
        )
    assert swift[0]["pre_label"] == "unsure" and swift[0]["prelabel_confidence"] == 0.97965
    assert len(items[1].payload["claims"]) == 14
    assert items[1].payload["model"] == "DeepSeek-R1" and items[1].payload["question_id"] == 1


def test_reimporting_the_trial_file_finds_the_same_items_by_their_derived_ids(project):
    import_trial(project)
    ids = set(Item.objects.values_list("external_id", flat=True))
    report = import_items(
        project=project, stream=io.BytesIO(TRIAL.read_bytes()), fmt="fastfact", update=True
    )
    assert (report.created, report.updated) == (0, 2)
    assert set(Item.objects.values_list("external_id", flat=True)) == ids


def test_a_malformed_evidence_block_names_the_line_and_claim_and_imports_nothing(project):
    lines = list(TRIAL_LINES)
    record = json.loads(lines[0])
    context = record["claims_lst"][0]["verification_result"]["verification_context"]
    record["claims_lst"][0]["verification_result"]["verification_context"] = context.replace(
        "Evidence 4\nSource Title: Taylor Swift - Golden Globes\n",
        "Evidence 4\nTaylor Swift - Golden Globes\n",
        1,
    )
    second = json.loads(lines[1])
    second["question"] += " (a changed copy)"
    with pytest.raises(ImportFailed) as caught:
        import_trial(project, [json.dumps(second), json.dumps(record)])
    message = str(caught.value)
    assert "line 2, claim 43b2b7-0" in message and "verification_context" in message
    assert "evidence block 4" in message
    assert not Item.objects.exists()


def test_evidence_blocks_numbered_out_of_order_are_refused():
    text = "Evidence 1\nSource Title: A\nContent: a\n\nEvidence 3\nSource Title: C\nContent: c"
    with pytest.raises(ValueError, match="block 2 is numbered 3"):
        parse_verification_context(text)
    assert parse_verification_context("N/A") == []
    assert parse_verification_context("Evidence 1\nSource Title: \nContent: only content") == [
        {"title": "", "content": "only content"}
    ]


def test_a_claim_without_an_id_or_a_broken_line_is_reported_with_its_line(project):
    record = json.loads(TRIAL_LINES[1])
    del record["claims_lst"][3]["claim_id"]
    with pytest.raises(ImportFailed, match=r"line 1, field 'claims_lst.3'.*claim_id"):
        import_trial(project, [json.dumps(record)])
    with pytest.raises(ImportFailed, match="line 2.*not valid JSON"):
        import_trial(project, [TRIAL_LINES[0], "{oops"])
    assert not Item.objects.exists()


def test_generic_jsonl_and_csv_records_import(project):
    payload = TASK.demo_payload()
    import_items(project=project, stream=io.BytesIO(json.dumps(payload).encode()), fmt="jsonl")
    header = "id,question,response,model,prompt_source,claims\n"
    row = ["csv-1", "Q?", "An answer. Another sentence.", "m", "src", json.dumps(payload["claims"])]
    buffer = io.StringIO()
    buffer.write(header)
    csv.writer(buffer).writerow(row)
    import_items(project=project, stream=io.BytesIO(buffer.getvalue().encode()), fmt="csv")
    assert (
        Item.objects.get(external_id="csv-1").payload["claims"][0]["evidence"][0]["title"]
        == "Eiffel Tower"
    )


def test_duplicate_claim_ids_in_one_record_are_refused(project):
    payload = TASK.demo_payload()
    payload["claims"][1]["id"] = "c1"
    with pytest.raises(ImportFailed, match=r"line 1.*claims.*'c1' appears twice"):
        import_items(project=project, stream=io.BytesIO(json.dumps(payload).encode()), fmt="jsonl")


# --- display and highlighting ---------------------------------------------------------------------


def test_display_shows_claims_labels_evidence_and_sources_but_not_model_or_prompt_source(project):
    import_trial(project)
    item = Item.objects.get(position=1)
    shown = TASK.display(item)
    text = json.dumps(shown)
    assert "gpt-4o" not in text and "freshQA" not in text and "prelabel" not in text
    first = shown["claims"][0]
    assert first["labels"] == [
        "supported",
        "refuted",
        "conflicting evidence",
        "not enough evidence",
        "irrelevant",
    ]
    # Without evidence the system's label comes from the reduced scheme, but an annotator who
    # disagrees still chooses from all five (protocol, decision framework (a)).
    assert shown["claims"][1]["system_label"] == "unsupported"
    assert shown["claims"][1]["labels"] == first["labels"]
    start, end = first["span"]
    assert shown["response"][start:end] == "Taylor Swift won her first Golden Globe Award in 2020."


def test_the_source_highlight_prefers_rare_words_and_gives_up_on_unrelated_claims():
    response = "Planets orbit stars.\n- Giant planets formed far out, in cold regions.\nMoons orbit planets."
    span = source_span("Giant planets form in colder regions far from the Sun.", response)
    assert response[span[0] : span[1]] == "- Giant planets formed far out, in cold regions."
    assert source_span("Paris is the capital of France.", response) is None
    text = "One. Two!\n\n  Three"
    assert [text[s:e] for s, e in response_segments(text)] == ["One.", "Two!", "Three"]


# --- answers ---------------------------------------------------------------------------------------


def validate(item, answer):
    serializer = TASK.answer_serializer(data=answer, context={"item": item})
    return serializer.is_valid(), (
        serializer.validated_data if serializer.is_valid() else serializer.errors
    )


def test_every_claim_needs_a_decision_and_errors_name_the_offending_claims(project):
    import_trial(project)
    item = Item.objects.get(position=1)
    answer = keep_all(item)
    del answer["claims"][1]["agreement"]
    answer["claims"][2] = {"id": "e8845f-2", "action": "remove"}
    ok, errors = validate(item, answer)
    assert not ok
    assert set(errors["claims"]) == {"c2afab-1", "e8845f-2"}
    assert "agree or disagree" in str(errors["claims"]["c2afab-1"])
    assert "why it is removed" in str(errors["claims"]["e8845f-2"])
    ok, errors = validate(item, {"claims": answer["claims"][:1]})
    assert not ok and set(errors["claims"]) == {"c2afab-1", "e8845f-2"}  # missing claims


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (
            {"id": "43b2b7-0", "action": "keep", "agreement": "disagree", "label": "unsupported"},
            "correct label",
        ),
        (
            {"id": "c2afab-1", "action": "keep", "agreement": "disagree", "label": "unsupported"},
            "choose the correct label (supported, refuted, conflicting evidence",
        ),
        (
            {"id": "c2afab-1", "action": "revise", "text": "  ", "agreement": "agree"},
            "text is empty",
        ),
        (
            {
                "id": "c2afab-1",
                "action": "revise",
                "agreement": "agree",
                "text": 'Taylor Swift received the Golden Globe Award for Best Original Song for "Beautiful Ghosts" in 2020.',
            },
            "same as the original",
        ),
        ({"id": "c2afab-1", "action": "remove", "reason": "boring"}, "why it is removed"),
        (
            {"id": "c2afab-1", "action": "add", "text": "x", "label": "supported"},
            "is an extracted claim",
        ),
    ],
)
def test_invalid_decisions_are_refused_with_a_reason(project, decision, message):
    import_trial(project)
    item = Item.objects.get(position=1)
    answer = keep_all(item)
    index = next(i for i, d in enumerate(answer["claims"]) if d["id"] == decision["id"])
    answer["claims"][index] = decision
    ok, errors = validate(item, answer)
    assert not ok and message in str(errors["claims"][decision["id"]])


def test_added_claims_choose_from_all_five_labels_and_extracted_claims_keep_their_order(project):
    import_trial(project)
    item = Item.objects.get(position=1)
    answer = keep_all(item)
    answer["claims"].insert(
        0, {"id": "new-1", "action": "add", "text": "A new claim.", "label": "unsupported"}
    )
    ok, errors = validate(item, answer)
    five = "supported, refuted, conflicting evidence, not enough evidence, irrelevant"
    assert not ok and five in str(errors["claims"]["new-1"])
    answer["claims"][0]["label"] = "refuted"
    assert validate(item, answer)[0]
    swapped = keep_all(item)
    swapped["claims"][0], swapped["claims"][1] = swapped["claims"][1], swapped["claims"][0]
    ok, errors = validate(item, swapped)
    assert not ok and "response order" in str(errors["claims"][0])


def test_agreeing_with_a_label_outside_the_claims_scheme_is_refused(project):
    payload = TASK.demo_payload()
    payload["claims"][1]["system_label"] = "unsure"
    import_items(project=project, stream=io.BytesIO(json.dumps(payload).encode()), fmt="jsonl")
    item = Item.objects.get()
    assert TASK.display(item)["claims"][1]["can_agree"] is False
    ok, errors = validate(item, keep_all(item))
    assert not ok and "not a verdict to agree with" in str(errors["claims"]["c2"])


def test_a_clean_answer_keeps_only_the_fields_each_action_uses(project):
    import_trial(project)
    item = Item.objects.get(position=1)
    answer = {
        "claims": [
            {
                "id": "43b2b7-0",
                "action": "keep",
                "agreement": "agree",
                "label": "supported",
                "text": "x",
                "reason": "redundant",
            },
            {
                "id": "c2afab-1",
                "action": "revise",
                "text": "  Swift was nominated in 2020. ",
                "agreement": "disagree",
                "label": "supported",
            },
            {"id": "e8845f-2", "action": "remove", "reason": "not a claim", "agreement": "agree"},
        ]
    }
    ok, clean = validate(item, answer)
    assert ok
    assert clean == {
        "claims": [
            {"id": "43b2b7-0", "action": "keep", "agreement": "agree"},
            {
                "id": "c2afab-1",
                "action": "revise",
                "text": "Swift was nominated in 2020.",
                "agreement": "disagree",
                "label": "supported",
            },
            {"id": "e8845f-2", "action": "remove", "reason": "not a claim"},
        ]
    }


def test_the_server_refuses_an_incomplete_submit_and_names_the_claims(project):
    import_trial(project)
    annotator = annotator_in(project)
    client = client_for(annotator)
    assignment = client.post(f"/api/projects/{project.slug}/next/").data
    item = Item.objects.get(id=project.items.get(position=1).id)
    answer = keep_all(item)
    answer["claims"][0].pop("agreement")
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/", {"answer": answer}, format="json"
    )
    assert response.status_code == 400
    assert list(response.data["errors"]["claims"]) == ["43b2b7-0"]
    answer["claims"][0]["agreement"] = "agree"
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/", {"answer": answer}, format="json"
    )
    assert response.status_code == 201


def test_a_correction_to_refuted_on_a_claim_without_evidence_is_accepted_and_exported(project):
    import_trial(project)
    item = project.items.get(position=1)
    claim = next(c for c in item.payload["claims"] if c["id"] == "c2afab-1")
    assert not claim.get("evidence") and claim["system_label"] == "unsupported"
    client = client_for(annotator_in(project))
    assignment = client.post(f"/api/projects/{project.slug}/next/").data
    assert assignment["item"]["claims"][1]["id"] == "c2afab-1"  # the first item is dealt first
    answer = keep_all(item)
    answer["claims"][1] = {
        "id": "c2afab-1",
        "action": "keep",
        "agreement": "disagree",
        "label": "refuted",
    }
    answer["claims"].append(
        {"id": "new-1", "action": "add", "text": "Swift has 14 Grammys.", "label": "refuted"}
    )
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/", {"answer": answer}, format="json"
    )
    assert response.status_code == 201, response.data
    rows = {
        row["claim_id"]: row
        for row in map(
            json.loads, "".join(export_stream(project=project, fmt="jsonl")).split("\n")[:-1]
        )
    }
    assert rows["c2afab-1"]["agreement"] == "disagreed_corrected"
    assert rows["c2afab-1"]["annotator_label"] == "refuted"
    assert rows["new-1"]["action"] == "added" and rows["new-1"]["annotator_label"] == "refuted"


# --- scores, export, statistics ------------------------------------------------------------------


def test_control_items_score_the_final_labels_against_gold(project):
    payload = TASK.demo_payload()
    payload.update(kind="control", gold_labels={"c1": "supported", "c3": "not a claim"})
    import_items(project=project, stream=io.BytesIO(json.dumps(payload).encode()), fmt="jsonl")
    item = Item.objects.get()
    answer = keep_all(item)
    answer["claims"][2] = {"id": "c3", "action": "remove", "reason": "not a claim"}
    assert TASK.score(answer, item.gold) == {
        "labels_checked": 2,
        "labels_correct": 2,
        "label_accuracy": 1.0,
        "correct": True,
    }
    answer["claims"][0] = {
        "id": "c1",
        "action": "keep",
        "agreement": "disagree",
        "label": "refuted",
    }
    assert TASK.score(answer, item.gold)["label_accuracy"] == 0.5
    bad = copy.deepcopy(payload)
    bad["id"] = "other"
    bad["gold_labels"] = {"c9": "supported"}
    with pytest.raises(ImportFailed, match="gold_labels.*Unknown claim id 'c9'"):
        import_items(project=project, stream=io.BytesIO(json.dumps(bad).encode()), fmt="jsonl")


def annotate(project, user, item, answer):
    assignment = services.assignment_next(project=project, annotator=user)
    assert assignment.item_id == item.id
    services.annotation_submit(assignment=assignment, answer=answer, time_spent_ms=1000)


def test_the_export_has_one_row_per_claim_and_the_statistics_count_them_by_model_and_source(
    project,
):
    import_trial(project)
    first, second = Item.objects.filter(project=project).order_by("position")
    alice, bob = annotator_in(project), annotator_in(project)
    answer = {
        "claims": [
            {
                "id": "43b2b7-0",
                "action": "keep",
                "agreement": "disagree",
                "label": "conflicting evidence",
            },
            {"id": "c2afab-1", "action": "remove", "reason": "not a claim"},
            {"id": "e8845f-2", "action": "keep", "agreement": "agree"},
        ]
    }
    annotate(project, alice, first, answer)
    annotate(project, bob, first, keep_all(first))
    annotate(project, alice, second, keep_all(second))
    rows = [
        json.loads(line)
        for line in "".join(export_stream(project=project, fmt="jsonl")).splitlines()
    ]
    assert len(rows) == 3 + 3 + 14
    assert (
        rows[0]["agreement"] == "disagreed_corrected"
        and rows[0]["annotator_label"] == "conflicting evidence"
    )
    assert rows[1]["action"] == "removed" and rows[1]["annotator_label"] == "not a claim"
    csv_text = "".join(export_stream(project=project, fmt="csv"))
    assert csv_text.count("\n") == len(rows) + 1

    out = io.StringIO()
    call_command("claim_review_stats", project=project.slug, stdout=out)
    stats = json.loads(out.getvalue())
    assert stats["overall"]["count"] == 3
    assert stats["overall"]["operations"] == {
        "unchanged": 19,
        "removed": 1,
        "added": 0,
        "revised": 0,
    }
    assert stats["overall"]["agreements"] == {
        "agreed": 18,
        "disagreed_corrected": 1,
        "verification_pending": 0,
    }
    assert stats["overall"]["annotator_labels"] == {
        "supported": 2 + 14,
        "refuted": 1,
        "unsupported": 1,
        "conflicting evidence": 1,
        "not a claim": 1,
    }
    assert stats["grouped"]["by_model"]["gpt-4o"]["count"] == 2
    assert stats["grouped"]["by_model"]["DeepSeek-R1"]["operations"]["unchanged"] == 14
    assert set(stats["grouped"]["by_model_prompt_source"]) == {
        "gpt-4o_freshQA",
        "DeepSeek-R1_factcheck-bench",
    }


def test_the_statistics_command_refuses_other_task_types_and_unknown_projects(db):
    other = factories.ProjectFactory()
    with pytest.raises(CommandError, match="not claim_review"):
        call_command("claim_review_stats", project=other.slug)
    with pytest.raises(CommandError, match="No project"):
        call_command("claim_review_stats", project="nope")


def test_the_export_reads_per_claim_rows_in_a_constant_number_of_queries(
    project, django_assert_max_num_queries
):
    import_trial(project)
    for _ in range(2):
        user = annotator_in(project)
        while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
            services.annotation_submit(assignment=assignment, answer=keep_all(assignment.item))
    with django_assert_max_num_queries(5):
        rows = list(export_stream(project=project, fmt="jsonl"))
    assert len(rows) == 2 * (3 + 14)


def test_the_demo_project_loads_the_trial_file(db, researcher):
    from task_types.claim_review import demo

    annotators = [factories.UserFactory() for _ in range(3)]
    assert "2 items created" in demo.create(researcher=researcher, annotators=annotators)
    assert "already loaded" in demo.create(researcher=researcher, annotators=annotators)


def test_the_agreement_key_compares_decisions_not_the_wording_of_revisions(project):
    import_trial(project)
    item = Item.objects.get(position=1)
    one = keep_all(item)
    one["claims"][1] = {
        "id": "c2afab-1",
        "action": "revise",
        "text": "Swift was nominated.",
        "agreement": "agree",
    }
    other = keep_all(item)
    other["claims"].append(
        {"id": "new-1", "action": "add", "text": "Another claim.", "label": "supported"}
    )
    assert TASK.agreement_key(one) == TASK.agreement_key(other)
    other["claims"][2] = {"id": "e8845f-2", "action": "remove", "reason": "redundant"}
    assert TASK.agreement_key(one) != TASK.agreement_key(other)


def test_disagreeing_with_the_systems_own_label_is_refused(project):
    from task_types.claim_review.labels import scheme_of

    import_trial(project)
    item = Item.objects.get(position=1)
    answer = keep_all(item)
    claim = next(c for c in item.payload["claims"] if c.get("system_label") in scheme_of(c))
    index = next(i for i, d in enumerate(answer["claims"]) if d["id"] == claim["id"])
    answer["claims"][index] = {
        "id": claim["id"],
        "action": "keep",
        "agreement": "disagree",
        "label": claim["system_label"],
    }
    ok, errors = validate(item, answer)
    assert not ok and "other than the system's" in str(errors["claims"][claim["id"]])


def test_the_report_gives_each_responses_factuality_before_and_after_revision(project):
    from agreement.reports import AnnotatorFilter, ReportOptions, build_report
    from agreement.reports.gather import gather

    import_trial(project)
    first = project.items.get(position=1)
    alice, bob = annotator_in(project), annotator_in(project)
    # The pipeline: refuted, unsupported, supported -> 1 supported of 3 verdicts.
    assert [c["system_label"] for c in first.payload["claims"]] == [
        "refuted",
        "unsupported",
        "supported",
    ]
    # Alice: corrects claim 1 to supported, keeps 2 (unsupported), removes 3, adds a supported one
    # -> supported, unsupported, supported = 2/3. Bob agrees with everything -> 1/3.
    alice_answer = {
        "claims": [
            {"id": "43b2b7-0", "action": "keep", "agreement": "disagree", "label": "supported"},
            {"id": "c2afab-1", "action": "keep", "agreement": "agree"},
            {"id": "e8845f-2", "action": "remove", "reason": "redundant"},
            {"id": "new-1", "action": "add", "text": "Swift is a singer.", "label": "supported"},
        ]
    }
    annotate(project, alice, first, alice_answer)
    annotate(project, bob, first, keep_all(first))
    annotator_filter = AnnotatorFilter()
    report = build_report(
        gather(
            project=project, annotator_filter=annotator_filter, options=ReportOptions(n_boot=50)
        ),
        annotator_filter,
    )
    assert "factuality" in report["section"]["tables"]
    rows = report["tables"]["factuality"]["rows"]
    response = next(r for r in rows if r["response"] == first.external_id)
    assert response["reviews"] == 2
    assert response["before"] == pytest.approx(1 / 3)
    assert response["after"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert response["change"] == pytest.approx(1 / 2 - 1 / 3)
    overall = next(r for r in rows if r["group"] == "All")
    assert overall["before"] == pytest.approx(1 / 3) and overall["reviews"] == 2


def test_a_selected_judge_is_compared_with_the_pipeline_and_the_human_majority(project):
    from agreement.reports import build_report
    from agreement.reports.inputs import JUDGE, CoderInfo, ItemInfo, ReportInput
    from task_types.claim_review.report import item_extra

    import_trial(project)
    first = project.items.get(position=1)
    extra = item_extra(first.payload, first.prepared)
    humans = {c: keep_all(first) for c in ("h1", "h2", "h3")}  # everyone agrees: refuted, …
    judge = keep_all(first)
    judge["claims"][0] = {
        "id": "43b2b7-0",
        "action": "keep",
        "agreement": "disagree",
        "label": "supported",
    }
    answers = {c: {"u": a} for c, a in humans.items()} | {"judge:x": {"u": judge}}
    inp = ReportInput(
        task_type="claim_review",
        measures={},
        items={"u": ItemInfo(key="u", extra=extra)},
        coders=[CoderInfo(c) for c in humans] + [CoderInfo("judge:x", kind=JUDGE, label="x")],
        answers=answers,
    )
    (row,) = build_report(inp)["tables"]["judges"]["rows"]
    assert row["judge"] == "x" and row["claims"] == 3
    assert row["agreed_with_pipeline"] == pytest.approx(2 / 3)
    assert row["compared"] == 3 and row["same_as_humans"] == pytest.approx(2 / 3)


def test_a_judge_exports_one_row_per_claim_it_labelled_and_one_for_an_answer_with_none(project):
    """An NLI judge labels only claims with evidence; an item where it labelled none still has
    its (empty) row, so that every judge result is in the export."""
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    import_trial(project)
    first, second = Item.objects.filter(project=project).order_by("position")
    reply = json.dumps(
        {"claims": [{"id": c["id"], "label": "supported"} for c in first.payload["claims"]]}
    )
    judge = Judge.objects.create(project=project, name="labeller", kind="nli", model="/models/nli")
    JudgeResult.objects.create(
        item=first,
        judge=judge,
        prompt_version="v1",
        status="ok",
        answer=prompts.get("claim_review").parse(reply, first),
    )
    JudgeResult.objects.create(
        item=second, judge=judge, prompt_version="v1", status="ok", answer={"claims": []}
    )
    text = "".join(export_stream(project=project, fmt="jsonl", coders="all"))
    rows = [json.loads(line) for line in text.splitlines() if '"coder_kind":"judge"' in line]
    assert len(rows) == len(first.payload["claims"]) + 1
    assert [r["claim_id"] for r in rows[:-1]] == [c["id"] for c in first.payload["claims"]]
    assert {r["annotator_label"] for r in rows[:-1]} == {"supported"}
    assert rows[-1]["item_id"] == second.external_id and rows[-1]["judge_outcome"] == "ok"
    assert rows[-1]["claim_id"] is None and rows[-1]["annotator_label"] is None
