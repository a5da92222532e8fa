"""Registry of task types, filled in ``AnnotationConfig.ready()`` (Django admin's pattern)."""

from __future__ import annotations

from .base import TaskType


class TaskTypeNotFound(LookupError):
    pass


class AlreadyRegistered(ValueError):
    pass


_registry: dict[str, TaskType] = {}


def register(task_type: TaskType) -> TaskType:
    if task_type.slug in _registry:
        raise AlreadyRegistered(f"Task type {task_type.slug!r} is already registered.")
    _registry[task_type.slug] = task_type
    return task_type


def unregister(slug: str) -> None:
    _registry.pop(slug, None)


def get(slug: str) -> TaskType:
    try:
        return _registry[slug]
    except KeyError:
        known = ", ".join(sorted(_registry)) or "none"
        raise TaskTypeNotFound(f"Unknown task type {slug!r} (registered: {known}).") from None


def all_task_types() -> list[TaskType]:
    return [_registry[slug] for slug in sorted(_registry)]


def choices() -> list[tuple[str, str]]:
    return [(t.slug, t.name) for t in all_task_types()]
