"""Writes about projects: their settings versions (memberships: ``projects.members``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from projects.models import Project, ProjectSettingsVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User


VERSIONED = ("guidelines", "config", "crowd")
FIRST_RECORDED = "as first recorded"


class ProjectSettings(TypedDict):
    """What a settings version holds."""

    guidelines: str
    config: dict[str, Any]  # the task type's settings as stored
    crowd: dict[str, Any]  # the crowd and quality settings as stored


def project_settings(*, project: Project) -> ProjectSettings:
    """What a settings version holds: the guidelines, the task config and the crowd settings."""
    return ProjectSettings(
        guidelines=project.guidelines or "", config=project.config or {}, crowd=project.crowd or {}
    )


def settings_version_record(
    *, project: Project, before: Mapping[str, Any] | None, by: User | None = None, via: str
) -> int:
    """Record the project's settings (``project_settings``, as saved) as a new version when they
    differ from the last recorded one, move ``Project.settings_version`` to it and return its
    number. ``before``: the settings before this change (``project_settings`` of the project as
    it was; None for a new project). A project with no version recorded yet first records
    ``before`` as its current version (1), so the settings the earlier answers were made under
    are kept. Call it in the transaction that saved the project."""
    after = project_settings(project=project)
    if before is not None and dict(before) == after and project.settings_version == 1:
        if not ProjectSettingsVersion.objects.filter(project=project).exists():
            return 1  # never changed, and not now: nothing to record
    latest = (
        ProjectSettingsVersion.objects.select_for_update()
        .filter(project=project)
        .order_by("-number")
        .first()
    )
    if latest is None:
        first = dict(before) if before is not None else after
        latest = ProjectSettingsVersion.objects.create(
            project=project,
            number=project.settings_version,
            created_by=by if before is None else None,
            via=via if before is None else FIRST_RECORDED,
            **first,
        )
    if {key: getattr(latest, key) for key in VERSIONED} != after:
        latest = ProjectSettingsVersion.objects.create(
            project=project, number=latest.number + 1, created_by=by, via=via, **after
        )
    if project.settings_version != latest.number:
        Project.objects.filter(pk=project.pk).update(settings_version=latest.number)
        project.settings_version = latest.number
    return latest.number
