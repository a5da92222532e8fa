"""Judge configuration: creating and copying a project's judges, where an LLM judge's calls go
(its staff-approved endpoint), and the prompt a judge uses on a project."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from llm_judges import prompts
from llm_judges.backends.errors import ConfigError
from llm_judges.models import EndpointConnection, Judge, ModelEndpoint, PromptTemplate
from llm_judges.parameters import clean_model, clean_parameters
from llm_judges.services.errors import JudgeError
from projects.audit import AuditKind, audit_record

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from projects.models import Project


def judge_create(
    *,
    project: Project | None,
    name: str,
    kind: str,
    model: str,
    endpoint: ModelEndpoint | None = None,
    parameters: dict | None = None,
    prompt_version: str = "v1",
    description: str = "",
    prompt: PromptTemplate | None = None,
    by: AbstractBaseUser | None = None,
) -> Judge:
    """Create a judge of ``project`` (None: a staff catalogue judge) after validating its model
    and parameters (defaults filled in). An LLM judge's ``endpoint`` must be one the project may
    use (``JudgeError`` otherwise); without one it keeps its results but cannot run. With
    ``prompt`` (LLM judges) it renders that template, on projects of its task type only.
    ``by``: who, for the project's audit log."""
    cleaned = clean_parameters(kind, parameters)
    if project is not None:
        kind_check(kind=kind, task_type=project.task_type)
    if prompt is not None and kind != Judge.Kind.LLM:
        raise JudgeError("Prompt templates are for LLM judges.", field="prompt")
    endpoint_check(endpoint=endpoint, kind=kind, project=project)
    try:
        with transaction.atomic():
            judge = Judge.objects.create(
                project=project,
                name=name,
                kind=kind,
                model=clean_model(kind, model),
                endpoint=endpoint,
                parameters=cleaned,
                prompt_version=prompt.key if prompt is not None else prompt_version,
                prompt=prompt,
                description=description,
            )
            if project is not None:
                _audit_created(judge, project, by)
            return judge
    except IntegrityError:
        raise JudgeError(
            f"The project has a judge named {name!r} already.", code="conflict", field="name"
        ) from None


def _audit_created(judge: Judge, project: Project, by: AbstractBaseUser | None) -> None:
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.JUDGE_CREATED,
        summary=f"Created the {judge.kind} judge {judge.name} ({judge.model}).",
        changes={
            "judge": judge.name,
            "kind": judge.kind,
            "model": judge.model,
            "endpoint": judge.endpoint.name if judge.endpoint is not None else None,
            "prompt_version": judge.prompt_version,
        },
    )


def kinds_supported(*, task_type: str) -> tuple[str, ...]:
    """The judge kinds that can judge items of ``task_type`` (its judging module's)."""
    try:
        return tuple(prompts.get(task_type).kinds)
    except prompts.PromptNotFound:
        return ()


def kind_check(*, kind: str, task_type: str) -> None:
    """Refuse a judge of a kind the project's task type cannot run (found by the outside probe:
    the judges page said "ready" for one, which then could never run)."""
    kinds = kinds_supported(task_type=task_type)
    if kind not in kinds:
        label = dict(Judge.Kind.choices).get(kind, kind)
        supported = ", ".join(str(dict(Judge.Kind.choices).get(k, k)) for k in kinds) or "none"
        raise JudgeError(
            f"{task_type} items cannot be judged by {label} judges (its judges: {supported}).",
            field="kind",
        )


def endpoint_check(*, endpoint: ModelEndpoint | None, kind: str, project: Project | None) -> None:
    """Refuse an endpoint on a judge that calls none, or one the project may not use."""
    if endpoint is None:
        return
    if kind != Judge.Kind.LLM:
        raise JudgeError("Only LLM judges call a model endpoint.", field="endpoint")
    if not endpoint.allows(project.pk if project is not None else None) and project is not None:
        raise JudgeError(
            f"The model endpoint {endpoint.name!r} is not open to this project; staff choose "
            "which projects may use an endpoint.",
            code="forbidden",
            field="endpoint",
        )


