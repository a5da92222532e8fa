"""Pages for everyone (home) and for researchers (project page with import and export).

Security: all views require login. ``home`` lists only the caller's own memberships. The project
page, import and export require the researcher role in the project (``project_for``: 404 to
anyone else), because they show gold and every annotator's answers. Uploaded files are imported
by a Celery worker (``import_job_create``), never parsed in the request.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import task_types
from annotation.flags import flag_summary
from annotation.models import Assignment, Item
from annotation.selectors import project_progress
from core.errors import Refusal
from projects import selectors
from projects.permissions import RESEARCH_ROLES, can_create_projects, project_for
from studies.api import export_response
from studies.forms import AnnotationImportForm, ImportForm, LabelStudioImportForm
from studies.middleware import large_uploads
from studies.models import ImportJob
from studies.selectors.import_jobs import import_jobs_recent
from studies.services.exports import CODERS, FORMATS, extra_formats
from studies.services.external_annotations import (
    annotation_formats,
    annotation_formats_taking,
    import_annotations_upload,
    import_summary,
)
from studies.services.import_jobs import import_job_cancel, import_job_create
from studies.services.imports import available_formats, formats_taking
from studies.services.item_notes import NOTE_FORMATS, notes_download
from studies.services.label_studio import label_studio_import_upload
from studies.study_pages import example_file_names


@require_GET
def healthz(request):
    """Liveness for the container health check: the database answers. No data, no login."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


@login_required
@require_GET
def home(request):
    regular_items = (
        Item.objects.filter(project=OuterRef("project_id"), kind=Item.Kind.REGULAR)
        .order_by()
        .values("project")
        .annotate(n=Count("id"))
        .values("n")
    )
    memberships = selectors.memberships_for_user(user=request.user).annotate(
        items_total=Coalesce(Subquery(regular_items), 0),
        submitted=Count(
            "user__assignments",
            filter=Q(
                user__assignments__project_id=F("project_id"),
                user__assignments__state=Assignment.State.SUBMITTED,
            ),
        ),
    )
    return render(
        request,
        "home.html",
        {"memberships": memberships, "can_create": can_create_projects(request.user)},
    )


@large_uploads
@login_required
@require_http_methods(["GET", "POST"])
def project_detail(request, slug):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    task_type = task_types.get(project.task_type)
    formats = available_formats(task_type=task_type)
    form = ImportForm(formats=formats)
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES, formats=formats)
        if form.is_valid():
            try:
                job = import_job_create(
                    project=project,
                    user=request.user,
                    uploaded_file=form.cleaned_data["file"],
                    fmt=form.cleaned_data["format"],
                    update=form.cleaned_data["update"],
                    mapping_file=form.cleaned_data.get("mapping"),
                )
            except Refusal as refusal:  # too large, or a mapping file that is not text
                form.add_error(
                    refusal.field if refusal.field in form.fields else None, str(refusal)
                )
                return _project_page(request, project, task_type, form, status=refusal.status)
            job.refresh_from_db()  # without a broker the import has already run
            if job.status == ImportJob.Status.DONE:
                messages.success(request, f"Import finished: {job.message}.")
            elif job.status == ImportJob.Status.FAILED:
                messages.error(request, job.message)
            else:
                messages.info(
                    request, f"Import of {job.filename} queued; this page shows its progress."
                )
            return redirect("project-detail", slug=project.slug)
    return _project_page(request, project, task_type, form, status=400 if form.errors else 200)


@large_uploads
@login_required
@require_http_methods(["POST"])
def project_import_annotations(request, slug):
    """Annotations collected elsewhere, uploaded on the project page and imported in the
    request as external coders' answers, all or nothing (``import_annotations_upload``).

    Security: researcher role in the project (404 otherwise)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    task_type = task_types.get(project.task_type)
    form = AnnotationImportForm(
        request.POST, request.FILES, formats=annotation_formats(project=project)
    )
    if form.is_valid():
        try:
            counts = import_annotations_upload(
                project=project,
                uploaded_file=form.cleaned_data["file"],
                fmt=form.cleaned_data["format"],
                source=form.cleaned_data["source"],
                skip_unknown_items=form.cleaned_data["skip_unknown_items"],
                mapping_file=form.cleaned_data.get("mapping"),
                by=request.user,
            )
        except Refusal as refusal:
            form.add_error(refusal.field if refusal.field in form.fields else None, str(refusal))
            return _project_page(
                request,
                project,
                task_type,
                ImportForm(formats=available_formats(task_type=task_type)),
                annotation_form=form,
                status=refusal.status,
            )
        messages.success(request, import_summary(counts=counts))
        return redirect("project-detail", slug=project.slug)
    return _project_page(
        request,
        project,
        task_type,
        ImportForm(formats=available_formats(task_type=task_type)),
        annotation_form=form,
        status=400,
    )


@large_uploads
@login_required
@require_http_methods(["POST"])
def project_import_label_studio(request, slug):
    """A Label Studio project in one submit: its JSON export and labeling config become items
    and external coders' answers, all or nothing (``label_studio_import_upload``). A refusal is
    the page again (400) with the error beside its field and the source as typed.

    Security: researcher role in the project (404 otherwise)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    task_type = task_types.get(project.task_type)
    form = LabelStudioImportForm(request.POST, request.FILES)
    status = 400
    if form.is_valid():
        try:
            done = label_studio_import_upload(
                project=project,
                export_file=form.cleaned_data["file"],
                config_file=form.cleaned_data["labeling_config"],
                source=form.cleaned_data["source"],
                by=request.user,
            )
        except Refusal as refusal:  # a field inside the export ("data.items.0.id") is the file's
            form.add_error(refusal.field if refusal.field in form.fields else "file", str(refusal))
            status = refusal.status
        else:
            messages.success(request, done["summary"])
            for line in done["not_mapped"][:20]:
                messages.info(request, f"Not mapped: {line}")
            return redirect("project-detail", slug=project.slug)
    return _project_page(
        request,
        project,
        task_type,
        ImportForm(formats=available_formats(task_type=task_type)),
        label_studio_form=form,
        status=status,
    )


