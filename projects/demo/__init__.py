"""Demo projects for ``seed_demo``: one module per task type, each with
``create(*, researcher, annotators) -> str`` returning a one-line summary. Modules are found
automatically, so a new task type adds its demo without editing a shared list."""

import importlib
import pkgutil
from collections.abc import Callable
from typing import IO

from projects.models import Membership


def demo_creators() -> list[tuple[str, Callable[..., str]]]:
    creators = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not module.name.startswith("_"):
            creators.append((module.name, importlib.import_module(f"{__name__}.{module.name}").create))
    return creators


def add_members(project, researcher, annotators) -> None:
    Membership.objects.get_or_create(
        project=project, user=researcher, defaults={"role": Membership.Role.RESEARCHER}
    )
    for annotator in annotators:
        Membership.objects.get_or_create(
            project=project, user=annotator, defaults={"role": Membership.Role.ANNOTATOR}
        )


def load_demo_project(
    *,
    slug: str,
    defaults: dict,
    researcher,
    annotators,
    open_items: Callable[[], IO],
    fmt: str,
) -> str:
    """Create (or find) a demo project, make the demo accounts members, and import its items
    once; returns the one-line summary ``seed_demo`` prints. ``open_items`` is only called when
    the project has no items yet."""
    from projects.models import Project
    from projects.services.imports import import_items

    project, _ = Project.objects.get_or_create(
        slug=slug, defaults={"annotators_per_item": 3, "created_by": researcher, **defaults}
    )
    add_members(project, researcher, annotators)
    if project.items.exists():
        return f"{project.name}: already loaded ({project.items.count()} items)"
    with open_items() as stream:
        report = import_items(project=project, stream=stream, fmt=fmt)
    return f"{project.name}: {report.summary()}"
