"""Reads of the stored export columns (``studies.models.ReadyExportColumns``): which projects
have current human answers whose columns no export or preparation has stored yet. The writes are
``studies.services.exports.export_columns_prepare`` (and every export)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from annotation import task_types
from annotation.models import Annotation
from projects.models import Project


def projects_with_unprepared_columns() -> list[int]:
    """Ids of the projects whose task type stores its export columns
    (``TaskType.export_columns_stored``) and that have a current human answer with none stored,
    oldest project first. Stale columns (an item fixed, a changed config) are not looked for
    here: the next export or preparation of the project makes them anew."""
    stored = [t.slug for t in task_types.all_task_types() if t.export_columns_stored]
    if not stored:
        return []
    unprepared = Annotation.objects.filter(
        item__project=OuterRef("pk"), is_current=True, ready_export__isnull=True
    )
    return list(
        Project.objects.filter(task_type__in=stored)
        .filter(Exists(unprepared))
        .order_by("id")
        .values_list("id", flat=True)
    )
