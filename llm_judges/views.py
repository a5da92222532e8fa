"""Researcher pages for judges: start runs, watch their progress, cancel, pre-selection option.

Security: every view requires login and the researcher role in the project (``project_for``:
404 to anyone else, so slugs do not leak). Pages show judge replies and errors, never gold; run
ids are looked up inside the project, so a researcher cannot open another project's run. Judges
themselves are configured in the admin (staff only), because a judge names an endpoint that
workers call and the environment variable holding its key.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.models import Item
from llm_judges import selectors, services
from llm_judges.forms import PreselectionForm, PreviewForm, StartRunForm
from projects.permissions import RESEARCH_ROLES, project_for


def _groups(project) -> list[str]:
    return list(
        Item.objects.filter(project=project)
        .exclude(group="")
        .order_by("group")
        .values_list("group", flat=True)
        .distinct()
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_judges(request, slug):
    """Start a run, cancel one, switch the pre-selection; list runs with progress bars."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    judges = selectors.judges_for_project(project=project)
    groups = _groups(project)
    start_form = StartRunForm(judges=judges, groups=groups)
    preview_form = PreviewForm(judges=judges)
    estimate = preview = None
    status = selectors.preselection_status(project=project)
    preselection = status["preselection"]
    pre_form = PreselectionForm(
        judges=judges, initial={"judge": preselection.judge_id if preselection else None}
    )
    if request.method == "POST":
        action = request.POST.get("action")
        if action in ("start", "estimate"):
            start_form = StartRunForm(request.POST, judges=judges, groups=groups)
            if start_form.is_valid():
                estimate, started = _start_or_estimate(request, project, start_form, action)
                if started:
                    return redirect("project-judges", slug=slug)
        elif action == "preview":
            preview_form = PreviewForm(request.POST, judges=judges)
            if preview_form.is_valid():
                preview = _preview(request, project, preview_form)
        elif action == "cancel":
            run = selectors.run_for_project(project=project, run_id=_int(request.POST.get("run")))
            if run is None:
                raise Http404("No such run.")
            if services.judge_run_cancel(run=run):
                messages.success(request, f"Run {run.pk} cancelled.")
            return redirect("project-judges", slug=slug)
        elif action == "preselection":
            pre_form = PreselectionForm(request.POST, judges=judges)
            if pre_form.is_valid():
                _switch_preselection(request, project, pre_form.cleaned_data["judge"])
                return redirect("project-judges", slug=slug)
    runs = selectors.runs_for_project(project=project)
    return render(
        request,
        "llm_judges/project_judges.html",
        {
            "project": project,
            "judges": judges,
            "item_count": Item.objects.filter(project=project).count(),
            "start_form": start_form,
            "pre_form": pre_form,
            "preview_form": preview_form,
            "preview": preview,
            "estimate": estimate,
            "preselection": preselection,
            "preselection_reason": status["reason"],
            "runs": [selectors.progress_of(run=run) for run in runs],
        },
    )


def _start_or_estimate(request, project, start_form, action: str):
    """``(estimate, started)``: the cost estimate, or whether a run started (errors become
    messages on the page)."""
    data = start_form.cleaned_data
    try:
        if action == "estimate":
            estimate = selectors.run_estimate(
                judge=data["judge"],
                project=project,
                filters=start_form.filters(),
                both_orders=data["both_orders"],
            )
            return estimate, False
        start = (
            services.judge_run_start_both_orders
            if data["both_orders"]
            else services.judge_run_start
        )
        started = start(
            judge=data["judge"],
            project=project,
            started_by=request.user,
            filters=start_form.filters(),
            budget_calls=data["budget_calls"],
            budget_tokens=data["budget_tokens"],
        )
    except services.JudgeError as exc:
        messages.error(request, str(exc))
        return None, False
    for run in started if isinstance(started, list) else [started]:
        messages.success(request, f"Run {run.pk} started over {run.total} items.")
    return None, True


def _preview(request, project, preview_form) -> dict | None:
    """The judge's prompt rendered for the chosen item (nothing is sent anywhere)."""
    item = (
        Item.objects.filter(project=project, external_id=preview_form.cleaned_data["item"])
        .select_related("project")
        .first()
    )
    if item is None:
        preview_form.add_error("item", "No item with this id in the project.")
        return None
    try:
        template = services.template_for(judge=preview_form.cleaned_data["judge"], project=project)
    except services.JudgeError as exc:
        messages.error(request, str(exc))
        return None
    preview = selectors.prompt_preview(template=template, item=item)
    preview["template"] = template
    preview["item"] = item
    return preview


def _switch_preselection(request, project, judge) -> None:
    if judge is None:
        services.preselection_disable(project=project)
        messages.success(request, "Annotators see no pre-selection.")
        return
    try:
        services.preselection_enable(project=project, judge=judge, enabled_by=request.user)
    except services.JudgeError as exc:
        messages.error(request, str(exc))
        return
    reason = selectors.preselection_status(project=project)["reason"]
    messages.warning(
        request,
        reason
        or f"Annotators now see {judge.name}'s answers pre-selected; each "
        "showing is recorded with the annotation.",
    )


@login_required
@require_GET
def judge_run(request, slug, run_id):
    """One run: progress, calls, tokens and latency, a flag when its batches went silent, its
    problems grouped by kind, and the items it could not answer with the reply or error
    (escaped by the template; replies are untrusted text). Servers' error bodies appear only
    as sanitised excerpts, and only to staff."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    run = selectors.run_for_project(project=project, run_id=run_id)
    if run is None:
        raise Http404("No such run.")
    return render(
        request,
        "llm_judges/run_detail.html",
        {
            "project": project,
            "run": run,
            "progress": selectors.progress_of(run=run),
            "usage": selectors.run_usage(run=run),
            "problems": selectors.run_problems(run=run),
            "problem_groups": selectors.run_problem_groups(run=run),
            # A server's own error text (sanitised) is for staff; researchers see the status
            # and the error class (issue 24).
            "show_excerpts": request.user.is_staff,
        },
    )


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Http404("No such run.") from None
