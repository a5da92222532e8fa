"""Members of a project and invitations to join it (writes, and the reads they need).

Researchers add existing accounts by username, change a member's role and remove members. A
removed member loses every access but keeps their work: the membership row stays with
``removed_at`` set (its pseudonym names their answers in exports and agreement), and adding them
again restores it. A project always keeps one researcher: removing or demoting the last one is
refused.

Invitations let someone without an account join: the link carries a signature
(``django.core.signing``, keyed by ``SECRET_KEY``) of the invitation's id and nonce, so it cannot
be forged (a tampered link is refused with 403); the row records whether it was used (single
use), revoked, and when it expires (``CONCORD_INVITATION_DAYS``, 7 by default).

Crowd workers' accounts (``prolific-…``/``mturk-…``) are made only by crowd entry: an invitation
cannot claim such a name, and they have no usable password.
"""

from __future__ import annotations

import re
import smtplib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, TypedDict

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core import mail, signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import Refusal
from projects.audit import AuditKind, audit_record
from projects.hooks import announce_annotator_left
from projects.models import Invitation, Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Role = Membership.Role
INVITATION_SALT = "concord.projects.invitation"
MAX_INVITATION_DAYS = 90
# Crowd entry (crowd/services.py) names worker accounts "<platform>-…"; the platforms are
# crowd.models.CrowdEntry.Platform (a test checks the two agree).
CROWD_USERNAME_PREFIXES = ("prolific-", "mturk-")


class InvitationUnusable(Refusal):
    """The invitation link cannot be used; ``reason`` is ``forged``, ``used``, ``expired`` or
    ``revoked`` (the page says which)."""

    def __init__(self, message: str, *, reason: str, code: str = "gone") -> None:
        super().__init__(message, code=code)
        self.reason = reason


def is_crowd_username(username: str) -> bool:
    return username.lower().startswith(CROWD_USERNAME_PREFIXES)


def _check_role(role: str) -> str:
    if role not in Role.values:
        raise Refusal(
            f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.", field="role"
        )
    return role


# --- reads ----------------------------------------------------------------------------------


def project_members(*, project: Project, removed: bool = False) -> QuerySet[Membership]:
    """Current members of ``project`` (or, with ``removed=True``, the removed ones), by role
    (researchers first) and username."""
    members = Membership.objects.filter(project=project, removed_at__isnull=not removed)
    return members.select_related("user").order_by("role", "user__username")


def account_username(username: str) -> str:
    """The account name ``username`` means: itself when an account has exactly it, else the one
    account whose name differs only in case (new accounts are unique ignoring case; an older pair
    that differs only in case keeps needing the exact name)."""
    users = get_user_model().objects
    if users.filter(username=username).exists():
        return username
    matches = list(users.filter(username__iexact=username).values_list("username", flat=True)[:2])
    return matches[0] if len(matches) == 1 else username


def member_for_username(*, project: Project, username: str) -> Membership:
    membership = (
        Membership.objects.current()
        .filter(project=project, user__username=username)
        .select_related("user")
        .first()
    )
    if membership is None:
        raise Refusal(f"{username!r} is not a member of this project.", code="not_found")
    return membership


def open_invitations(*, project: Project) -> QuerySet[Invitation]:
    return Invitation.objects.filter(
        project=project,
        used_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=timezone.now(),
    )


# --- members --------------------------------------------------------------------------------


def _lock_project(project: Project) -> None:
    # Role changes of one project take turns, so two researchers demoting each other at the
    # same moment cannot leave the project without one.
    # FOR NO KEY UPDATE: role changes still take turns, but a first submit's COMMIT (its foreign-key
    # check wants FOR KEY SHARE on the project row) is never held up by them (docs/architecture.md).
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk").first()


def _refuse_if_last_researcher(membership: Membership, *, action: str) -> None:
    if membership.role != Role.RESEARCHER:
        return
    others = (
        Membership.objects.current()
        .filter(project_id=membership.project_id, role=Role.RESEARCHER)
        .exclude(pk=membership.pk)
    )
    if not others.exists():
        raise Refusal(
            f"{membership.user.username} is the project's last researcher and cannot be "
            f"{action}: make another member a researcher first.",
            code="conflict",
            field="role" if action == "given another role" else "username",
        )


