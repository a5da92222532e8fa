"""Pages about who works on a project: the members page (researchers) and invitation links.

Security: the members page and its actions require the researcher role in the project
(``project_for``: 404 to anyone else, as every researcher page). The invitation page needs no
login: the signed link is the credential (403 when tampered with, 410 when used, withdrawn or
expired). The logic is in projects/members.py; these views only read forms and show refusals.
"""

from __future__ import annotations

import csv
import io

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import Refusal
from core.spreadsheet import spreadsheet_safe
from core.wording import counted, indefinite
from projects import members
from projects.models import Invitation, Membership, invited_as, welcome_message
from projects.permissions import RESEARCH_ROLES, has_role, project_for

MODEL_BACKEND = "projects.auth.AnyCaseModelBackend"  # settings.AUTHENTICATION_BACKENDS


def invitation_url(request, invitation: Invitation) -> str:
    token = members.invitation_token(invitation=invitation)
    return request.build_absolute_uri(reverse("invitation", args=[token]))


def _members_page(request, project, *, status: int = 200, add_form: dict | None = None):
    invitations = [
        (invitation, invitation_url(request, invitation))
        for invitation in members.open_invitations(project=project)
    ]
    return render(
        request,
        "projects/members.html",
        {
            "project": project,
            "members": members.project_members(project=project),
            "removed_members": members.project_members(project=project, removed=True),
            "invitations": invitations,
            "roles": Membership.Role.choices,
            "add_form": add_form or {"role": Membership.Role.ANNOTATOR},
            "invitation_days": request.POST.get("expires_in_days") or None,
            "default_invitation_days": settings.CONCORD_INVITATION_DAYS,
            "max_invitation_days": members.MAX_INVITATION_DAYS,
            "mail_configured": members.mail_configured(),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_members(request, slug):
    """GET: the members page. POST: add an existing account by username."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if request.method == "POST":
        username = request.POST.get("username", "")
        role = request.POST.get("role", "")
        try:
            membership = members.member_add(
                project=project, username=username, role=role, by=request.user
            )
        except Refusal as refusal:
            messages.error(request, refusal.message)
            form = {"username": username, "role": role, "error": refusal.message}
            return _members_page(request, project, status=refusal.status, add_form=form)
        messages.success(
            request,
            f"{membership.user.username} is now a member "
            f"({membership.get_role_display().lower()}).",
        )
        return redirect("project-members", slug=project.slug)
    return _members_page(request, project)


def _membership(project, membership_id) -> Membership:
    return get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=membership_id
    )


@login_required
@require_POST
def member_role(request, slug, membership_id):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    membership = _membership(project, membership_id)
    try:
        membership = members.member_role_set(
            membership=membership, role=request.POST.get("role", ""), by=request.user
        )
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _members_page(request, project, status=refusal.status)
    messages.success(
        request,
        f"{membership.user.username} is now {indefinite(membership.get_role_display().lower())}.",
    )
    if not has_role(request.user, project, RESEARCH_ROLES):
        return redirect("home")  # demoted themselves
    return redirect("project-members", slug=project.slug)


@login_required
@require_POST
def member_remove(request, slug, membership_id):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    membership = _membership(project, membership_id)
    try:
        membership = members.member_remove(membership=membership, by=request.user)
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _members_page(request, project, status=refusal.status)
    messages.success(
        request,
        f"{membership.user.username} was removed from the project; everything they did is kept.",
    )
    if not has_role(request.user, project, RESEARCH_ROLES):
        return redirect("home")  # removed themselves
    return redirect("project-members", slug=project.slug)


@login_required
@require_POST
def invitation_create(request, slug):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    days, count = _whole(request.POST.get("expires_in_days")), _whole(request.POST.get("count"))
    try:
        emailed = request.POST.get("emails", "").strip()
        addresses = members.email_addresses(text=emailed) if emailed else None
        if addresses is not None:
            members.mail_required()
        created = members.invitations_create(
            project=project,
            role=request.POST.get("role", ""),
            created_by=request.user,
            count=1 if count is None else count,
            expires_in_days=days,
            note=request.POST.get("note", ""),
            notes=addresses,
        )
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _members_page(request, project, status=refusal.status)
    if addresses is not None:
        return _mailed(request, project, created)
    first = created[0]
    links = "Invitation link" if len(created) == 1 else f"{len(created)} invitation links"
    messages.success(
        request,
        f"{links} created ({first.get_role_display().lower()}, valid until "
        f"{first.expires_at:%Y-%m-%d %H:%M} UTC): copy them from the list below, or download "
        "them as CSV, and send them.",
    )
    return redirect(reverse("project-members", args=[project.slug]) + "#invitations")


def _mailed(request, project, created) -> HttpResponse:
    report = members.invitations_mail(
        project=project,
        invitations=created,
        links=[invitation_url(request, invitation) for invitation in created],
    )
    if report.sent:
        messages.success(request, f"{counted(report.sent, 'invitation')} e-mailed.")
    if report.failed:
        messages.error(
            request,
            f"The mail server refused {', '.join(report.failed[:5])}"
            + (" and others" if len(report.failed) > 5 else "")
            + ": their links are open below; copy them and send them yourself.",
        )
    return redirect(reverse("project-members", args=[project.slug]) + "#invitations")


def _whole(raw: str | None) -> int | None:
    """A form's whole number; blank: None; anything else: -1 (the service refuses it)."""
    raw = (raw or "").strip()
    try:
        return int(raw) if raw else None
    except ValueError:
        return -1


@login_required
@require_http_methods(["GET"])
def invitations_csv(request, slug):
    """The open invitation links as CSV (role, note, expires, link), for a mail merge."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["role", "note", "expires_at", "link"])
    for invitation in members.open_invitations(project=project):
        writer.writerow(
            [
                invitation.role,
                spreadsheet_safe(invitation.note),
                invitation.expires_at.isoformat(timespec="seconds"),
                invitation_url(request, invitation),
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-invitations.csv"'
    return response


@login_required
@require_POST
def invitation_revoke(request, slug, invitation_id):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    invitation = get_object_or_404(Invitation, project=project, pk=invitation_id)
    members.invitation_revoke(invitation=invitation, by=request.user)
    messages.success(request, "The invitation link was withdrawn.")
    return redirect(reverse("project-members", args=[project.slug]) + "#invitations")


TITLES = {
    "forged": gettext_lazy("This link is not valid"),
    "used": gettext_lazy("This invitation was already used"),
    "expired": gettext_lazy("This invitation has expired"),
    "revoked": gettext_lazy("This invitation was withdrawn"),
}


@require_http_methods(["GET", "POST"])
def invitation(request, token):
    """Open an invitation: create an account (username, password) and join the project."""
    try:
        invitation = members.invitation_for_token(token=token)
    except members.InvitationUnusable as refusal:
        return render(
            request,
            "registration/invitation_unusable.html",
            {"title": TITLES[refusal.reason], "message": refusal.message},
            status=refusal.status,
        )
    form = {"username": "", "email": "", "errors": {}}
    status = 200
    if request.method == "POST":
        form["username"] = request.POST.get("username", "")
        form["email"] = request.POST.get("email", "")
        password, again = request.POST.get("password1", ""), request.POST.get("password2", "")
        try:
            if password != again:
                raise Refusal(gettext("The two passwords differ."), field="password2")
            user = members.invitation_accept(
                token=token, username=form["username"], password=password, email=form["email"]
            )
        except members.InvitationUnusable as refusal:  # used by someone else meanwhile
            return render(
                request,
                "registration/invitation_unusable.html",
                {"title": TITLES[refusal.reason], "message": refusal.message},
                status=refusal.status,
            )
        except Refusal as refusal:
            form["errors"] = {refusal.field or "general": refusal.message}
            status = refusal.status
        else:
            login(request, user, backend=MODEL_BACKEND)
            messages.success(
                request,
                welcome_message(
                    role=invitation.role, username=user.username, project=invitation.project.name
                ),
            )
            return redirect("home")
    return render(
        request,
        "registration/invitation.html",
        {
            "invitation": invitation,
            "form": form,
            # ours, with the role in <strong>: a whole sentence per role and language
            "invited_as": mark_safe(invited_as(invitation.role)),  # noqa: S308
        },
        status=status,
    )
