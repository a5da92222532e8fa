"""The judge-prompt registry: a task type gets judges by defining ``judging.py`` in its package
that calls ``register(JudgePrompt(...))``; ``LlmJudgesConfig.ready()`` imports every installed
app's ``judging`` module.
"""

from __future__ import annotations

from core.registry import NotRegistered, Registry

from .base import (
    KINDS,
    JudgePrompt,
    PromptVersion,
    Unparseable,
    extract_json,
    json_schema_format,
    matches_schema,
    object_reply,
    read_bool,
    reply_body,
    validated_answer,
)

PromptNotFound = NotRegistered  # the name callers catch

prompt_registry: Registry[JudgePrompt] = Registry("judge prompt")


def register(prompt: JudgePrompt) -> JudgePrompt:
    if prompt.default_version not in prompt.versions:
        raise ValueError(
            f"{prompt.task_type}: default version {prompt.default_version!r} is missing."
        )
    return prompt_registry.register(prompt.task_type, prompt)


def get(task_type: str) -> JudgePrompt:
    return prompt_registry.get(task_type)


def all_prompts() -> list[JudgePrompt]:
    return list(prompt_registry)


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
    "matches_schema",
    "prompt_registry",
    "object_reply",
    "read_bool",
    "reply_body",
    "register",
    "validated_answer",
]
