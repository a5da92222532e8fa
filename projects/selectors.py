"""Reads about projects and memberships."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from core.errors import Refusal
from projects.audit import AuditKind
from projects.members import CROWD_USERNAME_PREFIXES
from projects.models import AuditEntry, Membership, Project, ProjectSettingsVersion

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


# --- the audit log ------------------------------------------------------------------------------

AUDIT_PAGE = 50
SYSTEM_ACTOR = "system"  # the actor filter's value for entries made by no account


@dataclass(frozen=True)
class AuditFilter:
    """Which entries of a project's log to show: a kind, a person (username, or ``system``) and
    a range of days (UTC, both ends included); empty: all."""

    kind: str = ""
    actor: str = ""
    since: date | None = None
    until: date | None = None

    def query(self) -> dict[str, str]:
        """The filter as query parameters (for the next page's link)."""
        values = {"kind": self.kind, "actor": self.actor, "since": self.since, "until": self.until}
        return {key: str(value) for key, value in values.items() if value}


@dataclass(frozen=True)
class AuditPage:
    entries: list[AuditEntry]
    next_before: int | None  # the ``before`` of the next (older) page; None: this is the last


def _day(params: Mapping[str, Any], key: str) -> date | None:
    text = str(params.get(key) or "").strip()
    if not text:
        return None
    try:
        if len(text) != len("YYYY-MM-DD"):
            raise ValueError(text)
        day = date.fromisoformat(text)
    except ValueError:
        raise Refusal(f"{key}: give a day as YYYY-MM-DD, not {text[:20]!r}.", field=key) from None
    if not FIRST_DAY <= day <= LAST_DAY:
        # The day after ``until`` and a time zone's midnight must exist (9999-12-31 has none).
        raise Refusal(f"{key}: give a day from {FIRST_DAY} to {LAST_DAY}.", field=key)
    return day


FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(9000, 12, 31)


def audit_filter_from_query(*, params: Mapping[str, Any]) -> AuditFilter:
    """The filter of a page's or the API's query (``kind``, ``actor``, ``since``, ``until``);
    an unknown kind or a malformed day is refused naming the parameter."""
    kind = str(params.get("kind") or "").strip()
    if kind and kind not in AuditKind.values:
        raise Refusal(f"kind: choose one of {', '.join(AuditKind.values)}.", field="kind")
    actor = str(params.get("actor") or "").strip()[:150]
    since, until = _day(params, "since"), _day(params, "until")
    if since and until and since > until:
        raise Refusal("since: the first day comes after the last (until).", field="since")
    return AuditFilter(kind=kind, actor=actor, since=since, until=until)


def audit_before_from_query(*, params: Mapping[str, Any]) -> int | None:
    """The keyset of a page (``before``: the id after the last entry shown), None for the first."""
    text = str(params.get("before") or "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise Refusal("before: give the id that the previous page's link names.", field="before")
    return int(text)


def audit_entries(
    *,
    project: Project,
    audit_filter: AuditFilter,
    before: int | None = None,
    size: int | None = None,
) -> AuditPage:
    """One page of ``project``'s log, newest first, ``size`` entries (``AUDIT_PAGE`` by
    default) with their actors, in one query whatever the number of entries."""
    size = size or AUDIT_PAGE
    rows = AuditEntry.objects.filter(project=project).select_related("actor")
    if audit_filter.kind:
        rows = rows.filter(kind=audit_filter.kind)
    if audit_filter.actor == SYSTEM_ACTOR:
        rows = rows.filter(actor__isnull=True)
    elif audit_filter.actor:
        rows = rows.filter(actor__username=audit_filter.actor)
    if audit_filter.since:
        rows = rows.filter(created_at__gte=_midnight(audit_filter.since))
    if audit_filter.until:
        rows = rows.filter(created_at__lt=_midnight(audit_filter.until + timedelta(days=1)))
    if before is not None:
        rows = rows.filter(id__lt=before)
    entries = list(rows.order_by("-id")[: size + 1])
    more = len(entries) > size
    entries = entries[:size]
    return AuditPage(entries=entries, next_before=entries[-1].pk if more else None)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


AUDIT_ACTORS_LISTED = 200


def audit_actors(*, project: Project) -> list[str]:
    """The usernames that appear in ``project``'s log, sorted, for the page's person filter:
    crowd workers' accounts (one per platform session, possibly thousands) are left out of the
    list, and at most ``AUDIT_ACTORS_LISTED`` are given (``?actor=`` still takes any name)."""
    rows = AuditEntry.objects.filter(project=project, actor__isnull=False)
    for prefix in CROWD_USERNAME_PREFIXES:
        rows = rows.exclude(actor__username__startswith=prefix)
    names = rows.values_list("actor__username", flat=True).distinct().order_by("actor__username")
    return list(names[:AUDIT_ACTORS_LISTED])
