"""Exports with external coders: ``--coders {humans,external,judges,all}`` on the command, the
API and the page; ``coder_source`` says where each answer was made, and an external coder's
row has the same columns as a human's."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import ExternalAnnotation
from llm_judges.models import Judge, JudgeResult
from llm_judges.selectors import _setting
from projects.models import Membership
from studies.export_check import export_body
from studies.services.exports import export_stream
from studies.services.external_annotations import import_annotations
from tests.projects.test_export import annotate_all

HUMAN_ANSWER = {"sentences": [0], "none": False, "helpfulness": 40}


def export(project, fmt="jsonl", coders="humans") -> str:
    return "".join(export_stream(project=project, fmt=fmt, coders=coders))


def jsonl_rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def load_external(project, rows: str, source="mturk-batch-7.jsonl"):
    return import_annotations(
        project=project, stream=io.BytesIO(rows.encode()), fmt="jsonl", source=source
    )


@pytest.fixture
def coded(project, annotator, items):
    """The annotator answered every item; two external coders answered items 0 and 1 (w2 with
    a time and a timestamp); a judge answered item 0."""
    annotate_all(project, annotator, HUMAN_ANSWER)
    load_external(
        project,
        '{"item": "claim-0", "coder": "w1", "answer": {"sentences": [1], "helpfulness": 70}}\n'
        '{"item": "claim-1", "coder": "w1", "answer": {"helpfulness": 20}}\n'
        '{"item": "claim-0", "coder": "w2", "answer": {"sentences": [0, 1]}, '
        '"time_spent_ms": 12300, "annotated_at": "2024-05-01T12:00:00+00:00", '
        '"source": "original study"}\n',
    )
    judge = Judge.objects.create(project=project, name="nli-a", kind="nli", model="/models/nli")
    JudgeResult.objects.create(
        item=items[0],
        judge=judge,
        prompt_version="v1",
        setting=_setting(project),
        status="ok",
        answer={"sentences": [1], "none": False},
    )
    return project


def test_external_rows_have_the_human_columns_and_say_where_they_come_from(coded, annotator):
    rows = jsonl_rows(export(coded, "jsonl", "external"))
    assert [(r["item_id"], r["coder"]) for r in rows] == [
        ("claim-0", "ext:w1"),
        ("claim-0", "ext:w2"),
        ("claim-1", "ext:w1"),
    ]
    humans = jsonl_rows(export(coded, "jsonl", "humans"))
    human_columns = list(humans[0])
    for row in rows:
        assert row["coder_kind"] == "external" and row["annotator"] == row["coder"]
        # The human columns, in their order, plus who and where.
        assert [c for c in row if c not in ("coder_kind", "coder", "coder_source")] == (
            human_columns
        )
    w1, w2, w1_second = rows
    assert w1["coder_source"] == "mturk-batch-7.jsonl" and w2["coder_source"] == "original study"
    assert w1["selected_sentences"] == [1] and w1["helpfulness"] == 70
    assert w1["gold_sentences"] == [1] and w1["f1"] == 1.0  # scored like a human's
    assert w1_second["helpfulness"] == 20
    assert w2["time_spent_s"] == 12.3 and w2["submitted_at"] == "2024-05-01T12:00:00+00:00"
    assert w1["time_spent_s"] is None and w1["submitted_at"] is None
    assert w1["reserved_at"] is None and w1["majority"] is None and w1["excluded"] is False


def test_all_holds_humans_external_coders_and_judges_under_one_header(coded, annotator, items):
    rows = jsonl_rows(export(coded, "jsonl", "all"))
    assert len({tuple(r) for r in rows}) == 1  # every row the same columns, in one order
    kinds = [r["coder_kind"] for r in rows]
    assert kinds == ["human"] * len(items) + ["external"] * 3 + ["judge"]
    pseudonym = Membership.objects.get(project=coded, user=annotator).pseudonym
    assert {(r["coder"], r["coder_source"]) for r in rows if r["coder_kind"] == "human"} == {
        (pseudonym, "concord")
    }
    judge = rows[-1]
    assert (judge["coder"], judge["coder_source"], judge["judge_kind"]) == (
        "nli-a",
        "concord",
        "nli",
    )
    external = [r for r in rows if r["coder_kind"] == "external"]
    assert all(r["judge"] is None and r["judge_raw_reply"] is None for r in external)

    table = list(csv.DictReader(io.StringIO(export(coded, "csv", "all"))))
    assert [r["coder_kind"] for r in table] == kinds
    assert table[len(items)]["coder_source"] == "mturk-batch-7.jsonl"
    assert table[len(items)]["selected_sentences"] == "[1]"


def test_the_humans_and_judges_exports_leave_external_coders_out(coded, items):
    humans = export(coded, "csv")
    assert "ext:" not in humans and "coder_source" not in humans
    judges = jsonl_rows(export(coded, "jsonl", "judges"))
    assert [r["coder_kind"] for r in judges] == ["judge"] and judges[0]["coder_source"] == "concord"


def test_external_answers_without_answer_rows_and_only_external_coders(project, items):
    load_external(project, '{"item": "claim-2", "coder": "solo", "answer": {"helpfulness": 9}}\n')
    (row,) = jsonl_rows(export(project, "jsonl", "external"))
    assert row["coder"] == "ext:solo" and row["helpfulness"] == 9
    assert export(project, "jsonl", "humans") == ""


def test_external_rows_are_read_in_a_constant_number_of_queries(project, items):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            list(export_stream(project=project, fmt="csv", coders="external"))
        return len(queries.captured_queries)

    load_external(project, '{"item": "claim-0", "coder": "a", "answer": {"helpfulness": 1}}\n')
    few = count()
    body = "".join(
        json.dumps({"item": f"claim-{i}", "coder": f"c{c}", "answer": {"helpfulness": c}}) + "\n"
        for i in range(5)
        for c in range(6)
    )
    load_external(project, body)
    assert ExternalAnnotation.objects.filter(item__project=project).count() == 31
    assert count() == few <= 3


def test_the_command_api_and_page_take_external(
    coded, items, tmp_path, researcher_client, client, researcher
):
    out = tmp_path / "ext.csv"
    call_command("export_annotations", project=coded.slug, fmt="csv", coders="external", out=out)
    assert [
        r["coder"] for r in csv.DictReader(io.StringIO(export_body(out.read_bytes()).decode()))
    ] == ["ext:w1", "ext:w2", "ext:w1"]

    url = f"/api/projects/{coded.slug}/export/"
    response = researcher_client.get(url, {"format": "jsonl", "coders": "external"})
    assert response.status_code == 200
    assert "annotations-external.jsonl" in response["Content-Disposition"]
    rows = jsonl_rows(export_body(b"".join(response.streaming_content)).decode())
    assert {r["coder_kind"] for r in rows} == {"external"} and len(rows) == 3
    response = researcher_client.get(url, {"coders": "externals"})
    assert response.status_code == 400 and response.json()["field"] == "coders"
    assert "external" in response.json()["detail"]

    client.force_login(researcher)
    page = client.get(f"/p/{coded.slug}/").content.decode()
    assert '<option value="external">External coders (imported)</option>' in page
    response = client.get(f"/p/{coded.slug}/export/csv/", {"coders": "external"})
    table = list(
        csv.DictReader(io.StringIO(export_body(b"".join(response.streaming_content)).decode()))
    )
    assert [r["coder_source"] for r in table] == [
        "mturk-batch-7.jsonl",
        "original study",
        "mturk-batch-7.jsonl",
    ]


def store_unreadable_date(annotation_id: int) -> None:
    """Write what an import once accepted (``9999-12-31T23:59:59-14:00`` is in year 10000 in
    UTC), below the ORM, which cannot even represent it."""
    value = (
        "10000-01-01 13:59:59+00" if connection.vendor == "postgresql" else "10000-01-01 13:59:59"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ExternalAnnotation._meta.db_table} SET annotated_at = %s WHERE id = %s",
            [value, annotation_id],
        )


def test_exports_and_the_bundle_survive_a_stored_date_python_cannot_read(
    coded, project, researcher, researcher_client, client
):
    stored = ExternalAnnotation.objects.get(coder__name="w2")
    store_unreadable_date(stored.id)
    for fmt in ("jsonl", "csv"):
        for coders in ("external", "all"):
            response = researcher_client.get(
                f"/api/projects/{project.slug}/export/?format={fmt}&coders={coders}"
            )
            assert response.status_code == 200
            text = b"".join(response.streaming_content).decode()
            assert "w2" in text and "10000" not in text
    rows = jsonl_rows(export(project, coders="external"))
    assert {r["coder"]: r["submitted_at"] for r in rows}["ext:w2"] is None
    client.force_login(researcher)
    response = client.get(f"/p/{project.slug}/bundle.zip")
    assert response.status_code == 200