def _audit_member(membership: Membership, by: User | None, kind: str, summary: str, **changes):
    audit_record(
        project=membership.project,
        actor=by,
        kind=kind,
        summary=summary,
        changes={
            "username": membership.user.username,
            "pseudonym": membership.pseudonym,
            **changes,
        },
    )


def member_add(*, project: Project, username: str, role: str, by: User | None = None) -> Membership:
    """Make the existing account ``username`` a member with ``role``. A removed member comes
    back with the same pseudonym and history; a current member is refused (change their role).
    ``by``: who, for the project's audit log."""
    _check_role(role)
    username = (username or "").strip()
    if not username:
        raise Refusal("Give the username of an existing account.", field="username")
    user = (
        get_user_model().objects.filter(username=account_username(username), is_active=True).first()
    )
    if user is None:
        raise Refusal(
            f"No active account is named {username!r}; send an invitation link instead.",
            field="username",
        )
    if is_crowd_username(user.username):
        raise Refusal(
            "Crowd workers' accounts join only through their platform's link.", field="username"
        )
    with transaction.atomic():
        _lock_project(project)
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership is None:
            membership = Membership.objects.create(project=project, user=user, role=role)
            _audit_member(
                membership, by, AuditKind.MEMBER_ADDED, f"Added {username} as {role}.", role=role
            )
            return membership
        if membership.removed_at is None:
            raise Refusal(
                f"{username} is already a member ({membership.get_role_display().lower()}); "
                "change their role instead.",
                code="conflict",
                field="username",
            )
        membership.role = role
        membership.removed_at = None
        membership.save(update_fields=["role", "removed_at"])
        _audit_member(
            membership,
            by,
            AuditKind.MEMBER_ADDED,
            f"Added {username} again as {role} (removed before).",
            role=role,
        )
        return membership


class MemberEntry(TypedDict):
    """One member to add or to give a role: a study file's ``members`` entry."""

    username: str
    role: str


def creator_add(*, project: Project, user: User) -> None:
    """The creator of a new project (``projects.services.project_create``) is its researcher,
    unless they are a member already (a study file's ``members`` gave them their role)."""
    membership, added = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": Membership.Role.RESEARCHER}
    )
    if added:
        audit_record(
            project=project,
            actor=user,
            kind=AuditKind.MEMBER_ADDED,
            summary=f"Added {user.username} as researcher (the project's creator).",
            changes={
                "username": user.username,
                "pseudonym": membership.pseudonym,
                "role": membership.role,
            },
        )


def members_apply(*, project: Project, members: Sequence[MemberEntry], by: User | None) -> None:
    """Add each of ``members`` (existing accounts) or give a current member the role listed (a
    study file's ``members``: ``studies.study_files.study_apply``); a refusal names the entry
    (``members[2].role``). Call it in the caller's transaction: a refusal changes nothing."""
    current = {
        m.user.username: m
        for m in Membership.objects.current().filter(project=project).select_related("user")
    }
    for index, member in enumerate(members):
        try:
            if member["username"] in current:
                member_role_set(membership=current[member["username"]], role=member["role"], by=by)
            else:
                member_add(project=project, username=member["username"], role=member["role"], by=by)
        except Refusal as exc:
            raise Refusal(
                f"members[{index}].{exc.field or 'username'}: {exc.message} Nothing changed.",
                code=exc.code,
                field=f"members[{index}].{exc.field or 'username'}",
            ) from None


def member_role_set(*, membership: Membership, role: str, by: User | None = None) -> Membership:
    """Give a current member another role (the last researcher keeps theirs). ``by``: who, for
    the project's audit log."""
    _check_role(role)
    with transaction.atomic():
        _lock_project(membership.project)
        membership = Membership.objects.select_related("user").get(pk=membership.pk)
        if membership.removed_at is not None:
            raise Refusal("This member was removed; add them again instead.", code="not_found")
        if membership.role == role:
            return membership
        if role != Role.RESEARCHER:
            _refuse_if_last_researcher(membership, action="given another role")
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        if before == Role.ANNOTATOR:
            announce_annotator_left(
                project_id=membership.project_id, user_id=membership.user_id, now=timezone.now()
            )
        _audit_member(
            membership,
            by,
            AuditKind.MEMBER_ROLE_CHANGED,
            f"Changed the role of {membership.user.username} from {before} to {role}.",
            role={"before": before, "after": role},
        )
        return membership


