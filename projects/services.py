"""Writes about projects: their creation (:func:`project_create`, every new project's one
path) and their settings versions. Memberships and invitations: ``projects.members``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import transaction

from projects.audit import settings_audit
from projects.members import MemberEntry, creator_add, members_apply
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


def project_create(
    *,
    project: Project,
    by: User | None,
    via: str,
    members: Sequence[MemberEntry] = (),
    creator_joins: bool = True,
) -> Project:
    """Save ``project``, a new project the caller built and checked (a study file's settings,
    validated against its task type by ``studies.study_files.study_apply``; the admin's form; a
    Label Studio import, a demo, a replay), and everything a new project has: its first settings
    version, the "project created" audit entry, the ``members`` given (``members_apply``) and
    its creator ``by`` as researcher, unless ``members`` made them a member already (their role
    is then the one given) or ``creator_joins`` is False (a superuser in the admin, who opens
    every project anyway). ``via``: where it was created, for both records."""
    if project.pk is not None:
        raise ValueError(f"project_create saves a new project; {project.slug!r} exists.")
    if project.created_by_id is None and by is not None:
        project.created_by = by
    with transaction.atomic():
        project.save()
        settings_version_record(project=project, before=None, by=by, via=via)
        settings_audit(project=project, actor=by, before=None, via=via)
        members_apply(project=project, members=members, by=by)
        if creator_joins and by is not None:
            creator_add(project=project, user=by)
    return project
