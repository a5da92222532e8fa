"""Judge prompts and answer parsers, one module per task type (like the task-type registry).

Adding judges for a task type means adding ``llm_judges/prompts/<task_type>.py`` that calls
``register(JudgePrompt(...))``; modules are found automatically.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import (
    KINDS,
    JudgePrompt,
    PromptVersion,
    Unparseable,
    extract_json,
    json_schema_format,
    object_reply,
    read_bool,
    validated_answer,
)

_INFRASTRUCTURE = {"base"}
_registry: dict[str, JudgePrompt] = {}
_loaded = False


class PromptNotFound(LookupError):
    pass


def register(prompt: JudgePrompt) -> JudgePrompt:
    if prompt.task_type in _registry:
        raise ValueError(f"A judge prompt for {prompt.task_type!r} is already registered.")
    if prompt.default_version not in prompt.versions:
        raise ValueError(f"{prompt.task_type}: default version {prompt.default_version!r} is missing.")
    _registry[prompt.task_type] = prompt
    return prompt


def load_prompts() -> None:
    """Import every prompt module of this package once; each registers itself."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _INFRASTRUCTURE and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    _loaded = True


def get(task_type: str) -> JudgePrompt:
    load_prompts()
    try:
        return _registry[task_type]
    except KeyError:
        known = ", ".join(sorted(_registry)) or "none"
        raise PromptNotFound(
            f"No judge prompt for task type {task_type!r} (prompts exist for: {known})."
        ) from None


def all_prompts() -> list[JudgePrompt]:
    load_prompts()
    return [_registry[key] for key in sorted(_registry)]


__all__ = [
    "KINDS",
    "JudgePrompt",
    "PromptNotFound",
    "PromptVersion",
    "Unparseable",
    "all_prompts",
    "extract_json",
    "get",
    "json_schema_format",
    "load_prompts",
    "object_reply",
    "read_bool",
    "register",
    "validated_answer",
]