def member_remove(*, membership: Membership, by: User | None = None) -> Membership:
    """Remove a member: no more access; assignments, answers and pseudonym stay. ``by``: who,
    for the project's audit log."""
    with transaction.atomic():
        _lock_project(membership.project)
        membership = Membership.objects.select_related("user").get(pk=membership.pk)
        if membership.removed_at is not None:
            return membership
        _refuse_if_last_researcher(membership, action="removed")
        membership.removed_at = timezone.now()
        membership.save(update_fields=["removed_at"])
        if membership.role == Role.ANNOTATOR:
            announce_annotator_left(
                project_id=membership.project_id,
                user_id=membership.user_id,
                now=membership.removed_at,
            )
        _audit_member(
            membership,
            by,
            AuditKind.MEMBER_REMOVED,
            f"Removed {membership.user.username} ({membership.role}).",
            role=membership.role,
        )
        return membership


# --- invitations ----------------------------------------------------------------------------


def invitation_create(
    *,
    project: Project,
    role: str,
    created_by: User | None,
    expires_in_days: int | None = None,
    note: str = "",
) -> Invitation:
    """One invitation link (``created_by``: who, also for the project's audit log)."""
    with transaction.atomic():
        invitation = _invitation_new(
            project=project,
            role=role,
            created_by=created_by,
            expires_in_days=expires_in_days,
            note=note,
        )
        _audit_invitations([invitation], created_by)
    return invitation


def _audit_invitations(invitations: list[Invitation], by: User | None) -> None:
    first = invitations[0]
    count = len(invitations)
    links = "an invitation link" if count == 1 else f"{count} invitation links"
    audit_record(
        project=first.project,
        actor=by,
        kind=AuditKind.INVITATIONS_CREATED,
        summary=f"Created {links} for the role {first.role}, expiring "
        f"{first.expires_at:%Y-%m-%d %H:%M} UTC.",
        changes={
            "count": count,
            "role": first.role,
            "ids": [i.pk for i in invitations][:MAX_INVITATIONS_AT_ONCE],
            "notes": [i.note for i in invitations][:MAX_INVITATIONS_AT_ONCE],
        },
    )


def _invitation_new(
    *,
    project: Project,
    role: str,
    created_by: User | None,
    expires_in_days: int | None,
    note: str,
) -> Invitation:
    _check_role(role)
    days = settings.CONCORD_INVITATION_DAYS if expires_in_days is None else expires_in_days
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_INVITATION_DAYS:
        raise Refusal(
            f"An invitation expires after 1 to {MAX_INVITATION_DAYS} days.",
            field="expires_in_days",
        )
    return Invitation.objects.create(
        project=project,
        role=role,
        created_by=created_by,
        note=(note or "").strip()[:200],
        expires_at=timezone.now() + timedelta(days=days),
    )


MAX_INVITATIONS_AT_ONCE = 500


def invitations_create(
    *,
    project: Project,
    role: str,
    created_by: User | None,
    count: int,
    expires_in_days: int | None = None,
    note: str = "",
    notes: list[str] | None = None,
) -> list[Invitation]:
    """``count`` single-use links at once (a crowd of invited annotators): the same role and
    expiry, each note numbered ("pilot 1", "pilot 2"…) so the researcher can tell them apart;
    with ``notes`` (e.g. the e-mail addresses the links go to), one link per note, so noted."""
    if notes is not None:
        count = len(notes) or -1
    if (
        not isinstance(count, int)
        or isinstance(count, bool)
        or not 1 <= count <= MAX_INVITATIONS_AT_ONCE
    ):
        raise Refusal(
            f"Create 1 to {MAX_INVITATIONS_AT_ONCE} invitation links at once.", field="count"
        )
    if notes is not None:
        labels = [text.strip()[:200] for text in notes]
    elif count == 1:
        labels = [note]
    else:
        labels = [_numbered(note, number) for number in range(1, count + 1)]
    with transaction.atomic():
        first = _invitation_new(
            project=project,
            role=role,
            created_by=created_by,
            expires_in_days=expires_in_days,
            note=labels[0],
        )
        rest = [
            Invitation(
                project=project,
                role=role,
                created_by=created_by,
                note=label,
                expires_at=first.expires_at,
            )
            for label in labels[1:]
        ]
        created = [first, *Invitation.objects.bulk_create(rest)]
        _audit_invitations(created, created_by)
    return created


