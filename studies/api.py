"""Researcher API: projects, items, progress, import and export.

Security: authenticated users only. The project list shows only projects the caller belongs to
(with their role). Item, progress, import and export endpoints require the researcher role in the
project (``IsProjectResearcher`` → ``project_for``; 404 otherwise), because they reveal gold and
every annotator's answers.
"""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import task_types
from annotation.models import Item
from annotation.selectors import project_progress
from annotation.task_types import all_task_types
from core.errors import Refusal
from projects import selectors
from projects.models import Membership
from projects.permissions import IsProjectResearcher
from studies.middleware import large_uploads
from studies.models import ImportJob
from studies.selectors.import_jobs import import_job_view
from studies.serializers import (
    AnnotationImportSerializer,
    ImportSerializer,
    ItemFixSerializer,
    ItemSerializer,
    LabelStudioImportSerializer,
    ProjectSerializer,
)
from studies.services.exports import (
    CODERS,
    FORMATS,
    export_download,
    export_options,
    extra_export_download,
    extra_formats,
)
from studies.services.external_annotations import import_annotations_upload, import_summary
from studies.services.import_jobs import import_job_cancel, import_job_create
from studies.services.imports import DETECT, ImportFailed, available_formats
from studies.services.item_fixes import item_fix
from studies.services.label_studio import label_studio_import_upload
from studies.study_files import study_apply, study_export


class ProjectListView(ListAPIView):
    """GET: projects the caller belongs to, with the caller's role. POST: create a project from a
    study file (JSON; see ``studies.study_files``), for staff or users with the
    ``projects.add_project`` permission; the caller becomes its researcher. 400 names the path
    of the first problem (``crowd.batch_size``) and creates nothing."""

    serializer_class = ProjectSerializer

    @extend_schema(request=dict, responses={201: dict})
    def post(self, request):
        if not (request.user.is_staff or request.user.has_perm("projects.add_project")):
            raise Refusal(
                "Only staff or users allowed to add projects can create them.", code="forbidden"
            )
        result = study_apply(data=request.data, user=request.user, create_only=True, via="API")
        return Response(
            {"study": study_export(project=result["project"]), "changes": result["changes"]},
            status=status.HTTP_201_CREATED,
        )

    def get_queryset(self):
        return selectors.projects_for_user(user=self.request.user).order_by("name")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["roles"] = dict(
            Membership.objects.current()
            .filter(user=self.request.user)
            .values_list("project_id", "role")
        )
        return context


class ProjectStudyView(APIView):
    """GET: the project's study file. PUT: change the project to match a study file (the
    file's slug must be this project's); researchers of the project only (404 otherwise). 200
    with the changes; 400 names the path of the first problem and changes nothing."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=dict)
    def get(self, request, slug):
        return Response(study_export(project=self.project))

    @extend_schema(request=dict, responses=dict)
    def put(self, request, slug):
        result = study_apply(
            data=request.data, user=request.user, slug=self.project.slug, via="API"
        )
        return Response(
            {"study": study_export(project=result["project"]), "changes": result["changes"]}
        )


class ItemListView(ListAPIView):
    """All items of a project with payload, prepared data and gold (researchers only)."""

    permission_classes = [IsProjectResearcher]
    serializer_class = ItemSerializer

    def get_queryset(self):
        return Item.objects.filter(project=self.project).order_by("position", "id")


class ItemFixView(APIView):
    """Fix one item's record (a flagged item whose evidence link is dead…): checked as an import
    checks it; the item's revision moves, answers already made keep theirs, judges' answers on
    the item go. Researchers only; the item must belong to the project (404)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(request=ItemFixSerializer, responses={200: dict})
    def post(self, request, slug, item_id):
        body = ItemFixSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fix = item_fix(
            project=self.project, item_id=item_id, by=request.user, **body.validated_data
        )
        return Response(
            {
                "item": fix.item_id,
                "revision": fix.revision,
                "earlier_answers": fix.earlier_answers,
                "changed": list(fix.changed_fields),
            }
        )


class ProgressView(APIView):
    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=dict)
    def get(self, request, slug):
        return Response(project_progress(project=self.project))


@large_uploads
class ImportView(APIView):
    """Upload a file of items; a worker imports it, all or nothing. 201 with the report when the
    import has already finished (no broker), 400 with the line and field of the first problem,
    202 with the job while a worker has it (poll ``api-import-job``)."""

    permission_classes = [IsProjectResearcher]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": ImportSerializer},
        responses={
            201: OpenApiResponse(dict, description="Imported already (no broker): the report."),
            202: OpenApiResponse(dict, description="Queued or running: poll the job."),
        },
    )
    def post(self, request, slug):
        body = ImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fmt = body.validated_data["format"]
        formats = [DETECT, *available_formats(task_type=task_types.get(self.project.task_type))]
        if fmt not in formats:
            raise ImportFailed(
                f"Unknown format {fmt!r}; choose one of {', '.join(formats)}.", field="format"
            )
        job = import_job_create(
            project=self.project,
            user=request.user,
            uploaded_file=body.validated_data["file"],
            fmt=fmt,
            update=body.validated_data["update"],
            mapping_file=body.validated_data.get("mapping"),
        )
        job.refresh_from_db()
        return _job_response(job)


