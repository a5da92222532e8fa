"""Review of disagreements, for every project (crowd or not): the list of disputed items, the
way to the next one, one item in the task type's own UI with every answer, and the API that
records the final answer (``annotation.review`` holds the reads and the write).

Security, per view, in the docstrings: the researcher or reviewer role in the project (404 to
anyone else), through ``project_for``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import flags, review, task_types
from annotation.models import Item
from annotation.references import item_reference
from projects.permissions import RESEARCH_ROLES, REVIEW_ROLES, has_role, project_for


@login_required
@require_GET
def review_list(request, slug):
    """Items where the counted annotators disagree (by the task type's agreement key), with
    whether a majority exists and whether a final answer was recorded.

    Security: researcher or reviewer role in the project (404 otherwise)."""
    project = project_for(request.user, slug, REVIEW_ROLES)
    unresolved = request.GET.get("show") != "all"
    after = _review_cursor(request.GET.get("after", ""))
    page = review.disputed_page(
        project=project, unresolved_only=unresolved, after=after, limit=review.REVIEW_PAGE
    )
    following = page.next_after
    return render(
        request,
        "annotation/review_list.html",
        {
            "project": project,
            "items": page.rows,
            "next_after": f"{following[0]}.{following[1]}" if following else "",
            "paged": after != (-1, 0),
            "unresolved": unresolved,
            "task_type": task_types.get(project.task_type),
        },
    )


def _review_cursor(text: str) -> tuple[int, int]:
    """The review list's ``after`` ("position.id"); the first page for anything else."""
    position, _, item_id = text.partition(".")
    if (
        len(text) <= 40
        and (position + item_id).isascii()
        and position.isdigit()
        and item_id.isdigit()
    ):
        return int(position), int(item_id)
    return (-1, 0)


@login_required
@require_GET
def review_next(request, slug):
    """The first disputed item still without a final answer (after a decision the reviewer goes
    on there), or the list when none is left.

    Security: researcher or reviewer role in the project (404 otherwise)."""
    project = project_for(request.user, slug, REVIEW_ROLES)
    pending = review.disputed_page(project=project, unresolved_only=True, limit=1).rows
    if not pending:
        messages.success(request, "No disputed item is waiting for a final answer.")
        return redirect("review-list", slug=project.slug)
    return redirect("review-item", slug=project.slug, item_id=pending[0]["item_id"])


@login_required
@require_GET
def review_item(request, slug, item_id):
    """One disputed item in the task type's own UI, with every annotator's answer, the majority
    and the form for the final answer.

    Security: researcher or reviewer role in the project; the item must belong to it (404)."""
    project = project_for(request.user, slug, REVIEW_ROLES)
    data = review.review_item(project=project, item_id=item_id)
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    for answer in data["answers"]:
        answer["text"] = task_type.answer_text(answer["answer"], item=data["item"])
    adjudication = data["adjudication"]
    majority_answer = next(
        (
            a["answer"]
            for a in data["answers"]
            if a["key"] == data["majority_key"] and not a["excluded"]
        ),
        None,
    )
    return render(
        request,
        task_type.template_name,
        {
            "project": project,
            "task_type": task_type,
            "task_config": task_type.annotator_config(config),
            "review": data,
            "majority_text": next(
                (
                    a["text"]
                    for a in data["answers"]
                    if a["key"] == data["majority_key"] and not a["excluded"]
                ),
                "",
            ),
            "is_researcher": has_role(request.user, project, RESEARCH_ROLES),
            "review_reference": item_reference(item_id=data["item"].pk),
            "discussion": {
                "item_id": data["item"].pk,
                "comments": flags.item_comments(item=data["item"]),
                "back": "review",
            },
            "review_data": {
                "task_type": task_type.slug,
                "item": data["display"],
                "answers": [a["answer"] for a in data["answers"]],
                "initial": adjudication.answer if adjudication else majority_answer,
                "note": adjudication.note if adjudication else "",
                "submit_url": reverse("api-adjudication", args=[project.slug, data["item"].pk]),
                "next_url": reverse("review-next", args=[project.slug]),
                "send_back_url": reverse("api-send-back", args=[project.slug]),
            },
        },
    )


class AdjudicationSerializer(serializers.Serializer):
    answer = serializers.JSONField()
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class AdjudicationView(APIView):
    """Record the final answer of an item (validated by the task type like an annotator's).

    Security: researcher or reviewer role in the project (404 otherwise); the item must belong
    to the project (404)."""

    @extend_schema(request=AdjudicationSerializer, responses=dict)
    def post(self, request, slug, item_id):
        project = project_for(request.user, slug, REVIEW_ROLES)
        item = Item.objects.select_related("project").filter(project=project, pk=item_id).first()
        if item is None:
            raise Http404("No such item.")
        body = AdjudicationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = review.adjudication_record(  # an invalid answer is a Refusal: JSON 400
            item=item,
            reviewer=request.user,
            answer=body.validated_data["answer"],
            note=body.validated_data["note"],
        )
        return Response(
            {"version": decision.version, "answer": decision.answer}, status=status.HTTP_201_CREATED
        )
