"""The demo registry for ``seed_demo``: a task-type package's ``demo.py`` calls :func:`register`
with ``create(*, researcher, annotators) -> str`` (returning a one-line summary);
``StudiesConfig.ready()`` imports every installed app's ``demo`` module."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from core.registry import Registry
from projects.models import Membership


@dataclass(frozen=True)
class Demo:
    name: str
    task_type: str
    create: Callable[..., str]


demo_registry: Registry[Demo] = Registry("demo project")


def register(*, name: str, task_type: str, create: Callable[..., str]) -> None:
    """A demo project ``name`` of ``task_type`` (a task type may have several)."""
    demo_registry.register(name, Demo(name=name, task_type=task_type, create=create))


def demos() -> list[Demo]:
    return list(demo_registry)


def add_members(project, researcher, annotators) -> None:
    Membership.objects.get_or_create(
        project=project, user=researcher, defaults={"role": Membership.Role.RESEARCHER}
    )
    for annotator in annotators:
        Membership.objects.get_or_create(
            project=project, user=annotator, defaults={"role": Membership.Role.ANNOTATOR}
        )


def demo_project(*, slug: str, defaults: dict, researcher, annotators) -> Any:
    """The demo project ``slug``, found or created (``projects.services.project_create``, with
    ``researcher`` as its creator, 3 annotators per item unless ``defaults`` say otherwise),
    the demo accounts its members."""
    from projects.models import Project
    from projects.services import project_create

    project = Project.objects.filter(slug=slug).first() or project_create(
        project=Project(slug=slug, **{"annotators_per_item": 3, **defaults}),
        by=researcher,
        via="demo",
    )
    add_members(project, researcher, annotators)
    return project


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
    from studies.services.imports import import_items

    project = demo_project(
        slug=slug, defaults=defaults, researcher=researcher, annotators=annotators
    )
    if project.items.exists():
        return f"{project.name}: already loaded ({project.items.count()} items)"
    with open_items() as stream:
        report = import_items(project=project, stream=stream, fmt=fmt)
    return f"{project.name}: {report.summary()}"
