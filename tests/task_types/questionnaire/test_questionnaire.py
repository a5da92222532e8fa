"""Questionnaire: config validation, item import, answer validation through the API, per-question
agreement (hand-computed), export, judge parsing and the demo."""

import io
import json
import re

import pytest
from django.test import Client
from rest_framework.exceptions import ValidationError

from agreement.reports.generic import agreement_table
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput, ReportOptions
from annotation import task_types
from annotation.models import Annotation, Item
from core.errors import first_error
from studies.services.exports import export_jsonl
from studies.services.imports import ImportFailed, import_items
from task_types.questionnaire import demo
from task_types.questionnaire.report import section
from tests import factories
from tests.conftest import client_for

TASK = task_types.get("questionnaire")

FIELDS = [
    {"name": "prompt", "label": "Prompt"},
    {"name": "left", "label": "Left answer", "format": "markdown"},
    {"name": "right", "label": "Right answer", "format": "markdown"},
]
QUESTIONS = [
    {"id": "topic", "kind": "single", "prompt": "Topic?", "options": ["health", "money"]},
    {
        "id": "issues",
        "kind": "multiple",
        "prompt": "Problems?",
        "options": ["wrong", "vague", "rude"],
        "min": 0,
        "required": False,
    },
    {"id": "helpful", "kind": "likert", "prompt": "Helpful?", "points": ["No", "Somewhat", "Yes"]},
    {"id": "sure", "kind": "slider", "prompt": "How sure?", "min_label": "Guess"},
    {"id": "why", "kind": "text", "prompt": "Why?", "required": False, "max_length": 20},
    {"id": "better", "kind": "pairwise", "prompt": "Better?", "fields": ["left", "right"]},
]
CONFIG = {"fields": FIELDS, "layout": "side_by_side", "questions": QUESTIONS}
RECORDS = [
    {"id": f"r{n}", "prompt": f"Question {n}?", "left": "**Yes.**", "right": "No.", "model": "x"}
    for n in range(1, 4)
]


def config_error(config) -> str:
    with pytest.raises(ValidationError) as caught:
        TASK.validate_config(config)
    where, message = first_error(caught.value.detail)
    return f"{where}: {message}"


