"""Exports with judges: ``--coders {humans,judges,all}`` on the command, the API and the page.

A judge run goes through the real services and the real openai client against the stub
chat-completions server (tests/llm_judges/stub_llm.py); its results are then exported.
"""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from llm_judges import prompts
from llm_judges.models import Judge, JudgeResult, JudgeRun
from llm_judges.selectors import _setting, judge_results_for_export
from projects.models import Membership
from studies.export_check import export_body
from studies.services.exports import JUDGE_COLUMNS, export_stream
from tests import factories
from tests.llm_judges.conftest import api_key, make_llm_judge, start, stub  # noqa: F401
from tests.llm_judges.stub_llm import Reply, claim_of
from tests.projects.test_export import annotate_all

HUMAN_ANSWER = {"sentences": [0], "none": False, "helpfulness": 40}
ANSWER_COLUMNS = ("selected_sentences", "none", "helpfulness", "precision", "recall", "f1")


def jsonl_rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def export(project, fmt="jsonl", coders="humans") -> str:
    return "".join(export_stream(project=project, fmt=fmt, coders=coders))


@pytest.fixture
def judged(project, items, annotator, stub, api_key, django_capture_on_commit_callbacks):  # noqa: F811
    """Humans answered every item; then an LLM judge ran: claims 0-2 answered (reply "2"),
    claim 3 unparseable (prose), claim 4 failed (503 on every attempt)."""
    annotate_all(project, annotator, HUMAN_ANSWER)

    def responder(request):
        if claim_of(request) == "Claim number 3 is accurate.":
            return Reply(content="I believe the second sentence cites it.")
        if claim_of(request) == "Claim number 4 is accurate.":
            return Reply(status=503)
        return Reply()

    stub.responder = responder
    judge = make_llm_judge(stub, project, max_attempts=2)
    humans_before = {fmt: export(project, fmt) for fmt in ("jsonl", "csv")}
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.unparseable_count, run.failed_count) == (3, 1, 1)
    return judge, run, humans_before


def test_all_coders_holds_one_row_per_judge_answer_and_a_failed_call_with_its_message(
    project, items, annotator, judged, tmp_path
):
    judge, run, _ = judged
    out = tmp_path / "all.jsonl"
    call_command("export_annotations", project=project.slug, fmt="jsonl", coders="all", out=out)
    rows = jsonl_rows(export_body(out.read_bytes()).decode())

    humans = [r for r in rows if r["coder_kind"] == "human"]
    judges = [r for r in rows if r["coder_kind"] == "judge"]
    assert len(humans) == len(judges) == len(items) and len(rows) == 2 * len(items)
    assert len({tuple(r) for r in rows}) == 1  # every row has the same columns, in one order

    pseudonym = Membership.objects.get(project=project, user=annotator).pseudonym
    for row in humans:
        assert row["coder"] == row["annotator"] == pseudonym
        assert row["selected_sentences"] == [0] and row["helpfulness"] == 40
        assert all(row[c] is None for c in (*JUDGE_COLUMNS, "judge_raw_reply"))

    by_item = {r["item_id"]: r for r in judges}
    fingerprint = prompts.get("citation_recovery").fingerprint("v1")
    assert run.prompt_fingerprint == fingerprint
    for row in judges:
        assert row["coder"] == row["judge"] == "stub-llm"
        assert (row["judge_kind"], row["judge_model"]) == ("llm", "stub-model")
        assert (row["judge_prompt_name"], row["judge_prompt_version"]) == (
            "citation_recovery",
            "v1",
        )
        assert row["judge_prompt_fingerprint"] == fingerprint
        assert row["judge_run_id"] == run.pk and row["judge_setting"] == "sample"
        assert row["annotator"] is None and row["time_spent_s"] is None
        assert row["majority"] is None and row["preselection_shown"] is None

    for item_id in ("claim-0", "claim-1", "claim-2"):
        row = by_item[item_id]
        assert (row["judge_outcome"], row["judge_message"]) == ("ok", "")
        assert row["selected_sentences"] == [1] and row["none"] is False  # reply "2", 1-based
        assert row["helpfulness"] is None  # judges do not rate helpfulness
        assert row["gold_sentences"] == [1] and row["f1"] == 1.0
        assert (row["judge_input_tokens"], row["judge_output_tokens"]) == (120, 7)
        assert isinstance(row["judge_latency_ms"], int)
        assert row["judge_raw_reply"] == '{"sentences": [2]}'

    unparseable = by_item["claim-3"]
    assert unparseable["judge_outcome"] == "unparseable"
    assert "neither JSON" in unparseable["judge_message"]
    assert unparseable["judge_raw_reply"] == "I believe the second sentence cites it."

    failed = by_item["claim-4"]
    stored = JudgeResult.objects.get(judge=judge, item__external_id="claim-4")
    assert failed["judge_outcome"] == "failed" and stored.status == "failed"
    assert failed["judge_message"] == stored.error and "503" in stored.error
    assert failed["judge_attempts"] == 2
    for row in (unparseable, failed):  # never an answer
        assert all(row[c] is None for c in ANSWER_COLUMNS)
        assert row["gold_sentences"] is None and row["masked_evidence_id"] is None


def test_the_csv_holds_both_under_one_header_without_raw_replies(project, items, judged):
    text = export(project, "csv", "all")
    assert "judge_raw_reply" not in text and "I believe the second sentence" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2 * len(items)
    assert [r["coder_kind"] for r in rows] == ["human"] * len(items) + ["judge"] * len(items)
    failed = next(r for r in rows if r["item_id"] == "claim-4" and r["coder_kind"] == "judge")
    assert failed["judge_outcome"] == "failed" and failed["judge_message"].startswith("Gave up")
    assert all(failed[c] == "" for c in ANSWER_COLUMNS)
    answered = next(r for r in rows if r["item_id"] == "claim-0" and r["coder_kind"] == "judge")
    assert answered["selected_sentences"] == "[1]" and answered["judge_input_tokens"] == "120"