def judge_copy(
    *, judge: Judge, project: Project, name: str = "", by: AbstractBaseUser | None = None
) -> Judge:
    """A copy of ``judge`` (a catalogue judge, or one of ``project``'s own under a new name) as
    ``project``'s own judge: same kind, model, parameters, prompt and description. Changing
    either never changes the other. Another project's judge is refused: nothing of another
    project is usable here. The endpoint is kept only if ``project`` may use it (an LLM judge
    copied without one needs an endpoint chosen before it runs)."""
    if judge.project_id is not None and judge.project_id != project.pk:
        raise JudgeError(
            f"{judge.name} is another project's judge; copy a catalogue judge, or describe it "
            "in this project's study file.",
            code="forbidden",
            field="judge",
        )
    endpoint = judge.endpoint
    if endpoint is not None and not endpoint.allows(project.pk):
        endpoint = None
    return judge_create(
        project=project,
        name=name or judge.name,
        kind=judge.kind,
        model=judge.model,
        endpoint=endpoint,
        parameters=judge.parameters,
        prompt_version=judge.prompt_version,
        prompt=judge.prompt,
        description=judge.description,
        by=by,
    )


def judge_endpoint_set(
    *, judge: Judge, endpoint: ModelEndpoint, by: AbstractBaseUser | None = None
) -> Judge:
    """Point a project's LLM judge that has not run at one of the project's endpoints (a copied
    judge, or one loaded from a bundle). A judge that has run keeps its endpoint: its results
    are kept by judge. ``by``: who, for the project's audit log."""
    if judge.runs.exists():
        raise JudgeError(
            f"{judge.name} has run, so its endpoint cannot change (results are kept by judge); "
            "copy it under a new name.",
            code="conflict",
            field="endpoint",
        )
    endpoint_check(endpoint=endpoint, kind=judge.kind, project=judge.project)
    before = judge.endpoint.name if judge.endpoint is not None else None
    if judge.endpoint_id == endpoint.pk:
        return judge
    with transaction.atomic():
        judge.endpoint = endpoint
        judge.save(update_fields=["endpoint", "updated_at"])
        if judge.project is not None:
            audit_record(
                project=judge.project,
                actor=by,
                kind=AuditKind.JUDGE_CHANGED,
                summary=f"Set the endpoint of the judge {judge.name} to {endpoint.name}.",
                changes={
                    "judge": judge.name,
                    "endpoint": {"before": before, "after": endpoint.name},
                },
            )
    return judge


def judge_connection(*, judge: Judge, project: Project) -> EndpointConnection | None:
    """Where an LLM judge's calls go, checked when a batch starts: its endpoint's URL, key
    variable and network permission (``ConfigError`` when it has none, or staff withdrew it
    from the project). Other kinds call nothing: None."""
    if judge.kind != Judge.Kind.LLM:
        return None
    endpoint = judge.endpoint
    if endpoint is None:
        raise ConfigError(
            f"The judge {judge.name} has no model endpoint; choose one of the endpoints staff "
            "set up for the project."
        )
    if judge.project_id != project.pk or not endpoint.allows(project.pk):
        raise ConfigError(
            f"The model endpoint {endpoint.name} is not open to this project (staff choose which "
            "projects may use it)."
        )
    return endpoint.connection()


def _prompt_for(judge: Judge, project: Project) -> prompts.JudgePrompt:
    """The prompt of the project's task type, if ``judge`` can run on it (its prompt version
    exists, its kind is supported, it is the project's own); ``JudgeError`` otherwise."""
    if judge.project_id != project.pk:
        raise JudgeError(
            f"{judge.name} is not a judge of this project; copy it into the project first.",
            field="judge",
        )
    try:
        prompt = prompts.get(project.task_type)
    except LookupError as exc:
        raise JudgeError(str(exc)) from None
    template = judge.prompt
    if template is not None:
        if template.task_type != project.task_type:
            raise JudgeError(
                f"{judge.name}'s prompt {template} is for {template.task_type}, not "
                f"{project.task_type}.",
                field="judge",
            )
    else:
        try:
            prompt.version(judge.prompt_version)
        except LookupError as exc:
            raise JudgeError(str(exc), field="judge") from None
    if judge.kind not in prompt.kinds:
        raise JudgeError(
            f"{project.task_type} has no {judge.kind} judge (supported: {', '.join(prompt.kinds)}).",
            field="judge",
        )
    return prompt
