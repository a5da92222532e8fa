"""Annotator API: next item, assignment, draft, submit, history.

Security: every endpoint requires an authenticated user (session with CSRF, or token).
Project endpoints resolve the project through ``projects.permissions.project_for`` with the
annotator role (404 otherwise); assignment endpoints only ever load the caller's own assignment
(``own_assignment``, 404 for anyone else's). Responses carry the item as the task type's
``display()`` renders it: never gold, kind, group or other annotators' answers. Control items
are indistinguishable: responses never depend on an item's kind, and whether an answer on a
control was right is never returned (it only shows, in the end, as a polite stop).
"""

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors, services, task_types
from annotation.crowd_session import batch_ref
from annotation.serializers import (
    DraftSerializer,
    HistoryEntrySerializer,
    NextSerializer,
    SubmitSerializer,
)
from projects.permissions import ANNOTATE_ROLES, IsProjectAnnotator, has_role


class NextItemView(APIView):
    """Reserve (or return the open reservation of) the next item for the calling annotator.

    200 with the assignment; 200 with ``{"stop": {reason, title, message, feedback, code…}}`` when
    the annotator may not go on (disqualified, qualification failed or pending, batch finished:
    the completion code); 204 when nothing is left. ``{"start_batch": true}`` starts the next
    batch after a finished one (not in a crowd-platform session, which gets one batch). The
    crowd session (``annotation.crowd_session``) ties the batch to the platform session it came from.
    """

    permission_classes = [IsProjectAnnotator]

    @extend_schema(
        request=NextSerializer,
        responses={200: dict, 204: OpenApiResponse(description="No item left")},
    )
    def post(self, request, slug):
        body = NextSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        ref = batch_ref(request, self.project)
        assignment = services.assignment_next(
            project=self.project,
            annotator=request.user,
            batch_ref=ref,
            start_batch=body.validated_data["start_batch"],
        )
        if assignment is None:
            stop = selectors.annotator_stop(project=self.project, user=request.user, batch_ref=ref)
            if stop is not None:
                return Response({"stop": stop})
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = selectors.assignment_view(assignment=assignment)
        data["counts"] = selectors.annotator_counts(project=self.project, user=request.user)
        return Response(data)


class AssignmentView(APIView):
    """One of the caller's own assignments (to reopen and revise earlier items)."""

    @extend_schema(responses=dict)
    def get(self, request, pk):
        assignment = selectors.own_assignment(user=request.user, assignment_id=pk)
        if not has_role(request.user, assignment.project, ANNOTATE_ROLES):
            raise Http404("No such assignment.")  # removed from the project: no access left
        services.assignment_reopen(assignment=assignment)
        data = selectors.assignment_view(assignment=assignment)
        data["counts"] = selectors.annotator_counts(project=assignment.project, user=request.user)
        return Response(data)


class DraftView(APIView):
    """Autosave a partial answer on the caller's own assignment."""

    @extend_schema(request=DraftSerializer, responses=dict)
    def put(self, request, pk):
        assignment = selectors.own_assignment(user=request.user, assignment_id=pk)
        body = DraftSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        draft = services.draft_save(assignment=assignment, **body.validated_data)
        if draft is None:  # older than what is stored or submitted: nothing to keep
            return Response({"revision": body.validated_data["revision"], "ignored": True})
        return Response({"revision": draft.revision, "saved_at": draft.updated_at.isoformat()})


class SubmitView(APIView):
    """Submit (or revise) the answer of the caller's own assignment. Idempotent per
    ``submission_id``; 201 when stored, 200 when it repeats what is stored."""

    @extend_schema(request=SubmitSerializer, responses=dict)
    def post(self, request, pk):
        assignment = selectors.own_assignment(user=request.user, assignment_id=pk)
        body = SubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        annotation, created = services.annotation_submit(
            assignment=assignment,
            answer=body.validated_data["answer"],
            time_spent_ms=body.validated_data["time_spent_ms"],
            submission_id=body.validated_data.get("submission_id"),
            revision=body.validated_data["revision"],
        )
        return Response(
            {
                "annotation": annotation.id,
                "version": annotation.version,
                "answer": annotation.answer,
            },
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class HistoryView(ListAPIView):
    """The caller's own assignments in a project, newest first (paginated)."""

    permission_classes = [IsProjectAnnotator]
    serializer_class = HistoryEntrySerializer

    def get_queryset(self):
        return selectors.annotator_history(project=self.project, user=self.request.user)

    def get_serializer_context(self):
        return {
            **super().get_serializer_context(),
            "task_type": task_types.get(self.project.task_type),
        }
