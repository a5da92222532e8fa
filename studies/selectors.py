"""Reads for researchers: projects a user can see, progress figures."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from annotation.models import Annotation, Assignment, Item
from projects.models import Membership, Project


def projects_for_user(user) -> QuerySet[Project]:
    """Projects where the user has any role (all projects for superusers), each annotated with
    the user's role as ``user_role``."""
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def memberships_for_user(user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("project").order_by("project__name")


def project_progress(project: Project) -> dict:
    """Items, places needed, answers given, and per-annotator counts; a fixed number of queries."""
    items = Item.objects.filter(project=project).aggregate(
        total=Count("id"),
        regular=Count("id", filter=Q(kind=Item.Kind.REGULAR)),
    )
    needed = items["regular"] * project.annotators_per_item
    submitted = Assignment.objects.filter(project=project, state=Assignment.State.SUBMITTED).count()
    complete_items = (
        Item.objects.filter(project=project, kind=Item.Kind.REGULAR)
        .annotate(done=Count("assignments", filter=Q(assignments__state=Assignment.State.SUBMITTED)))
        .filter(done__gte=project.annotators_per_item)
        .count()
    )
    per_annotator = list(
        Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
        .annotate(
            submitted=Count(
                "user__assignments",
                filter=Q(
                    user__assignments__project=project,
                    user__assignments__state=Assignment.State.SUBMITTED,
                ),
            ),
            reserved=Count(
                "user__assignments",
                filter=Q(
                    user__assignments__project=project,
                    user__assignments__state=Assignment.State.RESERVED,
                ),
            ),
        )
        .select_related("user")
        .order_by("user__username")
    )
    return {
        "items": items["total"],
        "regular_items": items["regular"],
        "complete_items": complete_items,
        "answers_needed": needed,
        "answers_submitted": submitted,
        "percent": round(100 * submitted / needed, 1) if needed else 0.0,
        "annotators": [
            {
                "username": m.user.username,
                "pseudonym": m.pseudonym,
                "submitted": m.submitted,
                "reserved": m.reserved,
            }
            for m in per_annotator
        ],
        "versions": Annotation.objects.filter(item__project=project).count(),
    }
