"""Reads about projects and memberships."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from projects.models import Membership, Project, ProjectSettingsVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def projects_for_user(*, user: User) -> QuerySet[Project]:
    """Projects where the user has any role (all projects for superusers), each annotated with
    the user's role as ``user_role``."""
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(
        memberships__user=user, memberships__removed_at__isnull=True
    ).distinct()


def memberships_for_user(*, user: User) -> QuerySet[Membership]:
    return (
        Membership.objects.current()
        .filter(user=user)
        .select_related("project")
        .order_by("project__name")
    )


def researched_projects(*, user: User) -> QuerySet[Project]:
    """Projects the user is a researcher of (every project for a superuser): what the admin lets
    a staff member see and change."""
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(
        memberships__user=user,
        memberships__role=Membership.Role.RESEARCHER,
        memberships__removed_at__isnull=True,
    )


@dataclass(frozen=True)
class SettingsVersionView:
    """One settings version and what changed from the version before it (none for the first)."""

    number: int
    created_at: datetime
    created_by: str
    via: str
    current: bool
    changes: list[str]  # "config.seed: 13 → 14", one per changed key of config and crowd
    guidelines_diff: list[str]  # unified diff lines of the guidelines ([] when unchanged)


def _key_changes(name: str, before: Mapping, after: Mapping) -> list[str]:
    def shown(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return text if len(text) <= 120 else text[:119] + "…"

    changes = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append(f"{name}.{key}: {shown(before[key])} → removed")
        elif key not in before:
            changes.append(f"{name}.{key}: added {shown(after[key])}")
        elif before[key] != after[key]:
            changes.append(f"{name}.{key}: {shown(before[key])} → {shown(after[key])}")
    return changes


def settings_versions(*, project: Project) -> list[SettingsVersionView]:
    """The project's settings versions, newest first, each with its changes from the previous
    one (one query; [] for a project whose settings never changed: it is at version 1)."""
    rows = list(
        ProjectSettingsVersion.objects.filter(project=project)
        .select_related("created_by")
        .order_by("number")
    )
    views = []
    previous = None
    for row in rows:
        changes: list[str] = []
        diff: list[str] = []
        if previous is not None:
            changes = _key_changes("config", previous.config or {}, row.config or {})
            changes += _key_changes("crowd", previous.crowd or {}, row.crowd or {})
            if previous.guidelines != row.guidelines:
                diff = list(
                    difflib.unified_diff(
                        previous.guidelines.splitlines(),
                        row.guidelines.splitlines(),
                        f"guidelines v{previous.number}",
                        f"guidelines v{row.number}",
                        lineterm="",
                    )
                )
        views.append(
            SettingsVersionView(
                number=row.number,
                created_at=row.created_at,
                created_by=row.created_by.username if row.created_by else "",
                via=row.via,
                current=row.number == project.settings_version,
                changes=changes,
                guidelines_diff=diff,
            )
        )
        previous = row
    return views[::-1]
