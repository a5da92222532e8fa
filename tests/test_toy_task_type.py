"""Proof of extensibility: a task type is one package.

``tests/toy_task_type/`` (task.py, judging.py, report.py, demo.py, a template and a JS module)
is installed as a Django app for these tests only, and nothing else in the repository names it.
It is then registered, passes the start-up check, is annotated through the API, has its report
section on the agreement report, a judge prompt, and its columns in the export.
"""

from __future__ import annotations

import io
import json

import pytest
from django.apps import apps
from django.core import checks
from django.test import Client
from django.test.utils import modify_settings
from django.urls import reverse
from django.utils.module_loading import autodiscover_modules

from agreement.reports import build_report
from agreement.reports.gather import gather
from agreement.reports.inputs import ReportOptions
from agreement.reports.sections import report_registry
from annotation import task_types
from core.registry import NotRegistered
from llm_judges.prompts import prompt_registry
from projects.models import Project
from studies.demos import demo_registry
from studies.services.exports import export_jsonl
from studies.services.imports import import_items
from tests import factories
from tests.conftest import client_for

TOY = "tests.toy_task_type"


@pytest.fixture
def toy_installed():
    """The toy package as an installed app, its modules discovered like every task type's."""
    with modify_settings(INSTALLED_APPS={"append": TOY}):
        autodiscover_modules("task", "report", "judging", "demo")
        try:
            yield
        finally:
            for registry in (
                task_types.task_type_registry,
                report_registry,
                prompt_registry,
                demo_registry,
            ):
                if "yes_no" in registry:
                    registry.unregister("yes_no")
            import sys

            for name in [m for m in sys.modules if m.startswith(TOY + ".")]:
                del sys.modules[name]


def test_without_the_package_the_task_type_does_not_exist():
    with pytest.raises(NotRegistered, match="yes_no"):
        task_types.get("yes_no")


def test_the_package_registers_and_passes_the_startup_check(toy_installed):
    toy = task_types.get("yes_no")
    assert toy.name == "Yes or no"
    assert apps.is_installed(TOY)
    # It has a template, a JS module, a report, a judge prompt and a demo: nothing to report.
    assert [m for m in checks.run_checks() if "yes_no" in m.msg] == []
    # Without its judge prompt the check says so, by name.
    prompt_registry.unregister("yes_no")
    messages = [m for m in checks.run_checks() if "'yes_no'" in m.msg]
    assert [(m.id, m.level) for m in messages] == [("concord.E004", checks.ERROR)]
    assert "Its judging.py registers no judge prompt for 'yes_no'" in messages[0].hint


@pytest.mark.django_db
def test_the_toy_is_annotated_through_the_api_reported_and_exported(toy_installed, researcher):
    project = factories.ProjectFactory(task_type="yes_no", annotators_per_item=2, config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    lines = "".join(
        json.dumps({"id": f"s{i}", "statement": f"Statement {i}", "gold": i % 2 == 0}) + "\n"
        for i in range(3)
    )
    report = import_items(project=project, stream=io.StringIO(lines), fmt="jsonl")
    assert report.created == 3

    annotators = []
    for _ in range(2):
        user = factories.UserFactory(username=factories.unique("toy"))
        factories.MembershipFactory(project=project, user=user, role="annotator")
        annotators.append(user)
    for user in annotators:
        client = client_for(user)
        browser = Client()
        browser.force_login(user)
        page = browser.get(reverse("annotate", args=[project.slug]))
        assert page.status_code == 200
        assert b"yes_no/task.js" in page.content
        while True:
            response = client.post(reverse("api-next", args=[project.slug]), {}, format="json")
            if response.status_code == 204:
                break
            assert response.status_code == 200, response.content
            assignment = response.json()
            assert set(assignment["item"]) == {"statement"}  # never gold
            submitted = client.post(
                reverse("api-submit", args=[assignment["id"]]),
                {"answer": {"answer": True}, "time_spent_ms": 1200, "revision": 1},
                format="json",
            )
            assert submitted.status_code == 201, submitted.content
        refused = client.post(
            reverse("api-submit", args=[assignment["id"]]),
            {"answer": {"answer": "maybe"}, "time_spent_ms": 10, "revision": 2},
            format="json",
        )
        assert refused.status_code == 400
        assert refused.json()["field"] == "answer"

    figures = build_report(gather(project=project, options=ReportOptions(n_boot=10)))
    assert figures["section"]["title"] == "Yes or no"
    yes_share = figures["tables"]["yes_share"]["rows"][0]
    assert (yes_share["answers"], yes_share["yes"], yes_share["share_yes"]) == (6, 6, 1.0)
    assert [row["field"] for row in figures["tables"]["agreement"]["rows"]] == ["answer"]

    rows = [json.loads(line) for line in export_jsonl(project=project)]
    assert len(rows) == 6
    assert {row["statement"] for row in rows} == {"Statement 0", "Statement 1", "Statement 2"}
    assert all(row["answer"] is True for row in rows)
    assert Project.objects.get(pk=project.pk).task_type == "yes_no"


def test_the_toy_demo_is_registered(toy_installed):
    assert demo_registry.get("yes_no").task_type == "yes_no"


def test_the_toy_judge_prompt_renders_the_statement_and_reads_a_reply(toy_installed):
    from types import SimpleNamespace

    prompt = prompt_registry.get("yes_no")
    item = SimpleNamespace(payload={"statement": "Water is wet."})
    assert prompt.messages(item, "v1")[1]["content"].startswith(
        "Is this statement true?\n\nWater is wet.\n\n"
    )
    assert prompt.parse('{"answer": "yes"}', item) == {"answer": True}


def answer_yes_by_taps(page):
    from tests.e2e.pages import tap

    tap(page, "label:has(input[value='yes'])")


def test_the_toy_is_answered_by_taps_on_a_phone(toy_installed, live_server, browser):
    """Its two choices use the shared .tap-target class, so they pass the phone routine that
    every task type passes (tests/e2e/test_phone_and_accessibility.py)."""
    from tests.e2e.pages import answer_an_item_by_taps_on_a_phone

    answer_an_item_by_taps_on_a_phone(live_server, browser, "yes_no", answer_yes_by_taps)
