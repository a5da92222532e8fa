"""Ranking position bias: a judge run in both orders (each item also judged with the outputs
reversed) against the stub chat-completions server; the two presentations are kept apart and
the ranking report gives the judge's self-agreement."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from annotation.models import Item
from llm_judges import selectors, services
from llm_judges.models import JudgeResult, JudgeRun
from studies.services.exports import export_stream
from studies.services.imports import import_items
from tests import factories
from tests.conftest import REPO, client_for
from tests.llm_judges.conftest import make_llm_judge
from tests.llm_judges.stub_llm import Reply, StubLLM, user_message

RECORDS = [
    json.loads(line)
    for line in (REPO / "data" / "explanation-ranking" / "explanations.jsonl")
    .read_text()
    .splitlines()[:4]
]
CRITERIA = [
    {"name": "Coverage", "definition": "Covers the salient points.", "examples": []},
    {"name": "Overall", "definition": "Overall quality.", "examples": []},
]
OUTPUT = re.compile(
    r"Output ([A-Z]):\n(.*?)(?=\n\nOutput [A-Z]:\n|\n\nRank the explanations)", re.S
)


@pytest.fixture(autouse=True)
def eager_celery():
    """Judge batches run in-process (as in tests/llm_judges)."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": CRITERIA, "seed": 5}, annotators_per_item=1
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    stream = io.BytesIO("".join(json.dumps(r) + "\n" for r in RECORDS).encode())
    import_items(project=project, stream=stream, fmt="jsonl")
    return project


def by_position(request: dict) -> Reply:
    """A judge with pure position bias: whatever is shown first is best."""
    letters = [letter for letter, _ in OUTPUT.findall(user_message(request))]
    ranks = {letter: n for n, letter in enumerate(letters, 1)}
    return Reply(content=json.dumps({c["name"]: ranks for c in CRITERIA}))


def by_content(request: dict) -> Reply:
    """A judge that ranks by the outputs' texts (the longest best): no position bias."""
    shown = OUTPUT.findall(user_message(request))
    order = sorted(shown, key=lambda pair: -len(pair[1]))
    ranks = {letter: order.index((letter, text)) + 1 for letter, text in shown}
    return Reply(content=json.dumps({c["name"]: ranks for c in CRITERIA}))


def run_both_orders(project, responder, capture, monkeypatch, name):
    monkeypatch.setenv("STUB_LLM_API_KEY", "sk-test")
    with StubLLM(responder) as stub:
        judge = make_llm_judge(stub, project, name=name)
        with capture(execute=True):
            runs = services.judge_run_start_both_orders(judge=judge, project=project)
        requests = stub.chat_requests()
    return judge, [JudgeRun.objects.get(pk=run.pk) for run in runs], requests


def self_agreement(project, judge):
    report = build_report(
        gather(
            project=project,
            annotator_filter=AnnotatorFilter(judges=(judge.name,)),
            options=ReportOptions(n_boot=50),
        )
    )
    return {row["criterion"]: row for row in report["tables"]["judge_self_agreement"]["rows"]}


def test_both_orders_judges_each_item_twice_with_the_outputs_reversed(
    project, django_capture_on_commit_callbacks, monkeypatch
):
    judge, runs, requests = run_both_orders(
        project, by_position, django_capture_on_commit_callbacks, monkeypatch, "positional"
    )
    forward, reversed_ = runs
    assert (forward.presentation, reversed_.presentation) == ("", "reversed")
    assert [r.status for r in runs] == ["done", "done"]
    assert (forward.answered_count, reversed_.answered_count) == (4, 4)
    assert len(requests) == 8

    item = Item.objects.filter(project=project).order_by("position").first()
    texts = [o["text"] for o in RECORDS[0]["outputs"]]
    shown = [
        [texts.index(text) for _, text in OUTPUT.findall(user_message(r))]
        for r in requests
        if RECORDS[0]["claim"] in user_message(r)
    ]
    assert len(shown) == 2 and shown[1] == list(reversed(shown[0]))

    first, second = (
        JudgeResult.objects.get(item=item, presentation=p).answer for p in ("", "reversed")
    )
    assert second["order"] == list(reversed(first["order"]))
    # the judge ranks by position: the output it saw first is best in each presentation
    assert first["ranks"]["Coverage"][first["order"][0]] == 1
    assert second["ranks"]["Coverage"][first["order"][0]] == 3

    # the reversed answers never count as the judge's answers (reports, pre-selection)
    answers = selectors.judge_answers(project=project, judge=judge)
    assert answers[item.external_id] == first
    # exports carry the presentation of each row
    text = "".join(export_stream(project=project, fmt="jsonl", coders="judges"))
    presentations = {json.loads(line)["judge_presentation"] for line in text.splitlines()}
    assert presentations == {"", "reversed"}