def jsonl(records) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(
        task_type="questionnaire", config=CONFIG, annotators_per_item=2
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


# --- config ----------------------------------------------------------------------------------------


def test_a_valid_config_gets_its_defaults_and_measures_one_field_per_question():
    config = TASK.validate_config(CONFIG)
    by_id = {q["id"]: q for q in config["questions"]}
    assert [q["required"] for q in config["questions"]] == [True, False, True, True, False, True]
    assert by_id["topic"]["options"] == [
        {"value": "health", "label": "health"},
        {"value": "money", "label": "money"},
    ]
    assert by_id["better"]["labels"] == ["Left answer is better", "Tie", "Right answer is better"]
    assert by_id["better"]["allow_tie"] is True
    assert TASK.measures_for(CONFIG) == {
        "topic": "nominal",
        "issues": "jaccard",
        "helpful": "ordinal",
        "sure": "interval",
        "better": "ordinal",
    }


@pytest.mark.parametrize(
    "question, expected",
    [
        (
            {"kind": "likert", "points": ["Only one"]},
            "questions.0 (q).points: a Likert scale needs",
        ),
        ({"kind": "single", "options": ["a"]}, "questions.0 (q).options: give 2 to 20 options"),
        (
            {"kind": "single", "options": ["a", "b"], "distance": "interval"},
            "questions.0 (q).distance: interval agreement needs numbers",
        ),
        (
            {"kind": "likert", "points": ["a", "b"], "distance": "jaccard"},
            "questions.0 (q).distance: 'jaccard' does not fit a likert question",
        ),
        ({"kind": "text", "distance": "nominal"}, "questions.0 (q).distance: free-text answers"),
        (
            {"kind": "pairwise", "fields": ["left", "nowhere"]},
            "questions.0 (q).fields: 'nowhere' is not one of the item fields",
        ),
        ({"kind": "slider", "step": 0}, "questions.0 (q).step: must be a whole number"),
        ({"kind": "essay"}, "questions.0 (q).kind: 'essay' is not a question kind"),
        ({"kind": "slider", "colour": "red"}, "questions.0 (q).colour: a slider question has no"),
        ({"kind": "text", "prompt": ""}, "questions.0 (q).prompt: this question needs a text"),
        (
            {"kind": "multiple", "options": ["a", "b"], "min": 3},
            "questions.0 (q).min: must be a whole number from 0 to 2",
        ),
    ],
)
def test_a_bad_question_is_named_with_its_field(question, expected):
    raw = {"id": "q", "prompt": "Asked?", **question}
    message = config_error({"fields": FIELDS, "questions": [raw]})
    assert message.startswith(expected), message


def test_config_errors_name_duplicate_ids_fields_and_empty_questionnaires():
    twice = [QUESTIONS[0], dict(QUESTIONS[0])]
    assert "Two questions have the id 'topic'" in config_error({"questions": twice})
    assert config_error({"questions": []}).startswith("questions: ")
    assert "questions.1.id: give the question an id" in config_error(
        {"questions": [QUESTIONS[0], {"kind": "text", "prompt": "x"}]}
    )
    assert config_error({"fields": []}).startswith("fields: Show at least one item field")
    clash = {"fields": [{"name": "topic"}], "questions": [QUESTIONS[0]]}
    assert "also an item field" in config_error(clash)


# --- import ----------------------------------------------------------------------------------------


def test_jsonl_and_csv_items_import_with_their_fields_and_provenance(project):
    report = import_items(project=project, stream=jsonl(RECORDS), fmt="jsonl")
    assert report.created == 3
    item = Item.objects.get(external_id="r1")
    assert item.payload["left"] == "**Yes.**" and item.payload["model"] == "x"
    shown = TASK.display(item)
    assert shown == {
        "fields": {"prompt": "Question 1?", "left": "**Yes.**", "right": "No."},
        "order": ["prompt", "left", "right"],  # no assignment: as configured
        "first_shown": {"better": "left"},
    }
    assert TASK.headline(item.payload) == "Question 1?"
    assert TASK.headline({"id": "x", "model": "secret-system", "left": "L"}) == ""
    csv_text = 'id,prompt,left,right\nc1,"Is it, though?",A,B\n'
    import_items(project=project, stream=io.BytesIO(csv_text.encode()), fmt="csv")
    assert Item.objects.get(external_id="c1").payload["prompt"] == "Is it, though?"


@pytest.mark.parametrize(
    "fmt, body, where",
    [
        ("jsonl", [RECORDS[0], {"id": "bad", "prompt": "P", "left": "L"}], "line 2, field 'right'"),
        ("jsonl", [RECORDS[0], {**RECORDS[1], "left": ""}], "line 2, field 'left'"),
        ("jsonl", [RECORDS[0], {**RECORDS[1], "left": ["a list"]}], "line 2, field 'left'"),
        ("csv", "id,prompt,left\nc1,P,L\n", "line 2, field 'right'"),
        ("csv", "id,prompt,left,right\nc1,P,L,R\n,P,L,R\n", "line 3, field 'id'"),
    ],
)
def test_a_bad_record_names_line_and_field_and_nothing_is_imported(project, fmt, body, where):
    stream = jsonl(body) if fmt == "jsonl" else io.BytesIO(body.encode())
    with pytest.raises(ImportFailed) as caught:
        import_items(project=project, stream=stream, fmt=fmt)
    assert where in str(caught.value) and "Nothing imported" in str(caught.value)
    assert not Item.objects.filter(project=project).exists()


def test_an_invalid_project_config_refuses_the_import_by_name(project):
    project.config = {"fields": FIELDS, "questions": [{"id": "q", "kind": "likert"}]}
    project.save()
    with pytest.raises(ImportFailed, match=r"questions.0 \(q\).prompt"):
        import_items(project=project, stream=jsonl(RECORDS), fmt="jsonl")


# --- answers ---------------------------------------------------------------------------------------

GOOD = {
    "topic": "health",
    "issues": ["vague", "wrong"],
    "helpful": 3,
    "sure": 70,
    "why": "  Clear.  ",
    "better": -1,
}


def annotator_client(project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return client_for(user)


def submit(client, project, answer):
    assignment = client.post(f"/api/projects/{project.slug}/next/").json()
    return assignment, client.post(
        f"/api/assignments/{assignment['id']}/submit/", {"answer": answer}, format="json"
    )


def test_a_valid_answer_is_stored_canonically(project):
    import_items(project=project, stream=jsonl(RECORDS), fmt="jsonl")
    client = annotator_client(project)
    assignment, response = submit(client, project, GOOD)
    assert response.status_code in (200, 201), response.json()
    assert assignment["item"]["fields"]["left"] == "**Yes.**"
    assert "model" not in json.dumps(assignment["item"])
    answer = Annotation.objects.get(assignment_id=assignment["id"], is_current=True).answer
    assert answer == {**GOOD, "issues": ["wrong", "vague"], "why": "Clear."}
    _, optional_blank = submit(client, project, {**GOOD, "issues": None, "why": ""})
    assert optional_blank.status_code in (200, 201), optional_blank.json()


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"topic": "sport"}, "topic", "not one of the options"),
        ({"topic": None}, "topic", "needs an answer"),
        ({"issues": ["wrong", "wrong"]}, "issues", "chosen twice"),
        ({"issues": "wrong"}, "issues", "as a list"),
        ({"helpful": 4}, "helpful", "from 1 to 3"),
        ({"helpful": True}, "helpful", "from 1 to 3"),
        ({"sure": 101}, "sure", "0 to 100"),
        ({"sure": 50.5}, "sure", "whole number"),
        ({"why": "x" * 21}, "why", "At most 20 characters"),
        ({"better": 2}, "better", "Give -1"),
        ({"colour": "red"}, "colour", "no question 'colour'"),
    ],
)
def test_an_invalid_answer_is_a_json_400_naming_the_question(project, change, field, words):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    _, response = submit(annotator_client(project), project, {**GOOD, **change})
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == field, body
    assert words in body["errors"][field][0], body


