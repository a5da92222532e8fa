"""Projects and who works on them."""

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import pgettext_lazy

from projects.crowd import validate_crowd_settings


class Project(models.Model):
    """One annotation study: a task type, its configuration, guidelines and items."""

    class Status(models.TextChoices):
        DRAFT = "draft", pgettext_lazy("project status", "Draft")
        ACTIVE = "active", pgettext_lazy("project status", "Active")
        PAUSED = "paused", pgettext_lazy("project status", "Paused")
        ARCHIVED = "archived", pgettext_lazy("project status", "Archived")

    slug = models.SlugField(unique=True, max_length=80)
    name = models.CharField(max_length=200)
    task_type = models.CharField(
        max_length=50, help_text="Key of a registered task type, e.g. citation_recovery."
    )
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="Task-type settings (masking mode, seed, labels, criteria…); validated by the task type.",
    )
    guidelines = models.TextField(blank=True, help_text="Markdown shown to annotators.")
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    crowd = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_crowd_settings],
        help_text="Crowd workflow: batches, control items, qualification, platforms "
        "(see projects/crowd.py; {} switches it all off).",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    settings_version = models.PositiveIntegerField(
        default=1,
        db_default=1,
        editable=False,
        help_text="The number of the guidelines and task settings in force (ProjectSettings"
        "Version); every answer records the one it was made under.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class ProjectSettingsVersion(models.Model):
    """One version of what annotators work under: the guidelines, the task type's config and the
    crowd settings, as they were from ``created_at`` until the next version. Written by
    ``projects.services.settings_version_record`` whenever a change moves them (study files, the
    settings page, the API, the admin); never changed afterwards. A project that was never
    changed has no rows and is at version 1; its first change records version 1 (the settings
    before) and version 2."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="settings_versions")
    number = models.PositiveIntegerField()
    guidelines = models.TextField(blank=True)
    config = models.JSONField(default=dict, blank=True)
    crowd = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(
        max_length=40, blank=True, help_text="Where the change was made (study file, admin…)."
    )

    class Meta:
        ordering = ["project", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "number"], name="project_settings_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.project.slug} settings v{self.number}"


def _new_pseudonym() -> str:
    return "ann-" + secrets.token_hex(5)


ORDER_SEED_BITS = 32


def new_order_seed() -> int:
    """A member's seed for their item order and sides (``annotation.ordering``)."""
    return secrets.randbits(ORDER_SEED_BITS)


class MembershipQuerySet(models.QuerySet):
    def current(self) -> "MembershipQuerySet":
        """Memberships that give access: those a researcher has not removed."""
        return self.filter(removed_at__isnull=True)


class Membership(models.Model):
    """A user's role in one project. Annotators appear in exports only by ``pseudonym``.

    ``qualification`` is the single source of truth for quality control: "disqualified" members
    get no more items and their answers are excluded from agreement by default (kept, never
    deleted; a researcher can reinstate them).

    A researcher removing a member sets ``removed_at`` instead of deleting the row: the member
    loses every access (``current()`` memberships only grant it), while their assignments and
    answers stay, still named by the same pseudonym in exports and agreement. Adding them again
    clears ``removed_at``."""

    class Role(models.TextChoices):
        RESEARCHER = "researcher", pgettext_lazy("role", "Researcher")
        REVIEWER = "reviewer", pgettext_lazy("role", "Reviewer")
        ANNOTATOR = "annotator", pgettext_lazy("role", "Annotator")

    class Qualification(models.TextChoices):
        NOT_REQUIRED = "not_required", "Not required"
        PENDING = "pending", "Pending"
        QUALIFIED = "qualified", "Qualified"
        DISQUALIFIED = "disqualified", "Disqualified"

    class QualificationReason(models.TextChoices):
        QUALIFICATION_PASSED = "qualification_passed", "Passed the qualification round"
        QUALIFICATION_RETRY = "qualification_retry", "Failed a round; another round is open"
        QUALIFICATION_FAILED = "qualification_failed", "Failed the qualification"
        CONTROL_ACCURACY = "control_accuracy", "Accuracy on control items below the threshold"
        RESEARCHER = "researcher", "Decided by a researcher"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.ANNOTATOR)
    qualification = models.CharField(
        max_length=14, choices=Qualification.choices, default=Qualification.NOT_REQUIRED
    )
    qualification_reason = models.CharField(
        max_length=24,
        choices=QualificationReason.choices,
        blank=True,
        default="",
        help_text="Why the qualification state last changed.",
    )
    qualification_by_researcher = models.BooleanField(
        default=False,
        help_text="Set by hand: automatic quality control leaves this annotator's state alone.",
    )
    qualification_changed_at = models.DateTimeField(null=True, blank=True)
    feedback = models.TextField(blank=True, help_text="Shown to the annotator on their page.")
    pseudonym = models.CharField(max_length=20, unique=True, default=_new_pseudonym, editable=False)
    order_seed = models.PositiveBigIntegerField(
        default=new_order_seed,
        db_default=0,  # rows written outside Django (bulk SQL) share seed 0
        editable=False,
        help_text="Seeds this member's item order (crowd assignment_strategy random) and which "
        "side is shown first (counterbalancing): their order is reproducible from it.",
    )
    language = models.CharField(
        max_length=16,
        blank=True,
        default="",
        help_text="The language of this member's annotation pages (one of settings.LANGUAGES); "
        "empty: their browser's.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a researcher removed this member: no access any more, all work kept.",
    )

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.project.slug}"


