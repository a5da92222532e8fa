"""The judge-prompt registry: a task type gets judges by defining ``judging.py`` in its package
that calls ``register(JudgePrompt(...))``; ``LlmJudgesConfig.ready()`` imports every installed
app's ``judging`` module.
"""

from __future__ import annotations

import inspect

from core.registry import NotRegistered, Registry

from .base import (
    KINDS,
    ChatMessage,
    JudgePrompt,
    PlaceholderError,
    PromptVersion,
    Unparseable,
    extract_json,
    fingerprint_of,
    json_schema_format,
    matches_schema,
    object_reply,
    placeholders_in,
    read_bool,
    render,
    render_messages,
    reply_body,
    unknown_placeholders,
    validated_answer,
)

PromptNotFound = NotRegistered  # the name callers catch

prompt_registry: Registry[JudgePrompt] = Registry("judge prompt")


def register(prompt: JudgePrompt) -> JudgePrompt:
    if prompt.default_version not in prompt.versions:
        raise ValueError(
            f"{prompt.task_type}: default version {prompt.default_version!r} is missing."
        )
    if not prompt.placeholders:
        raise ValueError(
            f"{prompt.task_type}: the judge prompt declares no placeholders; pass placeholders= "
            "(name -> what it holds) and fields= (item -> their values)."
        )
    for key, version in prompt.versions.items():  # the shipped wordings use only those
        for text in (version.system, version.user, *version.variants.values()):
            unknown = unknown_placeholders(text, prompt.placeholders)
            if unknown:
                raise ValueError(
                    f"{prompt.task_type} {key}: placeholder {{{unknown[0]}}} is not declared."
                )
    _check_presentation_keyword(prompt)
    return prompt_registry.register(prompt.task_type, prompt)


def _check_presentation_keyword(prompt: JudgePrompt) -> None:
    """A task type with other presentations takes ``presentation=`` where the item is shown."""
    if not prompt.presentations:
        return
    for name in ("fields", "response_format", "parse"):
        parameter = inspect.signature(getattr(prompt, name)).parameters.get("presentation")
        if parameter is None or parameter.kind not in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            raise ValueError(
                f"{prompt.task_type}: the judge prompt declares presentations, so its {name} "
                "must take the keyword argument presentation."
            )


def get(task_type: str) -> JudgePrompt:
    return prompt_registry.get(task_type)


def all_prompts() -> list[JudgePrompt]:
    return list(prompt_registry)


__all__ = [
    "KINDS",
    "ChatMessage",
    "JudgePrompt",
    "PlaceholderError",
    "PromptNotFound",
    "PromptVersion",
    "Unparseable",
    "all_prompts",
    "extract_json",
    "fingerprint_of",
    "placeholders_in",
    "render",
    "render_messages",
    "unknown_placeholders",
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
