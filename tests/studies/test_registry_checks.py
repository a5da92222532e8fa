"""The registries check each other (studies/checks.py): a report section, judge prompt, demo or
replay registered for a slug that names no task type; a task type without a required piece; a
task-type package that registers no task type, or is not listed; and a module that fails half-way
through its import leaves its registry as it was (``autodiscover_modules(register_to=…)``)."""

from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core import checks
from django.test import override_settings

from agreement.reports.sections import report_registry
from annotation import task_types
from llm_judges.prompts import prompt_registry
from studies import checks as house_checks
from studies.demos import demo_registry
from studies.replays import replay_registry


def _isolate(monkeypatch, *registries) -> None:
    """Let the test change these registries; each is put back afterwards."""
    for registry in registries:
        monkeypatch.setattr(registry, "_registry", dict(registry._registry))


def test_a_report_under_a_misspelt_slug_is_an_error_and_the_hint_points_at_report_py(
    monkeypatch,
):
    """The newcomer's case: report.py exists but registers under 'claim_reveiw'."""
    _isolate(monkeypatch, report_registry)
    hooks = report_registry.get("claim_review")
    report_registry.unregister("claim_review")
    report_registry.register("claim_reveiw", hooks)
    messages = sorted(
        (m for m in checks.run_checks() if m.id.startswith("concord.")), key=lambda m: m.id
    )
    assert [m.id for m in messages] == ["concord.E003", "concord.E006"]
    missing, misspelt = messages
    assert misspelt.level == checks.ERROR
    assert "'claim_reveiw' (task_types.claim_review.report)" in misspelt.msg
    assert "which is no task type" in misspelt.msg
    assert missing.msg.startswith("Task type 'claim_review'")
    assert "Its report.py registers no report section for 'claim_review'" in missing.hint


@pytest.mark.parametrize(
    "registry, key", [(prompt_registry, "stance"), (demo_registry, None), (replay_registry, None)]
)
def test_a_judge_prompt_demo_or_replay_for_no_task_type_is_an_error(monkeypatch, registry, key):
    _isolate(monkeypatch, registry)
    key = key or next(k for k in registry.keys() if registry.get(k).task_type == "stance")
    entry = registry.get(key)
    registry.unregister(key)
    registry.register(f"{key}-moved", replace(entry, task_type="stanse"))
    errors = [m for m in house_checks.registries_name_task_types() if m.id == "concord.E006"]
    assert len(errors) == 1
    assert f"The {registry.what} '{key}-moved' (task_types.stance." in errors[0].msg
    assert "registered for 'stanse', which is no task type" in errors[0].msg


@pytest.mark.parametrize(
    "registry, check_id", [(report_registry, "E003"), (prompt_registry, "E004")]
)
def test_a_task_type_without_a_report_or_judge_prompt_is_an_error(monkeypatch, registry, check_id):
    _isolate(monkeypatch, registry)
    registry.unregister("ranking")
    assert [(m.id, m.level) for m in house_checks.task_types_complete()] == [
        (f"concord.{check_id}", checks.ERROR)
    ]


def test_a_task_type_without_a_demo_is_an_error_but_one_without_a_replay_is_not(monkeypatch):
    _isolate(monkeypatch, demo_registry, replay_registry)
    for registry in (demo_registry, replay_registry):
        for key in registry.keys():
            if registry.get(key).task_type == "ranking":
                registry.unregister(key)
    (missing,) = house_checks.task_types_complete()
    assert missing.id == "concord.E005" and "Task type 'ranking'" in missing.msg


def test_a_listed_package_that_registers_no_task_type_is_an_error(monkeypatch):
    """Removing ``@register`` from task.py: the package is installed and does nothing."""
    _isolate(monkeypatch, task_types.task_type_registry)
    task_types.unregister("stance")
    errors = house_checks.task_type_packages_register_a_task_type()
    assert [(m.id, m.msg) for m in errors] == [
        ("concord.E007", "The task-type package 'task_types.stance' registers no task type.")
    ]


def test_a_package_under_task_types_that_is_not_listed_is_an_error(settings):
    settings.TASK_TYPE_APPS = [a for a in settings.TASK_TYPE_APPS if a != "task_types.ranking"]
    errors = house_checks.task_type_packages_register_a_task_type()
    assert [(m.id, m.msg) for m in errors] == [
        ("concord.E008", "The task-type package 'task_types.ranking' is not installed.")
    ]


