"""The project's audit log page (``/p/<slug>/audit/``) and API (``/api/projects/<slug>/audit/``).

Researchers of the project only (``project_for``: 404 to anyone else). Newest first, 50 a page,
paged by the last id shown (``?before=``), filtered by kind, person (username, or ``system``)
and days (``since``, ``until``: YYYY-MM-DD, UTC, both included); a bad filter is a 400 naming
the parameter. The page reads a constant number of queries whatever the number of entries.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import Refusal
from projects.audit import AuditKind
from projects.permissions import RESEARCH_ROLES, IsProjectResearcher, project_for
from projects.selectors import (
    SYSTEM_ACTOR,
    AuditFilter,
    audit_actors,
    audit_before_from_query,
    audit_entries,
    audit_filter_from_query,
)

LABELS = dict(AuditKind.choices)


CHANGES_SHOWN = 4000  # characters of an entry's changes on the page (the API gives them all)


def _changes_text(changes: dict) -> str:
    if not changes:
        return ""
    text = json.dumps(changes, indent=1, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= CHANGES_SHOWN else text[:CHANGES_SHOWN] + "\n…"


@login_required
@require_GET
def project_audit(request, slug):
    """The log, one page of it, with the filter form."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    context = {
        "project": project,
        "kinds": AuditKind.choices,
        "actors": audit_actors(project=project),
        "system_actor": SYSTEM_ACTOR,
        "params": request.GET,
    }
    try:
        audit_filter = audit_filter_from_query(params=request.GET)
        page = audit_entries(
            project=project,
            audit_filter=audit_filter,
            before=audit_before_from_query(params=request.GET),
        )
    except Refusal as refusal:
        return render(
            request, "studies/audit.html", {**context, "error": refusal}, status=refusal.status
        )
    next_query = (
        urlencode({**audit_filter.query(), "before": page.next_before})
        if page.next_before is not None
        else ""
    )
    return render(
        request,
        "studies/audit.html",
        {
            **context,
            "page": page,
            "rows": [
                (entry, LABELS.get(entry.kind, entry.kind), _changes_text(entry.changes))
                for entry in page.entries
            ],
            "filtered": audit_filter != AuditFilter(),
            "paged": "before" in request.GET,
            "first_query": urlencode(audit_filter.query()),
            "next_query": next_query,
        },
    )


class AuditEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    kind = serializers.CharField()
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    summary = serializers.CharField()
    changes = serializers.JSONField()


class AuditPageSerializer(serializers.Serializer):
    results = AuditEntrySerializer(many=True)
    next_before = serializers.IntegerField(
        allow_null=True, help_text="Pass as ?before= for the next (older) page; null: last page."
    )


class AuditListView(APIView):
    """GET: the project's audit log, newest first, 50 entries a page (``?before=`` the
    ``next_before`` of the previous page), filtered by ``kind``, ``actor`` (a username, or
    ``system``) and ``since``/``until`` (YYYY-MM-DD, UTC, both included)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", OpenApiTypes.STR, enum=AuditKind.values),
            OpenApiParameter("actor", OpenApiTypes.STR),
            OpenApiParameter("since", OpenApiTypes.DATE),
            OpenApiParameter("until", OpenApiTypes.DATE),
            OpenApiParameter("before", OpenApiTypes.INT),
        ],
        responses=AuditPageSerializer,
    )
    def get(self, request, slug):
        page = audit_entries(
            project=self.project,
            audit_filter=audit_filter_from_query(params=request.query_params),
            before=audit_before_from_query(params=request.query_params),
        )
        return Response(
            AuditPageSerializer({"results": page.entries, "next_before": page.next_before}).data
        )
