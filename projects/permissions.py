"""Who may do what in a project: the one place where roles are checked.

Every view that touches a project goes through ``project_for`` (pages and API alike). A user who
is not a member with a suitable role gets 404, not 403, so project slugs do not leak. Superusers
act as researchers everywhere. A removed member (``Membership.removed_at``) holds no role.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework.permissions import BasePermission

from projects.models import Membership, Project

Role = Membership.Role
RESEARCH_ROLES = (Role.RESEARCHER,)
REVIEW_ROLES = (Role.RESEARCHER, Role.REVIEWER)
ANNOTATE_ROLES = (Role.ANNOTATOR,)


def membership_for(user, project: Project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.current().filter(project=project, user=user).first()


def has_role(user, project: Project, roles: tuple[str, ...]) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_superuser and Role.RESEARCHER in roles:
        return True
    return Membership.objects.current().filter(project=project, user=user, role__in=roles).exists()


def can_create_projects(user) -> bool:
    """Staff, and users given the ``projects.add_project`` permission, create studies."""
    return bool(user.is_authenticated and (user.is_staff or user.has_perm("projects.add_project")))


NOT_A_MEMBER = (
    "You are not a member of this project, or this page is not open to your role in it (or "
    "there is no such project). Ask its researchers for access, or go back to your projects."
)


def project_for(user, slug: str, roles: tuple[str, ...]) -> Project:
    """The project ``slug`` if ``user`` holds one of ``roles`` in it; otherwise 404."""
    # One message for "no such project" and "not yours": it helps a lost annotator without
    # telling an outsider which project names exist.
    if not user.is_authenticated:
        raise Http404(NOT_A_MEMBER)
    project = Project.objects.filter(slug=slug).first()
    if project is None and slug != slug.lower():
        # A new project's slug is stored in lower case ("MyStudy" becomes "mystudy"): the
        # address the researcher typed, or a client that kept the slug it sent, reaches it.
        project = Project.objects.filter(slug=slug.lower()).first()
    if project is None or not has_role(user, project, roles):
        raise Http404(NOT_A_MEMBER)
    return project


class IsProjectResearcher(BasePermission):
    """DRF permission for views with a ``slug`` URL kwarg: researchers of that project only."""

    def has_permission(self, request, view) -> bool:
        if not request.user.is_authenticated:
            return False  # 401/403 from DRF, before any project lookup
        view.project = project_for(request.user, view.kwargs["slug"], RESEARCH_ROLES)
        return True


def annotator_membership_for(user, slug: str) -> Membership:
    """The user's current annotator membership of the project ``slug`` (the project loaded with
    it) if they annotate there; otherwise 404, as :func:`project_for` with ``ANNOTATE_ROLES``.
    One query where ``project_for`` and the membership the dealing needs cost three: every next
    of every annotator goes through it (issue 31)."""
    if not user.is_authenticated:
        raise Http404(NOT_A_MEMBER)
    memberships = Membership.objects.current().select_related("project")
    mine = memberships.filter(user=user, role__in=ANNOTATE_ROLES)
    membership = mine.filter(project__slug=slug).first()
    if (
        membership is None
        and slug != slug.lower()
        and not Project.objects.filter(slug=slug).exists()
    ):  # a new project's slug is stored in lower case: as project_for, the address typed
        membership = mine.filter(project__slug=slug.lower()).first()
    if membership is None:
        raise Http404(NOT_A_MEMBER)
    return membership


class IsProjectAnnotator(BasePermission):
    """DRF permission for views with a ``slug`` URL kwarg: annotators of that project only. The
    view gets ``project`` and the caller's ``membership`` in it."""

    def has_permission(self, request, view) -> bool:
        if not request.user.is_authenticated:
            return False
        view.membership = annotator_membership_for(request.user, view.kwargs["slug"])
        view.project = view.membership.project
        return True
