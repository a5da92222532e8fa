"""Crowd pages: platform entry links, the way back to the platform, the researcher's quality view,
the platform actions and the payment export (review of disagreements serves every project:
``annotation.review_views``).

Security, per view, in the docstrings. Entry views need no login (workers arrive from the
platform) but honour only links whose signature covers this project, platform and study
(``crowd.services``). Researcher pages use ``project_for`` with the researcher role (404 to
anyone else).
"""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_http_methods

from annotation import quality, review
from annotation.crowd_session import crowd_context, set_crowd_context
from annotation.models import Batch
from core.errors import Refusal
from core.middleware import supported_language
from crowd import actions, platforms, selectors, services
from crowd.models import CrowdEntry
from crowd.quality_figures import quality_figures_ensure
from projects.crowd import PROLIFIC_SUBMISSIONS_URL, crowd_settings
from projects.models import Membership, Project
from projects.permissions import ANNOTATE_ROLES, RESEARCH_ROLES, project_for

Platform = CrowdEntry.Platform
MTURK_FRAME_ANCESTORS = (
    "frame-ancestors https://worker.mturk.com https://workersandbox.mturk.com https://www.mturk.com"
)


def _refused(request, exc: services.EntryRefused, *, frameable: bool = False) -> HttpResponse:
    response = render(request, "crowd/refused.html", {"message": exc.message}, status=exc.status)
    if frameable:
        response["Content-Security-Policy"] = MTURK_FRAME_ANCESTORS
    return response


def _keep_language(request, url: str) -> str:
    """``url`` with the crowd link's ``?lang=``, for a page opened in a new tab (the HIT's
    iframe has its own cookies, so the session's choice does not travel)."""
    language = supported_language(request.GET.get("lang", ""))
    return f"{url}?{urlencode({'lang': language})}" if language else url


