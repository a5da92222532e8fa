"""Writes about projects and memberships."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projects.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def researcher_add(*, project: Project, user: User) -> Membership:
    """Make ``user`` a researcher of ``project`` (whoever creates a project in the admin owns it;
    without this a staff member who is not a superuser could not open what they created)."""
    membership, created = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": Membership.Role.RESEARCHER}
    )
    if not created and (
        membership.role != Membership.Role.RESEARCHER or membership.removed_at is not None
    ):
        membership.role = Membership.Role.RESEARCHER
        membership.removed_at = None
        membership.save(update_fields=["role", "removed_at"])
    return membership
