"""Start-up checks: the registries name each other's task types, and every task type has the
pieces the platform needs.

Reported by ``manage.py check`` (and at every start) with the task type's name, so a new
task-type package that forgot its template, JS module, report, judge prompts or demo, that
registers one of them under a misspelt slug, that registers no task type at all, or that says
it reads Label Studio projects without the import and exports that takes, says so at once
instead of failing on the first request (or never).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core import checks
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

from agreement.reports.sections import report_registry
from annotation import task_types
from core.registry import Registry
from llm_judges.prompts import prompt_registry
from studies.demos import demo_registry
from studies.label_studio import CONFIG_FORMAT, EXPORT_FORMAT
from studies.replays import replay_registry


@dataclass(frozen=True)
class Piece:
    """One registry a task-type package fills from one module."""

    registry: Registry[Any]
    module: str  # the package's module that registers it ("report" for report.py)
    register: str  # the call that registers it, for hints
    function: str  # an entry's attribute holding a function its module defines
    task_type_attribute: str = "task_type"  # where an entry names its task type ("": its key)
    required: str = ""  # what is missing without it; "" = optional
    missing_id: str = ""  # the check's id when a task type lacks it

    def task_type_of(self, key: str, entry: Any) -> str:
        return getattr(entry, self.task_type_attribute) if self.task_type_attribute else key


PIECES = (
    Piece(report_registry, "report", "agreement.reports.sections.register()", "section", "",
          "its dashboard has no section of its own", "concord.E003"),
    Piece(prompt_registry, "judging", "llm_judges.prompts.register()", "parse",
          required="no judge can answer its items", missing_id="concord.E004"),
    Piece(demo_registry, "demo", "studies.demos.register()", "create",
          required="make run shows none of it", missing_id="concord.E005"),
    Piece(replay_registry, "replay", "studies.replays.register()", "run"),
)  # fmt: skip


def _package_of(task_type: task_types.TaskType) -> str:
    return type(task_type).__module__.rpartition(".")[0]


def _has_module(package: str, name: str) -> bool:
    try:
        return find_spec(f"{package}.{name}") is not None
    except ImportError:
        return False


def _registered_for(piece: Piece) -> Iterator[tuple[str, str, str]]:
    """(key, the task type it names, the module that registered it) of every entry."""
    for key in piece.registry.keys():
        entry = piece.registry.get(key)
        yield key, piece.task_type_of(key, entry), getattr(entry, piece.function).__module__


@checks.register()
def registries_name_task_types(
    app_configs: object = None, **kwargs: object
) -> list[checks.CheckMessage]:
    """A report section, judge prompt, demo or replay registered for a slug that names no task
    type is never shown: an error naming the module that registered it."""
    slugs = set(task_types.task_type_registry.keys())
    known = ", ".join(sorted(slugs)) or "none"
    return [
        checks.Error(
            f"The {piece.registry.what} {key!r} ({module}) is registered for {task_type!r}, "
            f"which is no task type (registered: {known}).",
            hint=f"Pass its task type's slug (TaskType.slug) to {piece.register}.",
            id="concord.E006",
        )
        for piece in PIECES
        for key, task_type, module in _registered_for(piece)
        if task_type not in slugs
    ]


def _listed_packages() -> list[str]:
    return list(settings.TASK_TYPE_APPS)


def _packages_on_disk() -> list[str]:
    folder = settings.TASK_TYPES_DIR
    return sorted(
        f"{folder.name}.{path.name}"
        for path in folder.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    )


@checks.register()
def task_type_packages_register_a_task_type(
    app_configs: object = None, **kwargs: object
) -> list[checks.CheckMessage]:
    """Every package in ``settings.TASK_TYPE_APPS`` registers a task type, and every package
    under ``settings.TASK_TYPES_DIR`` is listed there (a half-written folder is not shipped
    unnoticed)."""
    registering = {_package_of(task_type) for task_type in task_types.all_task_types()}
    listed = _listed_packages()
    problems = [
        checks.Error(
            f"The task-type package {package!r} registers no task type.",
            hint="Decorate its TaskType subclass in task.py with @annotation.task_types.register.",
            id="concord.E007",
        )
        for package in listed
        if package not in registering
    ]
    problems += [
        checks.Error(
            f"The task-type package {package!r} is not installed.",
            hint="List it in settings.TASK_TYPE_APPS, or remove the folder.",
            id="concord.E008",
        )
        for package in _packages_on_disk()
        if package not in listed
    ]
    return problems


def _missing(piece: Piece, task_type: task_types.TaskType, label: str) -> checks.CheckMessage:
    package = _package_of(task_type)
    if _has_module(package, piece.module):
        hint = (
            f"Its {piece.module}.py registers no {piece.registry.what} for {task_type.slug!r}; "
            f"pass that slug to {piece.register} (see concord.E006)."
        )
    else:
        hint = f"Add {piece.module}.py to {package} calling {piece.register}."
    return checks.Error(
        f"{label} registers no {piece.registry.what}: {piece.required}.",
        hint=hint,
        id=piece.missing_id,
    )


@checks.register()
def task_types_complete(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    """Every task type has its template, its JS module, a report section, a judge prompt and a
    demo (a replay is optional)."""
    problems: list[checks.CheckMessage] = []
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
        for piece in PIECES:
            if not piece.required:
                continue
            covered = {task_type for _key, task_type, _module in _registered_for(piece)}
            if task_type.slug not in covered:
                problems.append(_missing(piece, task_type, label))
    return problems


def _label_studio_gaps(task_type: task_types.TaskType) -> list[str]:
    """What a task type with ``label_studio = True`` lacks: its own ``import_label_studio`` (the
    base class's raises), the Label Studio export formats."""
    gaps = []
    if type(task_type).import_label_studio is task_types.TaskType.import_label_studio:
        gaps.append("it does not define import_label_studio")
    missing = [
        name for name in (EXPORT_FORMAT, CONFIG_FORMAT) if name not in task_type.export_formats
    ]
    if missing:
        gaps.append(f"its export_formats lack {' and '.join(repr(name) for name in missing)}")
    return gaps


@checks.register()
def label_studio_task_types_complete(
    app_configs: object = None, **kwargs: object
) -> list[checks.CheckMessage]:
    """A task type that says it reads Label Studio projects (``label_studio = True``: the project
    page offers the Label Studio form) defines ``import_label_studio`` and writes both Label
    Studio files; otherwise the form's every import fails and the round trip has no way back."""
    return [
        checks.Error(
            f"Task type {task_type.slug!r} ({type(task_type).__module__}) sets label_studio = "
            f"True, but {'; '.join(gaps)}.",
            hint=(
                "Define import_label_studio and set export_formats = "
                "studies.label_studio.label_studio_exports(...) (as task_types/ranking/task.py "
                "does), or leave label_studio False."
            ),
            id="concord.E009",
        )
        for task_type in task_types.all_task_types()
        if task_type.label_studio
        for gaps in [_label_studio_gaps(task_type)]
        if gaps
    ]
