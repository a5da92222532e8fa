"""Judge configuration: creating a judge, and the prompt a judge uses on a project."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_judges import prompts
from llm_judges.models import Judge, PromptTemplate
from llm_judges.parameters import clean_model, clean_parameters
from llm_judges.services.errors import JudgeError

if TYPE_CHECKING:
    from projects.models import Project


def judge_create(
    *,
    name: str,
    kind: str,
    model: str,
    parameters: dict | None = None,
    prompt_version: str = "v1",
    description: str = "",
    prompt: PromptTemplate | None = None,
) -> Judge:
    """Create a judge after validating its model and parameters (defaults filled in). With
    ``prompt`` (LLM judges) it renders that template, on projects of its task type only."""
    cleaned = clean_parameters(kind, parameters)
    if prompt is not None and kind != Judge.Kind.LLM:
        raise JudgeError("Prompt templates are for LLM judges.", field="prompt")
    return Judge.objects.create(
        name=name,
        kind=kind,
        model=clean_model(kind, model),
        parameters=cleaned,
        prompt_version=prompt.key if prompt is not None else prompt_version,
        prompt=prompt,
        description=description,
    )


def _prompt_for(judge: Judge, project: Project) -> prompts.JudgePrompt:
    """The prompt of the project's task type, if ``judge`` can run on it (its prompt version
    exists, its kind is supported); ``JudgeError`` otherwise."""
    try:
        prompt = prompts.get(project.task_type)
    except LookupError as exc:
        raise JudgeError(str(exc)) from None
    if judge.prompt_id is not None:
        if judge.prompt.task_type != project.task_type:
            raise JudgeError(
                f"{judge.name}'s prompt {judge.prompt} is for {judge.prompt.task_type}, not "
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