@large_uploads
class AnnotationImportView(APIView):
    """Upload annotations collected elsewhere (the original study, an MTurk batch) as external
    coders' answers (``studies.services.external_annotations``), imported in the request, all or
    nothing. 201 with the counts; 400 naming the line and field of the first bad row (``field``:
    the answer field at fault, e.g. ``answer.helpfulness``), nothing imported; 413 above the
    upload limit. Researchers of the project only (404 otherwise)."""

    permission_classes = [IsProjectResearcher]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": AnnotationImportSerializer}, responses=dict)
    def post(self, request, slug):
        body = AnnotationImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        counts = import_annotations_upload(
            project=self.project,
            uploaded_file=body.validated_data["file"],
            fmt=body.validated_data["format"],
            source=body.validated_data["source"],
            skip_unknown_items=body.validated_data["skip_unknown_items"],
            mapping_file=body.validated_data.get("mapping"),
            by=request.user,
        )
        return Response({**counts, "summary": import_summary(counts=counts)}, status=201)


@large_uploads
class LabelStudioImportView(APIView):
    """A Label Studio project in one request: its JSON export (``file``) and labeling config
    (``labeling_config``) become items and external coders' answers, all or nothing, for task
    types that read Label Studio projects (``studies.services.label_studio``). 201 with the
    counts and what was not mapped; 400 naming the field and the task (nothing imported); 413
    above the upload limit. Researchers of the project only (404 otherwise)."""

    permission_classes = [IsProjectResearcher]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": LabelStudioImportSerializer}, responses=dict)
    def post(self, request, slug):
        body = LabelStudioImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        done = label_studio_import_upload(
            project=self.project,
            export_file=body.validated_data["file"],
            config_file=body.validated_data["labeling_config"],
            source=body.validated_data["source"],
            by=request.user,
        )
        return Response(done, status=201)


class ImportJobView(APIView):
    """One import job of the project (researchers only)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(
        responses={
            200: OpenApiResponse(dict, description="Done or failed (see status and message)."),
            202: OpenApiResponse(dict, description="Queued or running."),
        }
    )
    def get(self, request, slug, job_id):
        job = ImportJob.objects.filter(project=self.project, id=job_id).first()
        if job is None:
            raise Refusal("No such import in this project.", code="not_found")
        # Reading a job succeeds whatever became of it: a failed one is a 200 with its status
        # and message (a 400 belongs to the upload request whose import failed).
        return _job_response(job, created_status=status.HTTP_200_OK, polled=True)


class ImportJobCancelView(APIView):
    """Cancel a queued or running import of the project: nothing of it is imported, and a
    worker that takes it later leaves it alone (409 once it has finished; researchers only)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(request=None, responses=dict)
    def post(self, request, slug, job_id):
        job = ImportJob.objects.filter(project=self.project, id=job_id).first()
        if job is None:
            raise Refusal("No such import in this project.", code="not_found")
        return Response(import_job_view(job=import_job_cancel(job=job, by=request.user)))


def _job_response(
    job: ImportJob, created_status: int = status.HTTP_201_CREATED, polled: bool = False
) -> Response:
    """The job: 201 (``created_status``) when done, 202 while queued or running; a failed
    job is a refusal of the upload (400, with the job) unless it is ``polled`` (200)."""
    data = import_job_view(job=job)
    if job.status == ImportJob.Status.FAILED:
        if not polled:
            raise ImportFailed(job.message, about=data)
        return Response({"detail": job.message, **data})
    if job.status in (ImportJob.Status.DONE, ImportJob.Status.CANCELLED):
        return Response(data, status=created_status)
    return Response(data, status=status.HTTP_202_ACCEPTED)


EXPORT_CONTENT_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}


class ExportView(APIView):
    """Stream every current annotation as JSONL or CSV (``?format=``), in constant memory;
    ``?coders=external``, ``judges`` or ``all`` chooses the external coders', the judges' or
    everyone's answers, with ``coder_kind``, ``coder`` and ``coder_source`` columns
    (``studies.services.exports``). An unknown format or coders value is a 400 naming the
    field."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=[*FORMATS, *sorted({f for t in all_task_types() for f in t.export_formats})],
                description="jsonl or csv; a task type's own formats (another tool's files, "
                "such as a Label Studio export) only for projects of that task type.",
            ),
            OpenApiParameter("coders", str, enum=list(CODERS)),
        ],
        responses={
            (200, EXPORT_CONTENT_TYPES["jsonl"]): OpenApiResponse(
                OpenApiTypes.STR,
                description="JSON Lines: one annotation per line, then the end line "
                '{"concord_export_end": {"rows", "sha256"}} (studies.export_check).',
            ),
            (200, EXPORT_CONTENT_TYPES["csv"]): OpenApiResponse(
                OpenApiTypes.STR,
                description="CSV with a header row, then the end line "
                "'# concord_export_end rows=N sha256=HEX' (studies.export_check).",
            ),
        },
    )
    def get(self, request, slug):
        fmt = request.query_params.get("format", "jsonl")
        coders = request.query_params.get("coders", "humans")
        export_options(fmt=fmt, coders=coders, project=self.project)  # Refusal -> JSON 400
        return export_response(self.project, fmt, coders, by=request.user, via="API")


def export_response(
    project, fmt: str, coders: str = "humans", *, by=None, via: str = "download"
) -> StreamingHttpResponse:
    extra = extra_formats(project=project).get(fmt)
    if extra is not None:  # another tool's file, as the task type writes it
        response = StreamingHttpResponse(
            (
                text.encode()
                for text in extra_export_download(project=project, fmt=fmt, by=by, via=via)
            ),
            content_type=extra.content_type,
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{project.slug}-{fmt}.{extra.extension}"'
        )
        return response
    response = StreamingHttpResponse(
        export_download(project=project, fmt=fmt, coders=coders, by=by, via=via),
        content_type=EXPORT_CONTENT_TYPES[fmt],
    )
    name = "annotations" if coders == "humans" else f"annotations-{coders}"
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{name}.{fmt}"'
    return response
