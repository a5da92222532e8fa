"""Demo projects for ``seed_demo``: one module per task type, each with
``create(*, researcher, annotators) -> str`` returning a one-line summary. Modules are found
automatically, so a new task type adds its demo without editing a shared list."""

import importlib
import pkgutil
from collections.abc import Callable

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
