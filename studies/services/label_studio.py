"""A Label Studio project imported in one step: its JSON export and labeling config, uploaded
together (the project page's Label Studio form and ``POST /api/projects/SLUG/import/label-studio/``),
become the project's items and the external coders' answers, all or nothing, through the task
type's own ``import_label_studio`` (questionnaire, ranking); the task type says whether it reads
Label Studio projects (``TaskType.label_studio``), so nothing here knows which do."""

from __future__ import annotations

from typing import Any, TypedDict

from django.core.files.uploadedfile import UploadedFile

from annotation import task_types
from projects.models import Project
from studies.services.import_jobs import upload_size_check
from studies.services.imports import ImportFailed


class LabelStudioResult(TypedDict):
    summary: str
    items: int
    annotations: int
    predictions: int
    coders: int
    cancelled: int
    empty: int
    config_replaced: bool
    not_mapped: list[str]


def label_studio_import_upload(
    *, project: Project, export_file: UploadedFile, config_file: UploadedFile, source: str = ""
) -> LabelStudioResult:
    """Import an uploaded Label Studio export with its labeling config into ``project`` (see the
    module docstring). Raises ``ImportFailed`` naming the field (``file``: the export,
    ``labeling_config``: the config) and the task's index; nothing is imported then."""
    task_type = task_types.get(project.task_type)
    if not task_type.label_studio:
        raise ImportFailed(
            f"Nothing imported. A {task_type.name} project does not read Label Studio projects.",
            field="file",
        )
    upload_size_check(upload=export_file, field="file")
    upload_size_check(upload=config_file, field="labeling_config")
    try:
        xml = config_file.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed(
            f"Nothing imported. The labeling config is not UTF-8 text (byte {exc.start}).",
            field="labeling_config",
        ) from None
    name = (source or getattr(export_file, "name", "") or "Label Studio")[:200]
    done: Any = task_type.import_label_studio(
        project=project, export=export_file.read(), labeling_config=xml, source=name
    )
    return LabelStudioResult(
        summary=done.summary(),
        items=done.items,
        annotations=done.annotations,
        predictions=done.predictions,
        coders=done.coders,
        cancelled=done.cancelled,
        empty=done.empty,
        config_replaced=done.config_replaced,
        not_mapped=list(done.not_mapped),
    )
