from .base import PayloadError, PreparedItem, TaskType
from .registry import AlreadyRegistered, TaskTypeNotFound, all_task_types, choices, get, register

_BUILTIN = ("annotation.task_types.citation_recovery",)
_loaded = False


def load_builtin_task_types() -> None:
    """Import the built-in task type modules once; each registers itself."""
    global _loaded
    if _loaded:
        return
    import importlib

    for module in _BUILTIN:
        importlib.import_module(module)
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