def mail_configured() -> bool:
    """Whether e-mail leaves this server (an SMTP server is set, ``EMAIL_HOST``), rather than
    being printed on its console."""
    return settings.EMAIL_BACKEND != "django.core.mail.backends.console.EmailBackend"


def mail_required() -> None:
    """A ``Refusal`` unless e-mail leaves this server."""
    if not mail_configured():
        raise Refusal(
            "No mail server is configured (EMAIL_HOST): copy the links, or download them as "
            "CSV, and send them yourself.",
            field="emails",
        )


def email_addresses(*, text: str) -> list[str]:
    """The addresses in ``text`` (one per line, or separated by commas, semicolons or spaces),
    each once, in order; a ``Refusal`` naming the first that is not an address."""
    addresses = list(dict.fromkeys(a for a in re.split(r"[\s,;]+", text or "") if a))
    if len(addresses) > MAX_INVITATIONS_AT_ONCE:
        raise Refusal(
            f"E-mail at most {MAX_INVITATIONS_AT_ONCE} invitations at once.", field="emails"
        )
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            raise Refusal(f"{address[:80]!r} is not an e-mail address.", field="emails") from None
    return addresses


@dataclass
class InvitationMail:
    """What became of e-mailed invitations: how many were sent, and the addresses whose mail the
    server refused (their links stay open: copy them from the list)."""

    sent: int = 0
    failed: list[str] = field(default_factory=list)


def invitations_mail(
    *, project: Project, invitations: list[Invitation], links: list[str]
) -> InvitationMail:
    """Send each invitation's link to the address in its note (``invitations_create`` with
    ``notes``), over one connection to the mail server."""
    mail_required()
    report = InvitationMail()
    with mail.get_connection() as connection:
        for invitation, link in zip(invitations, links, strict=True):
            message = mail.EmailMessage(
                subject=f"Invitation to {project.name}",
                body=(
                    f"You are invited to join {project.name} on Concord as "
                    f"{invitation.get_role_display().lower()}.\n\nOpen this link to choose a "
                    f"username and password:\n{link}\n\nThe link works once and expires on "
                    f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC.\n"
                ),
                to=[invitation.note],
                connection=connection,
            )
            try:
                message.send()
            except (smtplib.SMTPException, OSError):
                report.failed.append(invitation.note)
            else:
                report.sent += 1
    return report


def _numbered(note: str, number: int) -> str:
    stem = (note or "").strip()[:190] or "invitation"
    return f"{stem} {number}"


def invitation_token(*, invitation: Invitation) -> str:
    """The signed part of the invitation's link (the same every time for one invitation)."""
    payload = {"i": invitation.pk, "n": invitation.nonce}
    return signing.Signer(salt=INVITATION_SALT).sign_object(payload)


def invitation_revoke(*, invitation: Invitation, by: User | None = None) -> Invitation:
    """Withdraw an unused invitation (``by``: who, for the project's audit log)."""
    if invitation.used_at is None and invitation.revoked_at is None:
        with transaction.atomic():
            invitation.revoked_at = timezone.now()
            invitation.save(update_fields=["revoked_at"])
            audit_record(
                project=invitation.project,
                actor=by,
                kind=AuditKind.INVITATION_REVOKED,
                summary=f"Withdrew invitation {invitation.pk} ({invitation.role}"
                + (f", {invitation.note}" if invitation.note else "")
                + ").",
                changes={"invitation": invitation.pk, "role": invitation.role},
            )
    return invitation