def test_a_pairwise_question_without_ties_refuses_a_tie(project):
    project.config = {
        **CONFIG,
        "questions": [{**QUESTIONS[5], "allow_tie": False}],
    }
    project.save()
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    _, response = submit(annotator_client(project), project, {"better": 0})
    assert response.status_code == 400
    assert "allows no tie" in response.json()["errors"]["better"][0]


# --- agreement per question (hand-computed) --------------------------------------------------------


def hand_example() -> ReportInput:
    """Two coders, three items.

    topic (nominal): (health, health), (health, money), (money, money). Coincidences: o_hh = 2,
    o_hm = o_mh = 1, o_mm = 2; n = 6, n_h = n_m = 3. D_o = 2/6, D_e = 2·3·3/(6·5) = 0.6,
    alpha = 1 − (1/3)/0.6 = 4/9.

    sure (interval): (10, 20), (50, 50), (90, 80). D_o = (2·100 + 0 + 2·100)/6 = 200/3; mean 50,
    squared deviations sum 5000, so the ordered-pair sum is 2·6·5000 = 60000 and
    D_e = 60000/30 = 2000; alpha = 1 − (200/3)/2000 = 29/30.

    issues (Jaccard): ({wrong}, {wrong}), ({wrong, vague}, {wrong}), ({vague}, {vague}).
    D_o = 2·0.5/6 = 1/6; values {w}×3, {w,v}×1, {v}×2 with d({w},{w,v}) = d({w,v},{v}) = 0.5 and
    d({w},{v}) = 1: ordered-pair sum 2·(3·1·0.5 + 3·2·1 + 1·2·0.5) = 17, D_e = 17/30;
    alpha = 1 − (1/6)/(17/30) = 12/17.
    """
    a = {
        "i1": {"topic": "health", "sure": 10, "issues": ["wrong"], "why": "x"},
        "i2": {"topic": "health", "sure": 50, "issues": ["wrong", "vague"], "why": None},
        "i3": {"topic": "money", "sure": 90, "issues": ["vague"], "why": "y"},
    }
    b = {
        "i1": {"topic": "health", "sure": 20, "issues": ["wrong"], "why": "z"},
        "i2": {"topic": "money", "sure": 50, "issues": ["wrong"], "why": None},
        "i3": {"topic": "money", "sure": 80, "issues": ["vague"], "why": None},
    }
    return ReportInput(
        task_type="questionnaire",
        measures=TASK.measures_for(CONFIG),
        items={k: ItemInfo(key=k) for k in ("i1", "i2", "i3")},
        coders=[CoderInfo(id="a"), CoderInfo(id="b")],
        answers={"a": a, "b": b},
        config=CONFIG,
        options=ReportOptions(n_boot=50),
    )


