"""Researcher pages for judges: start runs, watch their progress, cancel, pre-selection option.

Security: every view requires login and the researcher role in the project (``project_for``:
404 to anyone else, so slugs do not leak). Pages show judge replies and errors, never gold; run
ids are looked up inside the project, so a researcher cannot open another project's run.
A project's judges are its own: researchers add one (an LLM judge calls one of the model
endpoints staff opened to the project, never an address a researcher types), copy one from the
catalogue (never another project's judge: nothing of another project is offered), or choose the endpoint of one that has not run.
Model endpoints themselves (URL, key variable) are configured by staff in the admin.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from annotation.models import Item
from annotation.selectors import item_groups, project_counts
from core.errors import Refusal
from llm_judges import selectors, services
from llm_judges.forms import (
    JudgeAddForm,
    JudgeCopyForm,
    JudgeEndpointForm,
    PreselectionForm,
    PreviewForm,
    StartRunForm,
)
from projects.permissions import RESEARCH_ROLES, project_for


@login_required
@require_http_methods(["GET", "POST"])
def project_judges(request, slug):
    """Start a run, cancel one, switch the pre-selection; list runs with progress bars."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    judges = selectors.judges_for_project(project=project)
    endpoints = selectors.endpoints_for_project(project=project)
    setup = _JudgeSetup(request, project, judges, endpoints)
    groups = item_groups(project=project)
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
            _cancel_run(request, project)
            return redirect("project-judges", slug=slug)
        elif action in _JudgeSetup.ACTIONS:
            if setup.handle(action):
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
            # the maintained counter, not a COUNT over the project's items (0.5 s at 100k)
            "item_count": project_counts(project=project)["items"],
            "start_form": start_form,
            "pre_form": pre_form,
            "preview_form": preview_form,
            "preview": preview,
            "estimate": estimate,
            "preselection": preselection,
            "preselection_reason": status["reason"],
            "runs": [selectors.progress_of(run=run) for run in runs],
            "endpoints": endpoints,
            "sampling": services.sampling_status(project=project),
            **setup.forms(),
        },
    )


def _cancel_run(request, project) -> None:
    """Cancel the run named in the POST (404 if the project has no such run)."""
    run = selectors.run_for_project(project=project, run_id=_int(request.POST.get("run")))
    if run is None:
        raise Http404("No such run.")
    if services.judge_run_cancel(run=run, by=request.user):
        messages.success(request, f"Run {run.pk} cancelled.")


@login_required
@require_POST
def sampling_weights(request, slug):
    """Compute the project's active-sampling weights from the judges' answers so far (before
    humans start; afterwards the refusal is shown and nothing changes)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    try:
        done = services.sampling_weights_compute(project_id=project.pk)
    except Refusal as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(
            request,
            f"Sampling weights set for {done.items} item{'' if done.items == 1 else 's'} "
            f"({done.with_uncertainty} with an uncertainty from the judges; the others get "
            "the mean weight).",
        )
    return redirect(f"{reverse('project-judges', args=[project.slug])}#sampling")


class _JudgeSetup:
    """The page's judge set-up forms: add a judge, copy one in, choose an endpoint."""

    ACTIONS = ("add", "copy", "endpoint")

    def __init__(self, request, project, judges, endpoints) -> None:
        self.request, self.project = request, project
        self.judges, self.endpoints = judges, endpoints
        self.sources = selectors.judges_to_copy(project=project, user=request.user)
        self.kinds = services.kinds_supported(task_type=project.task_type)
        self.add_form = JudgeAddForm(endpoints=endpoints, kinds=self.kinds, prefix="add")
        self.copy_form = JudgeCopyForm(sources=self.sources, endpoints=endpoints, prefix="copy")
        self.endpoint_form = JudgeEndpointForm(judges=judges, endpoints=endpoints, prefix="ep")

    def forms(self) -> dict:
        return {
            "add_form": self.add_form,
            "copy_form": self.copy_form,
            "endpoint_form": self.endpoint_form,
        }

    def handle(self, action: str) -> bool:
        """Whether the action succeeded (else its form shows the errors)."""
        post = self.request.POST
        try:
            if action == "add":
                self.add_form = form = JudgeAddForm(
                    post, endpoints=self.endpoints, kinds=self.kinds, prefix="add"
                )
                if not form.is_valid():
                    return False
                judge = services.judge_create(
                    project=self.project, **form.cleaned_data, by=self.request.user
                )
            elif action == "copy":
                self.copy_form = form = JudgeCopyForm(
                    post, sources=self.sources, endpoints=self.endpoints, prefix="copy"
                )
                if not form.is_valid():
                    return False
                data = form.cleaned_data
                judge = services.judge_copy(
                    judge=data["source"],
                    project=self.project,
                    name=data["name"],
                    by=self.request.user,
                )
                if data["endpoint"] is not None:
                    services.judge_endpoint_set(
                        judge=judge, endpoint=data["endpoint"], by=self.request.user
                    )
            else:
                self.endpoint_form = form = JudgeEndpointForm(
                    post, judges=self.judges, endpoints=self.endpoints, prefix="ep"
                )
                if not form.is_valid():
                    return False
                judge = services.judge_endpoint_set(**form.cleaned_data, by=self.request.user)
        except services.JudgeError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            return False
        except serializers.ValidationError as exc:  # the kind's parameters or model
            for name, problem in exc.detail.items():
                text = " ".join(map(str, problem)) if isinstance(problem, list) else str(problem)
                form.add_error(name if name in form.fields else "parameters", text)
            return False
        if judge.kind == judge.Kind.LLM and judge.endpoint is None:
            messages.warning(
                self.request,
                f"{judge.name} is added; choose its model endpoint below before it can run.",
            )
        else:
            messages.success(self.request, f"{judge.name} is ready.")
        return True


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