def _unusable_reason(invitation: Invitation) -> InvitationUnusable | None:
    if invitation.used_at is not None:
        return InvitationUnusable(
            gettext(
                "This invitation link has already been used to create an account. Log in with "
                "that account, or ask the project's researchers for a new link."
            ),
            reason="used",
        )
    if invitation.revoked_at is not None:
        return InvitationUnusable(
            gettext(
                "This invitation was withdrawn by the project's researchers. Ask them for a new "
                "link."
            ),
            reason="revoked",
        )
    if invitation.expires_at <= timezone.now():
        return InvitationUnusable(
            gettext(
                "This invitation expired on %(when)s UTC. Ask the project's researchers for a "
                "new link."
            )
            % {"when": f"{invitation.expires_at:%Y-%m-%d %H:%M}"},
            reason="expired",
        )
    return None


def invitation_for_token(*, token: str, for_update: bool = False) -> Invitation:
    """The usable invitation that ``token`` names; :class:`InvitationUnusable` otherwise (403
    for a link not signed by this server, 410 for one used, withdrawn or expired)."""
    try:
        data = signing.Signer(salt=INVITATION_SALT).unsign_object(token)
        pk, nonce = int(data["i"]), str(data["n"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise InvitationUnusable(
            gettext(
                "This invitation link is not valid: it was changed or cut short. Open the link "
                "exactly as you received it."
            ),
            reason="forged",
            code="forbidden",
        ) from None
    invitations = Invitation.objects.select_related("project")
    if for_update:
        invitations = invitations.select_for_update(of=("self",))
    invitation = invitations.filter(pk=pk, nonce=nonce).first()
    if invitation is None:
        raise InvitationUnusable(gettext("This invitation no longer exists."), reason="revoked")
    refusal = _unusable_reason(invitation)
    if refusal is not None:
        raise refusal
    return invitation


def _check_new_username(username: str) -> str:
    User = get_user_model()
    username = (username or "").strip()
    if not username:
        raise Refusal(gettext("Choose a username."), field="username")
    if len(username) > User._meta.get_field("username").max_length:
        raise Refusal(gettext("A username has at most 150 characters."), field="username")
    try:
        User.username_validator(username)
    except ValidationError as error:
        raise Refusal(" ".join(error.messages), field="username") from None
    if is_crowd_username(username):
        raise Refusal(
            gettext(
                "Usernames starting with %(prefixes)s are reserved for crowd workers; choose another."
            )
            % {"prefixes": " / ".join(CROWD_USERNAME_PREFIXES)},
            field="username",
        )
    if User.objects.filter(username__iexact=username).exists():
        raise Refusal(
            gettext(
                "The username %(username)s is taken; choose another (or log in if it is yours)."
            )
            % {"username": repr(username)},
            field="username",
        )
    return username


def invitation_accept(*, token: str, username: str, password: str, email: str = "") -> User:
    """Create the account ``username`` and make it a member with the invitation's role, once."""
    User = get_user_model()
    username = _check_new_username(username)
    email = (email or "").strip()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise Refusal(
                gettext("Enter a valid e-mail address, or leave it empty."), field="email"
            ) from None
    try:
        password_validation.validate_password(password, user=User(username=username, email=email))
    except ValidationError as error:
        raise Refusal(" ".join(error.messages), field="password") from None
    with transaction.atomic():
        invitation = invitation_for_token(token=token, for_update=True)
        if User.objects.filter(username__iexact=username).exists():  # taken meanwhile
            _check_new_username(username)
        user = User.objects.create_user(username=username, email=email, password=password)
        Membership.objects.create(project=invitation.project, user=user, role=invitation.role)
        invitation.used_at = timezone.now()
        invitation.used_by = user
        invitation.save(update_fields=["used_at", "used_by"])
        audit_record(
            project=invitation.project,
            actor=user,
            kind=AuditKind.INVITATION_ACCEPTED,
            summary=f"{username} accepted invitation {invitation.pk} and joined as "
            f"{invitation.role}.",
            changes={"invitation": invitation.pk, "username": username, "role": invitation.role},
        )
    return user
