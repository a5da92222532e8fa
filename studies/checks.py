"""Start-up check: every registered task type has the pieces the platform needs.

Reported by ``manage.py check`` (and at every start) with the task type's name, so a new
task-type package that forgot its template, JS module, report, judge prompts or demo says so at
once instead of failing on the first request.
"""

from __future__ import annotations

from django.contrib.staticfiles import finders
from django.core import checks
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

from agreement.reports.sections import report_registry
from annotation import task_types
from llm_judges.prompts import prompt_registry
from studies.demos import demos


@checks.register()
def task_types_complete(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    problems: list[checks.CheckMessage] = []
    demo_task_types = {demo.task_type for demo in demos()}
    for task_type in task_types.all_task_types():
        label = f"Task type {task_type.slug!r} ({type(task_type).__module__})"
        try:
            get_template(task_type.template_name)
        except TemplateDoesNotExist:
            problems.append(
                checks.Error(
                    f"{label} has no template {task_type.template_name!r}.",
                    hint=f"Add templates/{task_type.template_name} to its package.",
                    id="concord.E001",
                )
            )
        if not finders.find(task_type.script):
            problems.append(
                checks.Error(
                    f"{label} has no JS module {task_type.script!r}.",
                    hint=f"Add static/{task_type.script} to its package.",
                    id="concord.E002",
                )
            )
        if task_type.slug not in report_registry:
            problems.append(
                checks.Warning(
                    f"{label} registers no report section; its dashboard shows agreement only.",
                    hint="Add report.py calling agreement.reports.sections.register().",
                    id="concord.W001",
                )
            )
        if task_type.slug not in prompt_registry:
            problems.append(
                checks.Warning(
                    f"{label} registers no judge prompt; no judge can pre-fill it.",
                    hint="Add judging.py calling llm_judges.prompts.register().",
                    id="concord.W002",
                )
            )
        if task_type.slug not in demo_task_types:
            problems.append(
                checks.Warning(
                    f"{label} registers no demo project; make run shows none of it.",
                    hint="Add demo.py calling studies.demos.register().",
                    id="concord.W003",
                )
            )
    return problems
