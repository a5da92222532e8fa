"""Task types: one module per task type in this package registers a ``TaskType``."""

import importlib
import pkgutil

from .base import PayloadError, PreparedItem, TaskType
from .registry import AlreadyRegistered, TaskTypeNotFound, all_task_types, choices, get, register

_INFRASTRUCTURE = {"base", "registry"}
_loaded = False


def load_builtin_task_types() -> None:
    """Import every task-type module of this package once; each registers itself. Adding a task
    type is adding a module here (plus its template and JS file): no list to edit."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _INFRASTRUCTURE and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    _loaded = True


__all__ = [
    "AlreadyRegistered",
    "PayloadError",
    "PreparedItem",
    "TaskType",
    "TaskTypeNotFound",
    "all_task_types",
    "choices",
    "get",
    "load_builtin_task_types",
    "register",
]