def test_a_label_studio_task_type_without_its_import_or_exports_is_an_error(monkeypatch):
    """``label_studio = True`` offers the Label Studio form: the task type must read the
    project (``import_label_studio``, the base class's raises) and write both files back."""
    assert house_checks.label_studio_task_types_complete() == []
    ranking = type(task_types.get("ranking"))
    monkeypatch.setattr(ranking, "import_label_studio", task_types.TaskType.import_label_studio)
    monkeypatch.setattr(
        ranking, "export_formats", {"label-studio": ranking.export_formats["label-studio"]}
    )
    monkeypatch.setattr(type(task_types.get("stance")), "label_studio", True)
    errors = house_checks.label_studio_task_types_complete()
    assert [(m.id, m.level) for m in errors] == [("concord.E009", checks.ERROR)] * 2
    by_slug = {m.msg.split("'")[1]: m.msg for m in errors}
    assert by_slug["ranking"] == (
        "Task type 'ranking' (task_types.ranking.task) sets label_studio = True, but it does not "
        "define import_label_studio; its export_formats lack 'label-studio-config'."
    )
    assert "its export_formats lack 'label-studio' and 'label-studio-config'" in by_slug["stance"]
    assert "does not define import_label_studio" in by_slug["stance"]
    assert "concord.E009" in {m.id for m in checks.run_checks()}


def test_a_folder_without_init_is_not_a_package(tmp_path):
    (tmp_path / "half_written").mkdir()
    (tmp_path / "half_written" / "notes.txt").write_text("todo")
    with override_settings(TASK_TYPES_DIR=tmp_path, TASK_TYPE_APPS=[]):
        assert house_checks._packages_on_disk() == []
        (tmp_path / "half_written" / "__init__.py").write_text("")
        assert house_checks._packages_on_disk() == [f"{tmp_path.name}.half_written"]


# --- a module that fails half-way through its import ---------------------------------------

BROKEN = "broken_task_type"
MODULES = {
    "task": """
from annotation.task_types import TaskType, register

@register
class Broken(TaskType):
    slug = "broken"
    name = "Broken"
""",
    "judging": """
from llm_judges.prompts import JudgePrompt, PromptVersion, register

register(JudgePrompt(
    task_type="broken", versions={"v1": PromptVersion(system="", user="{x}")},
    default_version="v1", response_format=lambda i, v: {}, parse=lambda t, i: {},
    placeholders={"x": "x"}, fields=lambda item: {"x": 1},
))
""",
    "report": """
from agreement.reports.sections import register

register("broken", section=lambda report_input: None)
""",
    "demo": """
from studies.demos import register

register(name="broken", task_type="broken", create=lambda **kwargs: "")
""",
    "replay": """
from studies.replays import register

register(name="broken", title="", task_type="broken", slug="broken", run=lambda **kwargs: None)
""",
}
OWNERS = [
    ("annotation", "task", task_types.task_type_registry),
    ("llm_judges", "judging", prompt_registry),
    ("agreement", "report", report_registry),
    ("studies", "demo", demo_registry),
    ("studies", "replay", replay_registry),
]


@pytest.fixture
def broken_app(tmp_path, monkeypatch):
    """Installs an app whose ``name`` module registers its entry and then raises."""

    def install(name: str) -> None:
        package = tmp_path / BROKEN
        package.mkdir()
        (package / "__init__.py").write_text("")
        source = MODULES[name] + "\nraise RuntimeError('half-written')\n"
        (package / f"{name}.py").write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path))
        module = __import__(BROKEN)
        real = apps.get_app_configs()
        broken = SimpleNamespace(name=BROKEN, module=module)
        monkeypatch.setattr(apps, "get_app_configs", lambda: [*real, broken])

    yield install
    for name in [m for m in sys.modules if m == BROKEN or m.startswith(BROKEN + ".")]:
        del sys.modules[name]


@pytest.mark.parametrize("app, module, registry", OWNERS, ids=[m for _, m, _ in OWNERS])
def test_a_module_that_fails_to_import_leaves_its_registry_as_it_was(
    broken_app, app, module, registry
):
    broken_app(module)
    before = registry.keys()
    with pytest.raises(RuntimeError, match="half-written"):
        apps.get_app_config(app).ready()  # the owner's own autodiscovery
    assert "broken" not in registry
    assert registry.keys() == before