def test_the_humans_export_is_unchanged_by_a_judge_run(project, items, judged):
    _, _, before = judged
    for fmt in ("jsonl", "csv"):
        assert export(project, fmt) == export(project, fmt, "humans") == before[fmt]
    assert "coder_kind" not in before["csv"] and "stub-llm" not in before["jsonl"]


def test_judges_only_takes_the_answer_columns_even_when_the_first_result_failed(project, items):
    judge = Judge.objects.create(project=project, name="a-nli", kind="nli", model="/models/nli")
    for n, item in enumerate(items):
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            prompt_version="v1",
            setting=_setting(project),
            status="failed" if n == 0 else "ok",
            error="out of memory" if n == 0 else "",
            answer=None if n == 0 else {"sentences": [], "none": True},
        )
    rows = jsonl_rows(export(project, "jsonl", "judges"))
    assert [r["coder_kind"] for r in rows] == ["judge"] * len(items)
    assert len({tuple(r) for r in rows}) == 1 and "selected_sentences" in rows[0]
    assert rows[0]["judge_message"] == "out of memory" and rows[0]["none"] is None
    assert rows[1]["none"] is True and rows[1]["judge_kind"] == "nli"
    assert (
        rows[1]["judge_run_id"] is None and rows[1]["judge_prompt_fingerprint"] is None
    )  # no run kept
    csv_rows = list(csv.DictReader(io.StringIO(export(project, "csv", "judges"))))
    assert len(csv_rows) == len(items) and csv_rows[0]["selected_sentences"] == ""


def test_only_failed_results_and_no_answers_export_without_answer_columns(project, items):
    judge = Judge.objects.create(project=project, name="down", kind="llm", model="m")
    JudgeResult.objects.create(
        item=items[0], judge=judge, prompt_version="v1", status="failed", error="HTTP 404"
    )
    (row,) = jsonl_rows(export(project, "jsonl", "all"))
    assert row["judge_message"] == "HTTP 404" and "selected_sentences" not in row


def _results(project, items, judges: int, prefix: str) -> None:
    for j in range(judges):
        judge = Judge.objects.create(
            project=project, name=f"{prefix}-{j}", kind="embedding", model="minilm"
        )
        run = JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1")
        for n, item in enumerate(items):
            JudgeResult.objects.create(
                item=item,
                judge=judge,
                run=run,
                prompt_version="v1",
                status="unparseable" if n == 2 else "ok",
                answer=None if n == 2 else {"sentences": [n % 2], "none": False},
            )


def _queries(function) -> int:
    with CaptureQueriesContext(connection) as queries:
        function()
    return len(queries.captured_queries)


def test_judge_results_are_read_in_a_constant_number_of_queries(project, items):
    def read_all():
        results = list(judge_results_for_export(project=project, chunk_size=4))
        return [(r.item.external_id, r.judge.name, r.run.prompt_version) for r in results]

    def export_all():
        return list(export_stream(project=project, fmt="csv", coders="judges"))

    _results(project, items, judges=1, prefix="few")
    few = (_queries(read_all), _queries(export_all))
    assert len(read_all()) == len(items)
    _results(
        project, [*items, *factories.make_items(project, 10, start=5)], judges=3, prefix="many"
    )
    assert len(read_all()) == len(items) + 3 * (len(items) + 10)
    many = (_queries(read_all), _queries(export_all))
    assert few == many
    assert many[0] <= 3 and many[1] <= 6


# --- the API and the page -----------------------------------------------------------------------


def test_the_api_exports_judges_and_names_a_bad_coders_value(
    researcher_client, annotator_client, project, items, judged
):
    url = f"/api/projects/{project.slug}/export/"
    response = researcher_client.get(url, {"format": "csv", "coders": "all"})
    assert response.status_code == 200 and response.streaming
    assert "annotations-all.csv" in response["Content-Disposition"]
    rows = list(
        csv.DictReader(io.StringIO(export_body(b"".join(response.streaming_content)).decode()))
    )
    assert sum(r["coder_kind"] == "judge" for r in rows) == len(items)

    response = researcher_client.get(url, {"coders": "judges"})
    assert len(jsonl_rows(export_body(b"".join(response.streaming_content)).decode())) == len(items)

    response = researcher_client.get(url, {"coders": "robots"})
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["field"] == "coders" and "robots" in response.json()["detail"]
    response = researcher_client.get(url, {"format": "xlsx"})
    assert response.status_code == 400 and response.json()["field"] == "format"
    assert annotator_client.get(url, {"coders": "all"}).status_code == 404


def test_the_project_page_downloads_with_the_chosen_coders(client, researcher, project, judged):
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert 'name="coders"' in page and '<option value="all"' in page
    assert f'formaction="/p/{project.slug}/export/csv/"' in page

    response = client.get(f"/p/{project.slug}/export/jsonl/", {"coders": "judges"})
    assert response.status_code == 200
    rows = jsonl_rows(export_body(b"".join(response.streaming_content)).decode())
    assert {r["coder"] for r in rows} == {"stub-llm"} and len(rows) == 5
    assert {r["judge_outcome"] for r in rows} == {"ok", "unparseable", "failed"}

    response = client.get(f"/p/{project.slug}/export/csv/", {"coders": "robots"}, follow=True)
    assert "Unknown coders" in response.content.decode()