def _project_page(
    request, project, task_type, form, *, status: int, annotation_form=None, label_studio_form=None
):
    imports = import_jobs_recent(project=project)
    jobs = imports["jobs"]
    return render(
        request,
        "projects/detail.html",
        {
            "project": project,
            "task_type": task_type,
            "progress": project_progress(project=project),
            "flags": flag_summary(project=project),
            "settings_versions": selectors.settings_versions(project=project),
            "form": form,
            "annotation_form": annotation_form
            or AnnotationImportForm(formats=annotation_formats(project=project)),
            "annotation_mapping_formats": annotation_formats_taking(
                project=project, option="mapping"
            ),
            "label_studio_form": (label_studio_form or LabelStudioImportForm())
            if task_type.label_studio
            else None,
            "external_coders": project.external_coders.count(),
            "mapping_formats": formats_taking(task_type=task_type, option="mapping"),
            "example_files": example_file_names(task_type),
            "export_formats": FORMATS,
            "extra_export_formats": extra_formats(project=project),
            "export_coders": CODERS,
            "import_jobs": jobs,
            "import_notices": imports["notices"],
            "upload_limit": settings.CONCORD_MAX_UPLOAD_BYTES,
            "refresh_seconds": 3 if any(r.job.status in ("queued", "running") for r in jobs) else 0,
        },
        status=status,
    )


@login_required
@require_POST
def project_import_cancel(request, slug, job_id):
    """Cancel a queued or running import of the project (researchers; 404 for another
    project's job, 409 for a finished one)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    job = ImportJob.objects.filter(project=project, id=job_id).first()
    if job is None:
        raise Http404("No such import in this project.")
    import_job_cancel(job=job, by=request.user)
    messages.success(
        request, f"The import of {job.filename} is cancelled: nothing of it is imported."
    )
    return redirect(f"{reverse('project-detail', args=[project.slug])}#import-jobs")


@login_required
@require_GET
def project_bundle(request, slug):
    """The project's replication bundle (``studies.bundles``) as a zip file.

    Security: researcher role in the project (404 otherwise); annotators appear by pseudonym."""
    import io
    import tempfile
    import zipfile
    from pathlib import Path

    from studies.bundles import bundle_write

    project = project_for(request.user, slug, RESEARCH_ROLES)
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as folder:
        written = bundle_write(project=project, out=Path(folder) / project.slug, by=request.user)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in written:
                archive.write(path, arcname=f"{project.slug}/{path.name}")
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-bundle.zip"'
    return response


@login_required
@require_GET
def project_export(request, slug, fmt):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if fmt not in FORMATS and fmt not in extra_formats(project=project):
        messages.error(request, f"Unknown export format {fmt!r}.")
        return redirect("project-detail", slug=slug)
    coders = request.GET.get("coders", "humans")
    if coders not in CODERS:
        messages.error(request, f"Unknown coders {coders!r}; choose one of {', '.join(CODERS)}.")
        return redirect("project-detail", slug=slug)
    return export_response(project, fmt, coders, by=request.user, via="project page")


@login_required
@require_GET
def project_export_notes(request, slug, fmt):
    """Flags, skips, send-backs and comments as CSV or JSON Lines, streamed
    (``studies.services.item_notes``).

    Security: researcher role in the project (404 otherwise); people appear by pseudonym."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if fmt not in NOTE_FORMATS:
        raise Http404(f"Unknown format {fmt[:20]!r}; use csv or jsonl.")
    response = StreamingHttpResponse(
        notes_download(project=project, fmt=fmt, by=request.user),
        content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson",
    )
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-item-notes.{fmt}"'
    return response
