"""Annotator API: next item, assignment, draft, submit, history.

Security: every endpoint requires an authenticated user (session with CSRF, or token).
Project endpoints resolve the project through ``projects.permissions.project_for`` with the
annotator role (404 otherwise); assignment endpoints only ever load the caller's own assignment
(``own_assignment``, 404 for anyone else's). Responses carry the item as the task type's
``display()`` renders it: never gold, kind, group or other annotators' answers. Control items
are indistinguishable: responses never depend on an item's kind, and whether an answer on a
control was right is never returned (it only shows, in the end, as a polite stop).
"""

from urllib.parse import urlencode

from django.http import Http404
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import flags, selectors, services, task_types
from annotation.crowd_session import batch_ref
from annotation.serializers import (
    CommentSerializer,
    DraftSerializer,
    FlagActionSerializer,
    FlagSerializer,
    HistoryEntrySerializer,
    NextSerializer,
    SendBackSerializer,
    SkipSerializer,
    SubmitSerializer,
)
from projects.permissions import (
    ANNOTATE_ROLES,
    RESEARCH_ROLES,
    REVIEW_ROLES,
    IsProjectAnnotator,
    has_role,
    project_for,
)


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
            membership=self.membership,
        )
        if assignment is None:
            stop = selectors.annotator_stop(project=self.project, user=request.user, batch_ref=ref)
            if stop is not None:
                return Response({"stop": stop})
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = selectors.assignment_view(assignment=assignment, dealt_now=assignment.dealt_now)
        data["counts"] = selectors.annotator_counts(project=self.project, user=request.user)
        return Response(data)


class AssignmentView(APIView):
    """One of the caller's own assignments (to reopen and revise earlier items)."""

    @extend_schema(responses=dict)
    def get(self, request, pk):
        assignment = selectors.own_assignment(user=request.user, assignment_id=pk)
        if not has_role(request.user, assignment.project, ANNOTATE_ROLES):
            raise Http404(
                gettext("No such assignment.")
            )  # removed from the project: no access left
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


def _writable_own(request, pk):
    assignment = selectors.own_assignment(user=request.user, assignment_id=pk)
    if not has_role(request.user, assignment.project, ANNOTATE_ROLES):
        raise Http404(gettext("No such assignment."))
    return assignment


def _flag_json(flag) -> dict:
    return {
        "id": flag.pk,
        "item": flag.item_id,
        "reason": flag.reason,
        "text": flag.text,
        "skipped": flag.skipped,
        "state": flag.state,
        "response": flag.response,
    }


class FlagView(APIView):
    """Flag the item of the caller's own assignment (a reason from the project's list, and
    words); with ``skip``, skip it too where the project allows it. The draft is kept."""

    @extend_schema(request=FlagSerializer, responses={201: dict})
    def post(self, request, pk):
        assignment = _writable_own(request, pk)
        body = FlagSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        flag = flags.flag_raise(assignment=assignment, **body.validated_data)
        return Response(_flag_json(flag), status=status.HTTP_201_CREATED)


class SkipView(APIView):
    """Skip the item of the caller's own (unsubmitted) assignment where the project allows it;
    a reason is optional. The item goes back to the pool and never comes back to the caller."""

    @extend_schema(request=SkipSerializer, responses={201: dict})
    def post(self, request, pk):
        assignment = _writable_own(request, pk)
        body = SkipSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        flag = flags.item_skip(assignment=assignment, **body.validated_data)
        return Response(_flag_json(flag), status=status.HTTP_201_CREATED)


class ProjectFlagsView(APIView):
    """The project's flags and skips, newest first (``?state=open`` for the open ones), a page
    of at most 1000 at a time: ``next`` is the address of the next (older) page, null on the last.

    Security: researcher role in the project (404 otherwise)."""

    @extend_schema(responses=dict)
    def get(self, request, slug):
        project = project_for(request.user, slug, RESEARCH_ROLES)
        state = request.query_params.get("state", "")
        if state not in ("", "open", "resolved"):
            raise flags.FlagRefused("state must be open or resolved.", field="state")
        before_text = request.query_params.get("before", "")
        if before_text and not (before_text.isascii() and before_text.isdigit()):
            raise flags.FlagRefused("before must be a flag id (the next link's).", field="before")
        page = flags.project_flags(
            project=project, state=state, before=int(before_text[:18]) if before_text else None
        )
        following = None
        if page.next_before is not None:
            query = urlencode({**({"state": state} if state else {}), "before": page.next_before})
            following = request.build_absolute_uri(f"{request.path}?{query}")
        return Response({"results": page.results, "next": following})


class FlagActionView(APIView):
    """A researcher's action on a flag of the project: answer, resolve, exclude (the item from
    agreement), include, reopen_item (a fixed item: those who skipped it may get it again).

    Security: researcher role in the project; the flag must belong to it (404)."""

    @extend_schema(request=FlagActionSerializer, responses=dict)
    def post(self, request, slug, flag_id):
        project = project_for(request.user, slug, RESEARCH_ROLES)
        flag = flags.flag_for(project=project, flag_id=flag_id)
        body = FlagActionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        flag = flags.flag_act(flag=flag, user=request.user, **body.validated_data)
        return Response(_flag_json(flag))


class CommentsView(APIView):
    """An item's comment thread among researchers and reviewers.

    Security: researcher or reviewer role in the project; the item must belong to it (404)."""

    @extend_schema(responses=dict)
    def get(self, request, slug, item_id):
        project = project_for(request.user, slug, REVIEW_ROLES)
        item = flags.project_item(project=project, item_id=item_id)
        return Response({"results": flags.item_comments(item=item)})

    @extend_schema(request=CommentSerializer, responses={201: dict})
    def post(self, request, slug, item_id):
        project = project_for(request.user, slug, REVIEW_ROLES)
        item = flags.project_item(project=project, item_id=item_id)
        body = CommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        comment = flags.comment_add(item=item, author=request.user, **body.validated_data)
        return Response(
            {"id": comment.pk, "body": comment.body, "author": request.user.username},
            status=status.HTTP_201_CREATED,
        )


class SendBackView(APIView):
    """Send an annotator's current answer back to them with a note; it comes first in their
    queue until they submit it again (a new version; the earlier ones stay).

    Security: researcher or reviewer role in the project; the answer must belong to it (404)."""

    @extend_schema(request=SendBackSerializer, responses={201: dict})
    def post(self, request, slug):
        project = project_for(request.user, slug, REVIEW_ROLES)
        body = SendBackSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        returned = flags.send_back(
            project=project,
            annotation_id=body.validated_data["annotation"],
            reviewer=request.user,
            note=body.validated_data["note"],
        )
        return Response(
            {"id": returned.pk, "version": returned.version, "note": returned.note},
            status=status.HTTP_201_CREATED,
        )
