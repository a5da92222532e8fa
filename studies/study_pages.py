"""Creating and editing a study in the pages, and downloading its study file.

``/p/new/`` lists the task types (what each is, and a picture of its annotation page);
``/p/new/<task type>/`` is the study form (:mod:`studies.study_forms`) for users allowed to
create projects (staff, or ``projects.add_project``); saving applies it as a study file and leads
to the project page, the creator its researcher. ``/p/<slug>/settings/`` edits a project with the
same form (its researchers); ``/p/<slug>/study.yaml`` (or ``.json``) downloads its study file,
which applied again changes nothing. "Preview" renders the guidelines' Markdown without saving.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import task_types
from core.errors import Refusal
from projects.permissions import RESEARCH_ROLES, can_create_projects, project_for
from studies.study_files import study_apply, study_export, study_file_text
from studies.study_forms import newline_normalised, study_form_for


def _creator(request) -> None:
    if not can_create_projects(request.user):
        raise Http404("Only staff, or users allowed to add projects, create studies.")


@login_required
@require_GET
def study_new(request):
    """Choose the task type of a new study."""
    _creator(request)
    return render(request, "studies/study_new.html", {"task_types": task_types.all_task_types()})


def _task_type(slug: str):
    try:
        return task_types.get(slug)
    except LookupError:
        raise Http404("No such task type.") from None


@login_required
@require_http_methods(["GET", "POST"])
def study_new_form(request, task_type):
    """The form of a new study of ``task_type``."""
    _creator(request)
    kind = _task_type(task_type)
    form_class = study_form_for(kind.slug)
    form = form_class(request.POST or None)
    if request.method == "POST" and form.is_valid() and request.POST.get("action") != "preview":
        try:
            result = study_apply(
                data=form.study(base={}), user=request.user, create_only=True, via="new study page"
            )
        except Refusal as refusal:
            form.add_refusal(refusal)
        else:
            project = result["project"]
            messages.success(request, f"{project.name} is created: import its items below.")
            return redirect("project-detail", slug=project.slug)
    return _form_page(request, form, kind, project=None)


@login_required
@require_http_methods(["GET", "POST"])
def study_settings(request, slug):
    """The project's settings in the study form; changes that would make existing answers
    wrong are refused with the reason."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    kind = _task_type(project.task_type)
    form_class = study_form_for(kind.slug)
    form = form_class(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid() and request.POST.get("action") != "preview":
        try:
            result = study_apply(
                data=form.study(base=study_export(project=project)),
                user=request.user,
                slug=project.slug,
                via="settings page",
            )
        except Refusal as refusal:
            form.add_refusal(refusal)
        else:
            changes = result["changes"]
            if changes:
                messages.success(request, "Saved: " + "; ".join(changes[:5]))
            else:
                messages.info(request, "Nothing changed.")
            return redirect("project-detail", slug=project.slug)
    return _form_page(request, form, kind, project=project)


def _form_page(request, form, kind, *, project):
    preview = None
    if request.method == "POST" and request.POST.get("action") == "preview":
        preview = newline_normalised(request.POST.get("guidelines", ""))
    status = 400 if form.is_bound and form.errors and preview is None else 200
    return render(
        request,
        "studies/study_form.html",
        {"form": form, "task_type": kind, "project": project, "preview": preview},
        status=status,
    )


@login_required
@require_GET
def study_download(request, slug, fmt):
    """The project's study file as an attachment (YAML or JSON)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    text = study_file_text(project=project, fmt=fmt)
    content_type = "application/yaml" if fmt == "yaml" else "application/json"
    response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}.study.{fmt}"'
    return response


EXTENSIONS = {"jsonl": "jsonl", "csv": "csv"}


def example_file_names(task_type) -> dict[str, str]:
    """``{name in URLs: format}`` of a task type's example import files."""
    return {name.replace(" ", "-"): name for name in task_type.example_files()}


@login_required
@require_GET
def example_file(request, task_type, name):
    """An example import file of a task type's format (built from its own definitions)."""
    kind = _task_type(task_type)
    files = kind.example_files()
    fmt = example_file_names(kind).get(name)
    if fmt is None:
        raise Http404("No such example file.")
    text = files[fmt]
    extension = EXTENSIONS.get(fmt) or ("json" if text.lstrip()[:1] in "[{" else "csv")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{kind.slug}-{name}.{extension}"'
    return response