# A role inside a sentence, whole sentences so that each language writes it its own way: English
# with its article and in lower case, German with the noun capitalised (never ``.lower()`` a
# role label: German nouns keep their capital).
_YOUR_ROLE = {
    Membership.Role.RESEARCHER: pgettext_lazy("your role", "you are a researcher"),
    Membership.Role.REVIEWER: pgettext_lazy("your role", "you are a reviewer"),
    Membership.Role.ANNOTATOR: pgettext_lazy("your role", "you are an annotator"),
}
_INVITED = {
    Membership.Role.RESEARCHER: pgettext_lazy(
        "invitation", "You are invited as a <strong>researcher</strong>."
    ),
    Membership.Role.REVIEWER: pgettext_lazy(
        "invitation", "You are invited as a <strong>reviewer</strong>."
    ),
    Membership.Role.ANNOTATOR: pgettext_lazy(
        "invitation", "You are invited as an <strong>annotator</strong>."
    ),
}
_WELCOME = {
    Membership.Role.RESEARCHER: pgettext_lazy(
        "welcome", "Welcome, %(username)s: you are now a researcher of %(project)s."
    ),
    Membership.Role.REVIEWER: pgettext_lazy(
        "welcome", "Welcome, %(username)s: you are now a reviewer of %(project)s."
    ),
    Membership.Role.ANNOTATOR: pgettext_lazy(
        "welcome", "Welcome, %(username)s: you are now an annotator of %(project)s."
    ),
}


def your_role(role: str) -> str:
    """ "you are an annotator", in the current language."""
    return str(_YOUR_ROLE.get(role, role))


def invited_as(role: str) -> str:
    """ "You are invited as an <strong>annotator</strong>.", in the current language (HTML: the
    role in bold; the text is ours, never a user's)."""
    return str(_INVITED[role])


def welcome_message(*, role: str, username: str, project: str) -> str:
    """The greeting after an invitation is accepted, in the current language."""
    return str(_WELCOME[role]) % {"username": username, "project": project}


def _new_invitation_nonce() -> str:
    return secrets.token_urlsafe(12)


class Invitation(models.Model):
    """A link that lets one person create an account and join ``project`` with ``role``.

    The link carries a signature (``django.core.signing``, projects/members.py) of this row's id
    and ``nonce``: it cannot be forged or pointed at another invitation. The row holds what a
    signature cannot: whether it was used (single use), revoked, and when it expires."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(
        max_length=12, choices=Membership.Role.choices, default=Membership.Role.ANNOTATOR
    )
    nonce = models.CharField(max_length=32, default=_new_invitation_nonce, editable=False)
    note = models.CharField(
        max_length=200, blank=True, help_text="For the researchers: whom the link was sent to."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="invitations_used",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invitation to {self.project.slug} as {self.role}"


class AuditEntry(models.Model):
    """One change of a project, for its researchers and its replication bundle: who (``actor``;
    none: the system, a worker or a command), when, what kind (``projects.audit.AuditKind``), a
    sentence, and for settings the values before and after (``changes``). Written by
    ``projects.audit.audit_record`` in the transaction of the change it records; never changed
    afterwards."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=32)
    summary = models.CharField(max_length=500)
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Newest first by id (ids grow with time): the page's keyset is the last id shown.
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["project", "created_at"], name="audit_project_time_idx"),
            models.Index(fields=["project", "kind", "-id"], name="audit_project_kind_idx"),
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.project.slug} · {self.kind} · {self.summary[:60]}"