def test_the_reversed_preview_and_estimate_get_the_presentation_as_a_parameter(
    project, monkeypatch
):
    """Issue 25: the admin's preview and the run estimate show the reversed presentation by
    passing it, and leave the item as it was (nothing set on it)."""
    from llm_judges.services.prompt_templates import shipped_template

    item = Item.objects.select_related("project").filter(project=project).order_by("position")[0]
    before = dict(vars(item))
    template = shipped_template(task_type="ranking")
    usual = selectors.prompt_preview(template=template, item=item)
    flipped = selectors.prompt_preview(template=template, item=item, presentation="reversed")
    assert usual["error"] == flipped["error"] == ""
    texts = [
        [text for _, text in OUTPUT.findall(p["messages"][-1]["content"])] for p in (usual, flipped)
    ]
    assert len(texts[0]) > 1 and texts[1] == texts[0][::-1]
    assert flipped["fields"]["outputs"] != usual["fields"]["outputs"]
    assert vars(item).keys() == before.keys()
    monkeypatch.setenv("STUB_LLM_API_KEY", "sk-test")
    with StubLLM(by_content) as stub:
        judge = make_llm_judge(stub, project, name="estimated")
        estimate = selectors.run_estimate(judge=judge, project=project, both_orders=True)
        assert stub.chat_requests() == []
    assert estimate["presentations"] == ["", "reversed"]
    assert (estimate["calls"], estimate["unrenderable"]) == (2 * len(RECORDS), 0)


def test_a_position_biased_judge_disagrees_with_itself_in_the_ranking_report(
    project, django_capture_on_commit_callbacks, monkeypatch
):
    judge, _, _ = run_both_orders(
        project, by_position, django_capture_on_commit_callbacks, monkeypatch, "positional"
    )
    rows = self_agreement(project, judge)
    assert set(rows) == {"Coverage", "Overall"}
    row = rows["Coverage"]
    assert (row["judge"], row["items"], row["identical"]) == ("positional", 4, 0.0)
    # first and last swap (|Δ| = 2 each), the middle output keeps rank 2
    assert row["mean_abs_difference"] == pytest.approx(4 / 3)
    assert row["alpha_ordinal"] < 0


def test_a_judge_without_position_bias_agrees_with_itself_perfectly(
    project, django_capture_on_commit_callbacks, monkeypatch
):
    judge, _, _ = run_both_orders(
        project, by_content, django_capture_on_commit_callbacks, monkeypatch, "by-content"
    )
    row = self_agreement(project, judge)["Overall"]
    assert (row["items"], row["identical"], row["mean_abs_difference"]) == (4, 1.0, 0.0)
    assert row["alpha_ordinal"] == pytest.approx(1.0)
    assert (row["alpha_ordinal_lower"], row["alpha_ordinal_upper"]) == pytest.approx((1.0, 1.0))


def test_the_report_has_no_self_agreement_without_a_reversed_run(
    project, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setenv("STUB_LLM_API_KEY", "sk-test")
    with StubLLM(by_content) as stub:
        judge = make_llm_judge(stub, project, name="once")
        with django_capture_on_commit_callbacks(execute=True):
            services.judge_run_start(judge=judge, project=project)
    report = build_report(
        gather(project=project, annotator_filter=AnnotatorFilter(judges=("once",)))
    )
    assert "judge_self_agreement" not in report["tables"]


def test_both_orders_from_the_api_and_run_judge_and_refused_where_there_is_one_order(
    project, researcher, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setenv("STUB_LLM_API_KEY", "sk-test")
    with StubLLM(by_content) as stub:
        judge = make_llm_judge(stub, project, name="api-judge")
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(researcher).post(
                f"/api/projects/{project.slug}/judge-runs/",
                {"judge": judge.name, "both_orders": True, "filters": {"external_ids": []}},
                format="json",
            )
        assert response.status_code == 201
        body = response.json()
        assert [r["presentation"] for r in body["runs"]] == ["", "reversed"]
        estimate = selectors.run_estimate(judge=judge, project=project, both_orders=True)
        assert (estimate["to_judge"], estimate["calls"]) == (0, 0)  # both orders answered

        out = io.StringIO()
        other = make_llm_judge(stub, project, name="cli-judge")
        call_command(
            "run_judge", project=project.slug, judge=other.name, both_orders=True, stdout=out
        )
        assert (
            JudgeRun.objects.filter(judge=other, presentation="reversed").get().answered_count == 4
        )

    citation = factories.ProjectFactory()
    judge = make_llm_judge(stub, citation, name="api-judge")  # the citation project's own
    with pytest.raises(services.JudgeError, match="no other presentation") as refused:
        services.judge_run_start_both_orders(judge=judge, project=citation)
    assert refused.value.field == "both_orders"
    with pytest.raises(services.JudgeError, match="no presentation 'reversed'"):
        services.judge_run_start(judge=judge, project=citation, presentation="reversed")
