"""The project's audit log: who changed what in a project, and when (``AuditEntry``).

Every service that changes a project's settings, guidelines, members, invitations, judges, or
imports, exports, bundles or crowd quality control calls :func:`audit_record` in the transaction
of its change, once per change and never when nothing changed (applying the same study file
again writes nothing). Answers are data, not project changes: they are not logged here. The
researchers read the log on the project's audit page and its API (``projects.selectors.
audit_entries``); the replication bundle carries it as ``audit.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db import models

from projects.models import AuditEntry, Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class AuditKind(models.TextChoices):
    """What an entry records: a closed list (``audit_record`` refuses any other)."""

    PROJECT_CREATED = "project_created", "Project created"
    SETTINGS_CHANGED = "settings_changed", "Settings or guidelines changed"
    MEMBER_ADDED = "member_added", "Member added"
    MEMBER_ROLE_CHANGED = "member_role_changed", "Member's role changed"
    MEMBER_REMOVED = "member_removed", "Member removed"
    INVITATIONS_CREATED = "invitations_created", "Invitation links created"
    INVITATION_REVOKED = "invitation_revoked", "Invitation withdrawn"
    INVITATION_ACCEPTED = "invitation_accepted", "Invitation accepted"
    JUDGE_CREATED = "judge_created", "Judge created"
    JUDGE_CHANGED = "judge_changed", "Judge changed"
    JUDGE_RUN_STARTED = "judge_run_started", "Judge run started"
    JUDGE_RUN_CANCELLED = "judge_run_cancelled", "Judge run cancelled"
    ITEMS_IMPORTED = "items_imported", "Items imported"
    IMPORT_CANCELLED = "import_cancelled", "Import cancelled"
    ITEM_FIXED = "item_fixed", "Item fixed"
    ANNOTATIONS_IMPORTED = "annotations_imported", "Annotations imported"
    EXPORTED = "exported", "Annotations exported"
    BUNDLE_WRITTEN = "bundle_written", "Replication bundle written"
    BUNDLE_LOADED = "bundle_loaded", "Loaded from a replication bundle"
    QUALIFICATION_DECIDED = "qualification_decided", "Qualification decided"
    FEEDBACK_SET = "feedback_set", "Feedback to an annotator"
    CROWD_SESSION_OPENED = "crowd_session_opened", "Crowd session opened"
    ADMIN_CHANGED = "admin_changed", "Changed in the admin"
    PLATFORM_ACTIONS = "platform_actions", "Prolific/MTurk actions sent"
    PLATFORM_ACTION_RECONCILED = "platform_action_reconciled", "Prolific/MTurk action reconciled"


SUMMARY_LENGTH = AuditEntry._meta.get_field("summary").max_length
# What a project's settings entry compares (and shows before/after).
SETTINGS_FIELDS = (
    "name",
    "task_type",
    "status",
    "annotators_per_item",
    "guidelines",
    "config",
    "crowd",
)


def audit_record(
    *,
    project: Project,
    actor: AbstractBaseUser | AnonymousUser | None,
    kind: str,
    summary: str,
    changes: Mapping[str, Any] | None = None,
) -> AuditEntry:
    """Write one entry of ``project``'s log. ``actor``: who made the change (None or an
    anonymous user: the system, a worker or a command). ``summary``: one sentence (cut at 500
    characters); ``changes``: JSON, for settings ``{field: {"before", "after"}}``. Call it inside
    the transaction of the change. An unknown ``kind`` is a programming error (ValueError)."""
    if kind not in AuditKind.values:
        raise ValueError(f"Unknown audit kind {kind!r}; add it to projects.audit.AuditKind.")
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    text = " ".join(summary.split())
    if len(text) > SUMMARY_LENGTH:
        text = text[: SUMMARY_LENGTH - 1] + "…"
    return AuditEntry.objects.create(
        project=project, actor=actor, kind=kind, summary=text, changes=dict(changes or {})
    )


def settings_of(*, project: Project) -> dict[str, Any]:
    """The project's values of ``SETTINGS_FIELDS`` (what a settings entry compares)."""
    return {key: getattr(project, key) for key in SETTINGS_FIELDS}


def settings_audit(
    *,
    project: Project,
    actor: AbstractBaseUser | AnonymousUser | None,
    before: Mapping[str, Any] | None,
    via: str,
) -> AuditEntry | None:
    """After a save of ``project``: a "project created" entry (``before`` None) or a "settings
    changed" entry naming each changed field with its value before and after; nothing when no
    field changed. ``via``: where the change was made (study file, settings page, API, admin)."""
    after = settings_of(project=project)
    if before is None:
        changes = {key: {"before": None, "after": value} for key, value in after.items()}
        return audit_record(
            project=project,
            actor=actor,
            kind=AuditKind.PROJECT_CREATED,
            summary=f"Created the project {project.name!r} ({project.task_type}) via {via}.",
            changes=changes,
        )
    changes = {
        key: {"before": before.get(key), "after": value}
        for key, value in after.items()
        if before.get(key) != value
    }
    if not changes:
        return None
    return audit_record(
        project=project,
        actor=actor,
        kind=AuditKind.SETTINGS_CHANGED,
        summary=f"Changed {', '.join(changes)} via {via}.",
        changes=changes,
    )


# Keys of ``changes`` that name accounts or hold what researchers typed about people (invitation
# notes are often e-mail addresses): left out of what leaves the instance.
PRIVATE_KEYS = frozenset({"username", "notes", "note", "worker_id", "feedback"})


def _public(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if k not in PRIVATE_KEYS}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def audit_public(*, project: Project) -> list[dict[str, Any]]:
    """The project's log as the replication bundle publishes it, oldest first: when, kind, who
    (the actor's pseudonym in the project; ``staff`` for an account that is not a member,
    ``system`` for none) and ``changes`` without account names or invitation notes. The
    summaries, which name accounts, stay on the instance."""
    pseudonyms = dict(
        Membership.objects.filter(project=project).values_list("user_id", "pseudonym")
    )
    rows = AuditEntry.objects.filter(project=project).order_by("id")
    return [
        {
            "at": entry.created_at.isoformat(),
            "kind": entry.kind,
            "actor": (
                "system" if entry.actor_id is None else pseudonyms.get(entry.actor_id, "staff")
            ),
            "changes": _public(entry.changes),
        }
        for entry in rows.iterator(chunk_size=2000)
    ]


def admin_audit(
    *,
    project_id: int | None,
    actor: AbstractBaseUser | AnonymousUser | None,
    verb: str,
    obj: models.Model,
    fields: Mapping[str, Any] | None = None,
) -> AuditEntry | None:
    """One entry for a change made in the admin to an object of a project (a judge, a member,
    an item, an answer…): ``verb`` added / changed / deleted, the object, and for a change the
    fields changed with their values before and after (as text). Nothing without a project (the
    staff catalogue) or, for a change, without a changed field."""
    if project_id is None or (verb == "changed" and not fields):
        return None
    label = f"{obj._meta.verbose_name} {str(obj)[:120]!r}"
    names = f": {', '.join(fields)}" if fields else ""
    return audit_record(
        project=Project(pk=project_id),
        actor=actor,
        kind=AuditKind.ADMIN_CHANGED,
        summary=f"{verb.capitalize()} {label} in the admin{names}.",
        changes={
            "model": obj._meta.label,
            "object": obj.pk,
            "verb": verb,
            **({"fields": dict(fields)} if fields else {}),
        },
    )
