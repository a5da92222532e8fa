"""Embedding and NLI judges use no prompt: their runs record their own settings (threshold, label
map…) and a fingerprint of them, and their export rows carry those instead of an LLM prompt's
name and fingerprint (issue 27, item 5)."""

import hashlib
import json

import pytest
from django.test import Client

from llm_judges import services
from llm_judges.models import JudgeRun
from studies.services.exports import export_stream
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.test_embedding_judge import demo_item
from tests.llm_judges.test_nli_judge import nli_judge
from tests.llm_judges.tiny_nli import build_tiny_nli


@pytest.fixture(scope="module")
def entailing(tmp_path_factory):
    return build_tiny_nli(tmp_path_factory.mktemp("nli") / "entails", bias=(4.0, 0.0, 0.0))


def judge_rows(project) -> list[dict]:
    text = "".join(export_stream(project=project, fmt="jsonl", coders="judges"))
    return [row for row in map(json.loads, text.splitlines()) if "item_id" in row]


def fingerprint(settings: dict) -> str:
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_an_embedding_judges_rows_carry_its_threshold_and_its_fingerprint_not_a_prompt(
    project, researcher, django_capture_on_commit_callbacks
):
    demo_item(project, masked=1)
    runs = {}
    for name, threshold in (("minilm", 0.6), ("minilm-loose", 0.3)):
        judge = services.judge_create(
            project=project,
            name=name,
            kind="embedding",
            model="all-MiniLM-L6-v2",
            parameters={"threshold": threshold},
        )
        runs[name] = start(judge, project, django_capture_on_commit_callbacks)
    run = runs["minilm"]
    settings = {"kind": "embedding", "model": "all-MiniLM-L6-v2", "threshold": 0.6}
    assert (run.judge_settings, run.settings_fingerprint) == (settings, fingerprint(settings))
    assert (run.prompt, run.prompt_fingerprint) == (None, "")
    assert runs["minilm-loose"].settings_fingerprint != run.settings_fingerprint

    rows = {row["judge"]: row for row in judge_rows(project)}
    row = rows["minilm"]
    assert row["judge_prompt_name"] is None and row["judge_prompt_fingerprint"] is None
    assert row["judge_settings"] == settings
    assert row["judge_settings_fingerprint"] == fingerprint(settings)
    assert rows["minilm-loose"]["judge_settings"]["threshold"] == 0.3
    csv = "".join(export_stream(project=project, fmt="csv", coders="judges"))
    assert fingerprint(settings) in csv and "judge_settings_fingerprint" in csv.splitlines()[0]

    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/judges/runs/{run.pk}/").content.decode()
    assert "threshold 0.6" in page and run.settings_fingerprint in page and "no prompt" in page


def test_an_nli_judges_rows_carry_its_label_map_and_direction(
    project, items, entailing, django_capture_on_commit_callbacks
):
    judge = nli_judge(entailing, project, direction="both")
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.DONE
    assert run.judge_settings["direction"] == "both"
    assert run.judge_settings["entailment_label"] == "entailment"
    assert run.judge_settings["label_mapping"] == {}
    assert run.settings_fingerprint == fingerprint(run.judge_settings)
    (row, *_) = judge_rows(project)
    assert row["judge_prompt_name"] is None and row["judge_prompt_fingerprint"] is None
    assert row["judge_settings"] == run.judge_settings
    assert row["judge_settings_fingerprint"] == run.settings_fingerprint


def test_an_llm_judges_rows_keep_the_prompt_and_add_its_sampling_settings(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, temperature=0.2)
    run = start(judge, project, django_capture_on_commit_callbacks)
    (row, *_) = judge_rows(project)
    assert row["judge_prompt_name"] == project.task_type
    assert row["judge_prompt_fingerprint"] == run.prompt_fingerprint != ""
    assert row["judge_settings"]["temperature"] == 0.2
    assert row["judge_settings_fingerprint"] == run.settings_fingerprint