EXPECTED_ALPHA = {"topic": 4 / 9, "sure": 29 / 30, "issues": 12 / 17}


def test_the_report_gives_each_question_its_alpha_under_its_distance():
    rows = {r["question"]: r for r in section(hand_example()).tables["questions"]["rows"]}
    for question, alpha in EXPECTED_ALPHA.items():
        assert rows[question]["alpha"] == pytest.approx(alpha, abs=1e-12), question
    assert rows["topic"]["distance"] == "nominal" and rows["issues"]["distance"] == "jaccard"
    assert rows["why"]["distance"] == "—" and rows["why"]["alpha"] is None
    assert rows["why"]["answers"] == 3
    assert rows["sure"]["summary"] == "mean 50.0 ± 28.9"
    assert rows["topic"]["summary"] == "most often health (50 %)"


def test_a_pairwise_summary_names_the_fields_by_their_labels_not_their_keys():
    inp = hand_example()
    for answers in inp.answers.values():
        for answer in answers.values():
            answer["better"] = -1  # the first field ("left") is better
    rows = {r["question"]: r for r in section(inp).tables["questions"]["rows"]}
    assert rows["better"]["summary"] == "Left answer 100 % · tie 0 % · Right answer 0 %"


def test_the_generic_agreement_table_has_the_same_alpha_per_question():
    rows = {r["field"]: r for r in agreement_table(hand_example())["rows"]}
    for question, alpha in EXPECTED_ALPHA.items():
        assert rows[question]["alpha"] == pytest.approx(alpha, abs=1e-12), question
    assert "why" not in rows


# --- export, judges, demo --------------------------------------------------------------------------


def test_export_writes_one_row_per_question(project):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    submit(annotator_client(project), project, GOOD)
    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert [r["question"] for r in rows] == [q["id"] for q in QUESTIONS]
    better = next(r for r in rows if r["question"] == "better")
    assert better["answer"] == -1 and better["answer_text"] == "left better"
    assert next(r for r in rows if r["question"] == "helpful")["answer_text"] == "3 Yes"


