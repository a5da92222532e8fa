"""Writes about projects and memberships."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import transaction

from projects.audit import AuditKind, audit_record
from projects.models import Membership, Project, ProjectSettingsVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def researcher_add(*, project: Project, user: User) -> Membership:
    """Make ``user`` a researcher of ``project`` (whoever creates a project in the admin owns it;
    without this a staff member who is not a superuser could not open what they created)."""
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": Membership.Role.RESEARCHER}
        )
        if not created and (
            membership.role != Membership.Role.RESEARCHER or membership.removed_at is not None
        ):
            membership.role = Membership.Role.RESEARCHER
            membership.removed_at = None
            membership.save(update_fields=["role", "removed_at"])
            created = True
        if created:
            audit_record(
                project=project,
                actor=user,
                kind=AuditKind.MEMBER_ADDED,
                summary=f"Added {user.username} as researcher (the project's creator).",
                changes={
                    "username": user.username,
                    "pseudonym": membership.pseudonym,
                    "role": Membership.Role.RESEARCHER,
                },
            )
    return membership


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
