"""Prompts as data: saving prompt templates (checked against the task type's placeholders), the
shipped built-in records, the template a judge uses on a project, and rendering it for an item.

A template is checked when it is saved, wherever it comes from (the admin, ``load_prompt``, the
model's ``clean()``): every ``{placeholder}`` must be one the task type's ``judging.py``
declares (``JudgePrompt.placeholders``), the output schema must be a JSON schema, and the
parameters only sampling settings. A record a run used never changes: saving different content
under its name makes the next version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import IntegrityError, transaction
from django.db.models import Max

from core.wording import indefinite
from llm_judges import prompts
from llm_judges.models import Judge, JudgeRun, PromptTemplate
from llm_judges.services.errors import JudgeError

if TYPE_CHECKING:
    from projects.models import Project

# Sampling settings a template may fix (a paper's temperature), sent over the judge's own.
TEMPLATE_PARAMETERS: dict[str, tuple[type, float | None, float | None]] = {
    "temperature": (float, 0.0, 2.0),
    "top_p": (float, 0.0, 1.0),
    "max_tokens": (int, 1, 32768),
    "seed": (int, -(2**63), 2**63 - 1),
}


def _registered(task_type: str) -> prompts.JudgePrompt:
    try:
        return prompts.get(task_type)
    except prompts.PromptNotFound as exc:
        raise JudgeError(str(exc), field="task_type") from None


def _check_text(text: str, prompt: prompts.JudgePrompt, *, field: str) -> None:
    try:
        unknown = prompts.unknown_placeholders(text, prompt.placeholders)
    except prompts.PlaceholderError as exc:
        raise JudgeError(f"{field}: {exc}", field=field) from None
    if unknown:
        known = ", ".join("{" + name + "}" for name in prompt.placeholders) or "none"
        raise JudgeError(
            f"{field}: the placeholder {{{unknown[0]}}} is not provided by the "
            f"{prompt.task_type} task type (it provides {known}).",
            field=field,
        )


class TemplateContent(TypedDict):
    """A prompt template's content, checked (``clean_template``): a ``PromptTemplate``'s fields."""

    task_type: str
    system: str
    template: str
    variants: dict[str, str]
    output_schema: Any  # a JSON schema, or None for the task type's
    parameters: dict[str, Any]


def clean_template(
    *,
    task_type: str,
    template: str,
    system: str = "",
    variants: Mapping[str, str] | None = None,
    output_schema: Any = None,
    parameters: Mapping[str, Any] | None = None,
) -> TemplateContent:
    """The template's content, checked (``JudgeError`` naming the field and, for a placeholder
    the task type does not provide, the placeholder); returns the cleaned values."""
    prompt = _registered(task_type)
    if not isinstance(template, str) or not template.strip():
        raise JudgeError("The template is empty.", field="template")
    if not isinstance(system, str):
        raise JudgeError("The system message must be text.", field="system")
    _check_text(system, prompt, field="system")
    _check_text(template, prompt, field="template")
    variants = dict(variants or {})
    for name, text in variants.items():
        if not isinstance(text, str):
            raise JudgeError(f"The variant {name!r} must be text.", field=f"variants.{name}")
        _check_text(text, prompt, field=f"variants.{name}")
    if output_schema in ({}, ""):
        output_schema = None
    if output_schema is not None:
        _check_schema(output_schema)
    return {
        "task_type": task_type,
        "system": system,
        "template": template,
        "variants": variants,
        "output_schema": output_schema,
        "parameters": clean_template_parameters(parameters=parameters),
    }


def _check_schema(schema: Any) -> None:
    import jsonschema

    if not isinstance(schema, dict):
        raise JudgeError("The output schema must be a JSON object.", field="output_schema")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise JudgeError(
            f"The output schema is not a valid JSON schema: {exc.message}", field="output_schema"
        ) from None


def clean_template_parameters(*, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    if parameters in (None, ""):
        return {}
    if not isinstance(parameters, Mapping):
        raise JudgeError("The parameters must be an object.", field="parameters")
    cleaned: dict[str, Any] = {}
    for name, value in parameters.items():
        if name not in TEMPLATE_PARAMETERS:
            known = ", ".join(TEMPLATE_PARAMETERS)
            raise JudgeError(
                f"Unknown parameter {name!r} (a template may set {known}).",
                field=f"parameters.{name}",
            )
        kind, low, high = TEMPLATE_PARAMETERS[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise JudgeError(f"{name} must be a number.", field=f"parameters.{name}")
        if kind is int and value != int(value):
            raise JudgeError(f"{name} must be a whole number.", field=f"parameters.{name}")
        value = kind(value)
        if not low <= value <= high:
            raise JudgeError(
                f"{name} must be between {low} and {high}.", field=f"parameters.{name}"
            )
        cleaned[name] = value
    return cleaned


def _is_used(template: PromptTemplate) -> bool:
    return JudgeRun.objects.filter(prompt=template).exists()


def prompt_template_save(
    *,
    name: str,
    task_type: str,
    template: str,
    system: str = "",
    variants: Mapping[str, str] | None = None,
    output_schema: Any = None,
    parameters: Mapping[str, Any] | None = None,
    note: str = "",
) -> tuple[PromptTemplate, str]:
    """Save a prompt under ``name``: ``(record, what)``, ``what`` being "created" (version 1),
    "unchanged" (the latest version has this content), "updated" (the latest version, unused
    by any run, now has this content) or "new version" (the latest was used: the next version).
    """
    name = (name or "").strip()
    if not name:
        raise JudgeError("The prompt needs a name.", field="name")
    if len(name) > 100:
        raise JudgeError("The name is longer than 100 characters.", field="name")
    content = clean_template(
        task_type=task_type,
        template=template,
        system=system,
        variants=variants,
        output_schema=output_schema,
        parameters=parameters,
    )
    with transaction.atomic():
        latest = (
            PromptTemplate.objects.select_for_update()
            .filter(name=name)
            .order_by("-version")
            .first()
        )
        if latest is not None and latest.task_type != task_type:
            raise JudgeError(
                f"The prompt {name!r} is {indefinite(latest.task_type)} prompt; choose another name.",
                field="name",
            )
        candidate = PromptTemplate(name=name, note=note, **content)
        if latest is None:
            candidate.version = 1
            candidate.save()
            return candidate, "created"
        if latest.content() == candidate.content():
            if note and note != latest.note:
                PromptTemplate.objects.filter(pk=latest.pk).update(note=note)
                latest.note = note
            return latest, "unchanged"
        if not _is_used(latest):
            for field_name, value in content.items():
                setattr(latest, field_name, value)
            latest.note = note or latest.note
            latest.save()
            return latest, "updated"
        candidate.version = latest.version + 1
        candidate.save()
        return candidate, "new version"


def prompt_template_revise(
    *, template: PromptTemplate, changes: Mapping[str, Any], projects: Any = None
) -> tuple[PromptTemplate, str]:
    """Edit a record (the admin): in place while no run used it, else saved as the next version
    of its name. Judges that used the edited record now use the new version (their earlier
    results stay under the old version's key and fingerprint). ``projects`` (a queryset): the
    projects the editor may change; judges of other projects keep the record as it was (so it
    is never edited in place under them)."""
    fields = {
        name: changes.get(name, getattr(template, name))
        for name in ("task_type", "system", "template", "variants", "output_schema", "parameters")
    }
    moved = Judge.objects.filter(prompt=template)
    if projects is not None:
        moved = moved.filter(project__in=projects)
    used = _is_used(template) or (
        projects is not None
        and Judge.objects.filter(prompt=template).exclude(pk__in=moved.values("pk")).exists()
    )
    latest_version = (
        PromptTemplate.objects.filter(name=template.name).aggregate(v=Max("version"))["v"] or 0
    )
    if not used:
        cleaned = clean_template(**fields)
        for name, value in cleaned.items():
            setattr(template, name, value)
        template.note = changes.get("note", template.note)
        template.save()
        return template, "updated"
    cleaned = clean_template(**fields)
    # A shipped record's next version is a researcher's prompt (builtin blank: key name@version).
    new = PromptTemplate(
        name=template.name,
        version=latest_version + 1,
        note=changes.get("note", template.note),
        **cleaned,
    )
    if new.content() == template.content():
        return template, "unchanged"
    with transaction.atomic():
        new.save()
        for judge in moved:
            judge.prompt = new
            judge.save(update_fields=["prompt", "prompt_version", "updated_at"])
    return new, "new version"


def shipped_template(*, task_type: str, version: str | None = None) -> PromptTemplate:
    """The shipped record of a built-in prompt version (the task type's default when
    ``version`` is None), created from the prompt registry the first time it is asked for;
    idempotent (two concurrent callers get the same record)."""
    prompt = _registered(task_type)
    key = version or prompt.default_version
    try:
        wording = prompt.version(key)
    except LookupError as exc:
        raise JudgeError(str(exc), field="judge") from None
    existing = PromptTemplate.objects.filter(task_type=task_type, builtin=key).first()
    if existing is not None:
        return existing
    for _ in range(3):
        taken = PromptTemplate.objects.filter(name=task_type).aggregate(v=Max("version"))["v"]
        record = PromptTemplate(
            name=task_type,
            version=(taken or 0) + 1,
            task_type=task_type,
            system=wording.system,
            template=wording.user,
            variants=dict(wording.variants),
            output_schema=None,
            parameters={},
            note=wording.note,
            builtin=key,
        )
        try:
            with transaction.atomic():
                record.save()
            return record
        except IntegrityError:  # a concurrent caller took the version number
            existing = PromptTemplate.objects.filter(task_type=task_type, builtin=key).first()
            if existing is not None:
                return existing
    raise JudgeError(f"Could not create the shipped {task_type} {key} prompt.")


def template_for(*, judge: Judge, project: Project) -> PromptTemplate:
    """The template ``judge`` renders on ``project``: its own, or the shipped record of the
    task type's built-in version it names. ``JudgeError`` when its template is for another
    task type."""
    template = judge.prompt
    if template is not None:
        if template.task_type != project.task_type:
            raise JudgeError(
                f"{judge.name}'s prompt {template} is for {template.task_type}, not "
                f"{project.task_type}.",
                field="judge",
            )
        return template
    return shipped_template(task_type=project.task_type, version=judge.prompt_version)


def template_messages(
    *, template: PromptTemplate, prompt: prompts.JudgePrompt, item: Any, presentation: str = ""
) -> list[prompts.ChatMessage]:
    """The chat messages of ``template`` for one item in ``presentation`` (the task type's
    ``fields``; "" the usual presentation)."""
    return prompt.messages_for(
        item,
        system=template.system,
        user=template.template,
        variants=template.variants or {},
        presentation=presentation,
    )


def template_response_format(
    *, template: PromptTemplate, prompt: prompts.JudgePrompt, item: Any, presentation: str = ""
) -> dict:
    """The structured output asked for: the template's schema, else the task type's own for the
    item in ``presentation``."""
    if template.output_schema:
        return prompts.json_schema_format(_schema_name(template.name), template.output_schema)
    return prompt.item_response_format(
        item, template.builtin or prompt.default_version, presentation=presentation
    )


def _schema_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
    return cleaned[:64] or "answer"