def _project_or_refuse(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise services.EntryRefused(gettext("This study does not exist."), code="not_found")
    return project


def _log_in(request, entry: CrowdEntry) -> None:
    login(request, entry.user, backend="projects.auth.AnyCaseModelBackend")
    set_crowd_context(
        request, entry.project, platform=entry.platform, ref=entry.batch_ref, entry_id=entry.pk
    )


@require_GET
def prolific_entry(request, slug):
    """Prolific study link: ``?sig=…&STUDY_ID=…&PROLIFIC_PID=…&SESSION_ID=…``.

    Security: no login needed. Refused (403) unless ``sig`` signs this project, "prolific" and
    STUDY_ID; ids must match ``[A-Za-z0-9_-]{1,64}``; a session id belongs to the first worker id
    and study that used it and a worker has one session per study (``services.worker_enter``).
    The worker is then logged in to their password-less account, which exists for this project
    and study only (the same PROLIFIC_PID in another study is another account), and sent to the
    annotation page."""
    try:
        project = _project_or_refuse(slug)
        study = services.check_study(study=request.GET.get("STUDY_ID", ""))
        services.verify_link(
            project=project,
            platform=Platform.PROLIFIC,
            study=study,
            signature=request.GET.get("sig", ""),
        )
        entry = services.worker_enter(
            project=project,
            platform=Platform.PROLIFIC,
            worker_id=request.GET.get("PROLIFIC_PID", ""),
            study_id=study,
            session_id=request.GET.get("SESSION_ID", ""),
        )
    except services.EntryRefused as exc:
        return _refused(request, exc)
    _log_in(request, entry)
    return redirect("annotate", slug=project.slug)


@xframe_options_exempt
@require_GET
def mturk_entry(request, slug):
    """MTurk ExternalQuestion page, shown inside the HIT's iframe: ``?study=…&sig=…`` plus what
    MTurk appends (``assignmentId``, ``hitId``, ``workerId``, ``turkSubmitTo``).

    Security: framable by MTurk's domains only (CSP ``frame-ancestors``; no X-Frame-Options). The
    signature must cover this project, "mturk" and the study (403 otherwise). In preview
    (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``) it shows the instructions and creates nothing.
    Otherwise it binds the assignment to the worker id (``services.worker_enter``: one
    assignment per worker and HIT, no new one while another HIT of the worker's is in progress;
    a new one closes the earlier sessions, whose work the new one cannot reach) and offers a
    signed, short-lived link that opens the task in a new tab (cookies are third-party inside
    the iframe) and the form that posts the completion code back to MTurk with the assignment
    id, to the sandbox or production URL from the project's settings (never ``turkSubmitTo``).
    Worker ids are not verified with MTurk: see the threat model in ``crowd.services``."""
    try:
        project = _project_or_refuse(slug)
        study = services.check_study(study=request.GET.get("study", ""))
        services.verify_link(
            project=project,
            platform=Platform.MTURK,
            study=study,
            signature=request.GET.get("sig", ""),
        )
        crowd = crowd_settings(project)
        assignment_id = request.GET.get("assignmentId", "")
        context = {"project": project, "crowd": crowd, "preview": True}
        if assignment_id and assignment_id != services.MTURK_PREVIEW_ID:
            entry = services.worker_enter(
                project=project,
                platform=Platform.MTURK,
                worker_id=request.GET.get("workerId", ""),
                study_id=study,
                session_id=assignment_id,
                hit_id=request.GET.get("hitId", ""),
            )
            context.update(
                preview=False,
                entry=entry,
                start_url=_keep_language(
                    request, reverse("crowd-start", args=[services.start_token(entry=entry)])
                ),
                submit_url=crowd.mturk_submit_url,
            )
    except services.EntryRefused as exc:
        return _refused(request, exc, frameable=True)
    response = render(request, "crowd/mturk.html", context)
    response["Content-Security-Policy"] = MTURK_FRAME_ANCESTORS
    return response


@require_GET
def crowd_start(request, token):
    """Open the task of an MTurk assignment in a top-level window.

    Security: the token is signed (``START_SALT``) and expires after a day; it names one crowd
    entry, whose password-less worker is logged in. A tampered or expired token is refused, and
    so is the token of a session closed by a newer one. The login reaches only that session's
    work (``crowd.selectors.in_current_session``)."""
    try:
        entry = services.entry_from_token(token=token)
    except services.EntryRefused as exc:
        return _refused(request, exc)
    _log_in(request, entry)
    return redirect("annotate", slug=entry.project.slug)


@login_required
@require_GET
def crowd_finish(request, slug):
    """The way back to the platform once the worker's batch is finished.

    Security: login required and the annotator role in the project (404 otherwise). Prolific
    sessions are redirected to Prolific's completion URL with the study's completion code (or its
    screened-out code for a worker stopped by quality control, when the project has one); others
    see their completion code. A stopped worker without a screened-out code is told the
    platform's own way back (return the submission on Prolific, Return the HIT on MTurk). Before
    the batch is finished it sends them back to work."""
    project = project_for(request.user, slug, ANNOTATE_ROLES)
    crowd = crowd_settings(project)
    session = crowd_context(request, project) or {}
    batches = Batch.objects.filter(
        project=project, annotator=request.user, kind=Batch.Kind.MAIN, state=Batch.State.FINISHED
    )
    if session.get("ref"):
        batches = batches.filter(external_ref=session["ref"])
    batch = batches.order_by("-number").first()
    membership = Membership.objects.get(project=project, user=request.user)
    stopped = membership.qualification == Membership.Qualification.DISQUALIFIED
    prolific = session.get("platform") == Platform.PROLIFIC
    if batch is not None and prolific and crowd.prolific_completion_code:
        return redirect(crowd.prolific_complete_url())
    if batch is None and stopped and prolific and crowd.prolific_screened_out_code:
        return redirect(crowd.prolific_complete_url(screened_out=True))
    if batch is None and not stopped:
        return redirect("annotate", slug=project.slug)
    return render(
        request,
        "crowd/finish.html",
        {
            "project": project,
            "batch": batch,
            "stopped": stopped,
            "platform": session.get("platform", ""),
            "prolific_submissions_url": PROLIFIC_SUBMISSIONS_URL,
        },
    )


# --- researchers -----------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def quality_page(request, slug):
    """Quality control for researchers: each annotator's qualification state, accuracy on
    controls, qualification rounds, answers and active time; qualify, disqualify or hand back to
    the automatic rules; feedback the annotator sees; signed entry links for Prolific and MTurk.

    Security: researcher role in the project (404 otherwise); POSTs are CSRF-protected and act
    only on memberships of this project (404 for others)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if request.method == "POST":
        chosen = request.POST.get("membership", "")
        if not chosen.isdecimal():  # a tampered form: no such annotator here
            raise Http404("No such annotator in this project.")
        membership = get_object_or_404(
            Membership, project=project, pk=int(chosen), role=Membership.Role.ANNOTATOR
        )
        action = request.POST.get("action")
        if action == "feedback":
            # A Refusal (feedback too long) is a 400 as text (core.middleware.RefusalMiddleware).
            quality.feedback_set(
                membership=membership, feedback=request.POST.get("feedback", ""), by=request.user
            )
            messages.success(request, f"Feedback for {membership.user.username} saved.")
        elif action in quality.DECISIONS:
            membership.project = project
            quality.qualification_decide(membership=membership, decision=action, by=request.user)
            messages.success(
                request,
                f"{membership.user.username} is now {membership.get_qualification_display().lower()}.",
            )
        else:
            messages.error(request, "Unknown action.")
        return redirect("crowd-quality", slug=project.slug)

    link = None
    platform = request.GET.get("platform")
    if platform in Platform.values and request.GET.get("study"):
        try:
            url = services.entry_link(
                base_url=request.build_absolute_uri("/"),
                project=project,
                platform=platform,
                study=request.GET["study"],
            )
        except services.EntryRefused as exc:
            messages.error(request, exc.message)
        else:
            link = {"platform": platform, "url": url}
            if platform == Platform.MTURK:
                link["xml"] = services.mturk_external_question(link=url)
    figures = quality_figures_ensure(project=project)
    return render(
        request,
        "crowd/quality.html",
        {
            "project": project,
            "overview": selectors.quality_overview(project=project, answers=figures.figures),
            "figures": figures,
            "link": link,
            "platforms": Platform.choices,
            "disputed": _disputed_count(project),
        },
    )


QUALITY_DISPUTED_SHOWN = 100


def _disputed_count(project) -> str:
    """Disagreements left to review, counted up to ``QUALITY_DISPUTED_SHOWN`` ("100+" beyond):
    the count walks the items only as far as that."""
    page = review.disputed_page(project=project, unresolved_only=True, limit=QUALITY_DISPUTED_SHOWN)
    return f"{len(page.rows)}+" if page.next_after else str(len(page.rows))


ACTION_FIELDS = ("platform", "kind", "amount", "reason_code", "message")


@login_required
@require_http_methods(["GET", "POST"])
def platform_actions_page(request, slug):
    """Approve, reject, request returns and pay bonuses on Prolific or MTurk from the
    quality-control results: a preview of what would be sent to whom (``step=preview``, sends
    nothing), then ``step=confirm`` records the actions in the ledger and queues them; below, the
    ledger, where an action left ``unknown`` is reconciled (``step=reconcile``).

    Security: researcher role in the project (404 otherwise); POST-only actions, CSRF-protected;
    the platform keys and URLs are the server's (staff), never the researcher's; the ledger and
    plan name only this project's sessions."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    form = {name: request.POST.get(name, "") for name in ACTION_FIELDS}
    plan, error, status = None, None, 200
    if request.method == "POST":
        step = request.POST.get("step")
        try:
            if step == "reconcile":
                action = actions.action_reconcile(
                    project=project,
                    action_id=_int(request.POST.get("action")),
                    state=request.POST.get("as", ""),
                    by=request.user,
                )
                messages.success(request, f"Action {action.pk} recorded as {action.state}.")
                return redirect("crowd-actions", slug=project.slug)
            choice = actions.action_choice(project=project, **form)
            if step == "confirm":
                plan = actions.actions_record(project=project, choice=choice, user=request.user)
                messages.success(
                    request,
                    f"{len(plan.to_send)} queued, {len(plan.skipped)} left alone (see below).",
                )
                return redirect("crowd-actions", slug=project.slug)
            plan = actions.action_plan(project=project, choice=choice)
        except Refusal as exc:
            error, status = exc, exc.status
    return render(
        request,
        "crowd/actions.html",
        {
            "project": project,
            "form": form,
            "plan": plan,
            "error": error,
            "status_words": actions.STATUS_WORDS,
            "ledger": selectors.platform_actions(project=project),
            "platforms": Platform.choices,
            "kinds": actions.Kind.choices,
            "categories": platforms.PROLIFIC_REJECTION_CATEGORIES,
            "crowd": crowd_settings(project),
        },
        status=status,
    )


def _int(value) -> int:
    if not str(value or "").isdecimal():
        raise actions.ActionRefused("No such action in this project.", code="not_found")
    return int(value)


@login_required
@require_GET
def payments_csv(request, slug):
    """Who finished which batch, with completion codes, active time, whether they passed
    quality control and what they earn (reward, bonus, total in the project's currency): a CSV
    for paying workers; ``?format=prolific-bonus`` gives Prolific's bulk-bonus lines.

    Security: researcher role in the project (404 otherwise); it names platform worker ids."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    buffer = io.StringIO()
    if request.GET.get("format") == "prolific-bonus":
        # Prolific's bulk bonus box takes "participant id,amount" lines, without a header.
        writer = csv.DictWriter(buffer, fieldnames=selectors.PROLIFIC_BONUS_COLUMNS)
        writer.writerows(selectors.prolific_bonus_rows(project=project))
        name = f"{project.slug}-prolific-bonuses.csv"
    else:
        writer = csv.DictWriter(buffer, fieldnames=selectors.PAYMENT_COLUMNS)
        writer.writeheader()
        writer.writerows(selectors.payment_rows(project=project))
        name = f"{project.slug}-payments.csv"
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