def test_an_export_validates_the_config_once_and_its_queries_do_not_grow_with_rows(
    project, monkeypatch
):
    """Issue 34: the config went through the DRF serializer for every exported row (a 100k
    export ran at ~1k rows/s). Counted: validations per export, and the export's queries with 2
    answers against 6 (the same)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studies.services.exports import export_chunks
    from task_types.questionnaire import task as questionnaire

    validated = []
    real = questionnaire.project_config
    monkeypatch.setattr(
        questionnaire, "project_config", lambda config: validated.append(1) or real(config)
    )
    import_items(project=project, stream=jsonl(RECORDS), fmt="jsonl")
    first, second = annotator_client(project), annotator_client(project)

    def export(coders: str) -> tuple[int, int, list[str]]:
        validated.clear()
        with CaptureQueriesContext(connection) as queries:
            lines = "".join(export_chunks(project=project, fmt="jsonl", coders=coders))
        return len(validated), len(queries), lines.splitlines()

    submit(first, project, GOOD)
    submit(second, project, GOOD)
    calls, few_queries, lines = export("humans")
    assert calls == 1 and len(lines) == 2 * len(QUESTIONS)
    for client in (first, second, first, second):
        submit(client, project, GOOD)
    calls, queries, lines = export("humans")
    assert calls == 1 and len(lines) == 6 * len(QUESTIONS)
    assert queries == few_queries
    calls, _, lines = export("all")
    assert calls == 1 and len(lines) == 6 * len(QUESTIONS)


def test_a_judge_reply_is_checked_like_an_annotator_answer(project):
    from llm_judges.prompts import Unparseable, get

    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    prompt = get("questionnaire")
    text = prompt.messages(item, "v1")[1]["content"]
    assert "Left answer (left):\n**Yes.**" in text and "1 = No, 2 = Somewhat, 3 = Yes" in text
    assert prompt.parse("```json\n" + json.dumps(GOOD) + "\n```", item)["helpful"] == 3
    with pytest.raises(Unparseable, match="helpful"):
        prompt.parse(json.dumps({**GOOD, "helpful": 9}), item)
    schema = prompt.response_format(item, "v1")["json_schema"]["schema"]
    assert schema["required"] == [q["id"] for q in QUESTIONS]


def test_the_demo_is_synthetic_covers_every_kind_and_loads_once(db):
    assert "SYNTHETIC" in demo.__doc__
    kinds = {q["kind"] for q in demo.CONFIG["questions"]}
    assert kinds == {"single", "multiple", "likert", "slider", "text", "pairwise"}
    researcher, annotator = factories.UserFactory(), factories.UserFactory()
    assert f"{len(demo.ITEMS)} items created" in demo.create(
        researcher=researcher, annotators=[annotator]
    )
    assert "already loaded" in demo.create(researcher=researcher, annotators=[annotator])


def test_the_dashboard_reads_answers_from_the_database_with_alpha_per_question(project):
    """The hand-computed example submitted through the API by two annotators; the dashboard's
    figures come from ``gather`` (``measures_for`` and the registered section)."""
    from agreement.reports import build_report
    from agreement.reports.gather import gather

    import_items(project=project, stream=jsonl(RECORDS), fmt="jsonl")
    example = hand_example().answers
    base = {"helpful": 2, "better": 0, "why": None}
    for coder in ("a", "b"):
        client = annotator_client(project)
        for _ in RECORDS:
            assignment = client.post(f"/api/projects/{project.slug}/next/").json()
            unit = "i" + assignment["item"]["fields"]["prompt"].split()[1].rstrip("?")
            answer = {**base, **example[coder][unit]}
            response = client.post(
                f"/api/assignments/{assignment['id']}/submit/", {"answer": answer}, format="json"
            )
            assert response.status_code in (200, 201), response.json()
    report = build_report(gather(project=project, options=ReportOptions(n_boot=50)))
    generic = {r["field"]: r["alpha"] for r in report["tables"]["agreement"]["rows"]}
    own = {r["question"]: r["alpha"] for r in report["tables"]["questions"]["rows"]}
    for question, alpha in EXPECTED_ALPHA.items():
        assert generic[question] == pytest.approx(alpha, abs=1e-12), question
        assert own[question] == pytest.approx(alpha, abs=1e-12), question
    assert report["comparison"]["scalars"]["α topic"] == pytest.approx(4 / 9, abs=1e-12)
    # α per question is one headline tile (the generic table's), not a second "α · topic" one.
    assert not [f for f in report["section"]["summary"] if f["label"].startswith("α")]
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    browser = Client()
    browser.force_login(researcher)
    page = browser.get(f"/p/{project.slug}/agreement/").content.decode()
    tiles = re.findall(r'<div class="label">(α[^<]*)</div>', page)
    assert {f"α {question}" for question in EXPECTED_ALPHA} <= set(tiles), tiles
    assert len(tiles) == len(set(tiles)) and not [t for t in tiles if t.startswith("α ·")], tiles


def test_slider_means_and_option_shares_get_prediction_powered_estimates():
    from dataclasses import replace

    from agreement.reports import build_report
    from agreement.reports.inputs import JUDGE
    from metrics.prediction_powered import prediction_powered_mean

    inp = hand_example()
    judge = {
        "i1": {"topic": "health", "sure": 10},
        "i2": {"topic": "health", "sure": 50},
        "i3": {"topic": "money", "sure": 90},
        "i4": {"topic": "money", "sure": 30},
        "i5": {"topic": "health", "sure": 70},
    }
    inp = replace(
        inp,
        items={k: ItemInfo(key=k) for k in judge},
        coders=[*inp.coders, CoderInfo(id="judge:j", kind=JUDGE, label="j")],
        answers={**inp.answers, "judge:j": judge},
    )
    report = build_report(inp)
    rows = {r["figure"]: r for r in report["tables"]["prediction_powered"]["rows"]}
    sure = rows["Mean · sure"]
    assert sure["human"] == pytest.approx(50.0) and sure["human_n"] == 3
    assert sure["judge_only"] == pytest.approx(50.0) and sure["judge_n"] == 5
    expected = prediction_powered_mean([15, 50, 85], [10, 50, 90], [30, 70])
    assert (sure["ppi"], sure["ppi_lower"], sure["lam"]) == pytest.approx(
        (expected.estimate, expected.low, expected.lam)
    )
    health = rows["Share health · topic"]
    assert health["human"] == pytest.approx(0.5) and health["judge_only"] == pytest.approx(0.6)
    assert {"Share first preferred · better", "Share tie · better"} <= set(rows)
    assert report["human_items"] == 3 and report["judge_items"] == {"j": 5}
