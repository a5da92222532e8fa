"""The task-type registry (the ``annotation`` app's; Django admin's pattern).

Each task-type package ``task_types/<slug>/`` registers its :class:`TaskType` subclass in its
``task.py``; ``AnnotationConfig.ready()`` imports every installed app's ``task`` module with
``autodiscover_modules``. Nothing here knows any particular task type.
"""

from __future__ import annotations

from core.registry import AlreadyRegistered, NotRegistered, Registry

from .base import (
    ExtraExport,
    PayloadError,
    PreparedItem,
    StrictCharField,
    TaskType,
    json_cell,
)

TaskTypeNotFound = NotRegistered  # the name callers catch

task_type_registry: Registry[TaskType] = Registry("task type")


def register(task_type_class: type[TaskType]) -> type[TaskType]:
    """Class decorator: ``@register class CitationRecovery(TaskType): …`` registers one
    instance under its slug; a second task type with the same slug is refused."""
    task_type_registry.register(task_type_class.slug, task_type_class())
    return task_type_class


def unregister(slug: str) -> None:
    task_type_registry.unregister(slug)


def get(slug: str) -> TaskType:
    return task_type_registry.get(slug)


def all_task_types() -> list[TaskType]:
    return list(task_type_registry)


def choices() -> list[tuple[str, str]]:
    return [(t.slug, t.name) for t in all_task_types()]


__all__ = [
    "AlreadyRegistered",
    "ExtraExport",
    "PayloadError",
    "PreparedItem",
    "StrictCharField",
    "TaskType",
    "TaskTypeNotFound",
    "all_task_types",
    "choices",
    "get",
    "json_cell",
    "register",
    "task_type_registry",
    "unregister",
]
