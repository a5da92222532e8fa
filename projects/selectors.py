"""Reads about projects and memberships."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from projects.models import Membership, Project

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
