"""Reads of the stored export columns (``studies.models.ReadyExportColumns``): which projects
have answers, items or a config changed since a worker last prepared their columns. The writes
are ``studies.services.exports.export_columns_prepare`` (and every export)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import OuterRef, Subquery

from annotation import task_types
from annotation.models import ProjectAnswerCounts, ProjectItemCounts
from projects.models import Project
from studies.models import ExportColumnsState


def columns_version(
    *, answers_revision: int | None, items_revision: int | None, updated_at: datetime | None
) -> str:
    """What a project's stored columns depend on, as :class:`ExportColumnsState` records it:
    its answers revision and items revision (moved by every insert, change or delete of an
    answer or an item, by triggers) and when the project (its config) last changed."""
    return f"{answers_revision or 0}:{items_revision or 0}:{updated_at.isoformat() if updated_at else ''}"


def project_columns_version(*, project_id: int) -> str:
    """The current :func:`columns_version` of one project (one query)."""
    return _versions(Project.objects.filter(pk=project_id))[0][1]


def projects_with_unprepared_columns() -> list[int]:
    """Ids of the projects whose task type stores its export columns
    (``TaskType.export_columns_stored``) and whose data version has moved since a worker last
    prepared them (or never prepared), oldest project first: one query, whatever the number of
    answers (the counters are kept by triggers)."""
    stored = [t.slug for t in task_types.all_task_types() if t.export_columns_stored]
    if not stored:
        return []
    return [
        project_id
        for project_id, version, prepared in _versions(Project.objects.filter(task_type__in=stored))
        if version != prepared
    ]


def _versions(projects) -> list[tuple[int, str, str | None]]:
    """``(id, current version, version last prepared or None)`` of ``projects``, by id."""
    of_project = OuterRef("pk")
    rows = (
        projects.annotate(
            answers_revision=Subquery(
                ProjectAnswerCounts.objects.filter(project_id=of_project).values(
                    "annotations_revision"
                )[:1]
            ),
            items_revision=Subquery(
                ProjectItemCounts.objects.filter(project_id=of_project).values("items_revision")[:1]
            ),
            prepared=Subquery(
                ExportColumnsState.objects.filter(project_id=of_project).values("version")[:1]
            ),
        )
        .order_by("id")
        .values_list("id", "answers_revision", "items_revision", "updated_at", "prepared")
    )
    return [
        (
            project_id,
            columns_version(answers_revision=answers, items_revision=items, updated_at=updated_at),
            prepared,
        )
        for project_id, answers, items, updated_at, prepared in rows
    ]
