"""Pre-selection: showing a judge's answers to the project's annotators (off by default), and
recording every showing."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from annotation.models import Assignment
from llm_judges.models import Judge, Preselection, PreselectionShown
from llm_judges.services.configuration import _prompt_for
from llm_judges.services.errors import JudgeError

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from projects.models import Project


def preselection_enable(
    *, project: Project, judge: Judge, enabled_by: User | None = None
) -> Preselection:
    """Show ``judge``'s answers to the project's annotators as a pre-selection (off by default:
    a visible suggestion anchors people; every showing is recorded).

    Refused (``JudgeError``, with the reason for the judges page) when the judge cannot run on
    the project (code ``"invalid"``), and in a project that deals control items (``"conflict"``),
    where it could never be shown without pointing at the controls. Enabled but not yet shown
    while the judge lacks answers for some items (``selectors.preselection_blocker`` says why;
    it starts once they are there)."""
    from llm_judges.selectors import CONTROLS_DEALT, preselection_blocker

    _prompt_for(judge, project)
    blocker = preselection_blocker(
        project=project, judge=judge, prompt_version=judge.prompt_version
    )
    if blocker == CONTROLS_DEALT:
        raise JudgeError(blocker, code="conflict")
    preselection, _ = Preselection.objects.update_or_create(
        project=project,
        defaults={"judge": judge, "prompt_version": judge.prompt_version, "enabled_by": enabled_by},
    )
    return preselection


def preselection_disable(*, project: Project) -> None:
    """Annotators of the project see no pre-selection any more."""
    Preselection.objects.filter(project=project).delete()


class PreselectionShownAnswer(TypedDict):
    """A pre-selection as an annotator was shown it."""

    judge: str  # the judge's name
    answer: dict[str, Any]  # the fields the judge fills, in the task type's answer shape
    shown_at: datetime


def preselection_show(*, assignment: Assignment) -> PreselectionShownAnswer | None:
    """The judge's answer to pre-select on this assignment, recording that it was shown; None
    when the project shows none now (``selectors.preselection_blocker``: then on every item
    alike, so a None says nothing about the item), on anything but a regular item, and when
    there is no pre-selection. Showing the same assignment again, while the project shows
    pre-selections, returns what was shown the first time."""
    from llm_judges.selectors import preselection_answer

    found = preselection_answer(project=assignment.project, item=assignment.item)
    if found is None:
        return None
    shown = PreselectionShown.objects.select_related("judge").filter(assignment=assignment).first()
    if shown is not None:
        return PreselectionShownAnswer(
            judge=shown.judge.name, answer=shown.answer, shown_at=shown.shown_at
        )
    judge, result, answer = found
    shown, _ = PreselectionShown.objects.get_or_create(
        assignment=assignment, defaults={"judge": judge, "result": result, "answer": answer}
    )
    return PreselectionShownAnswer(judge=judge.name, answer=shown.answer, shown_at=shown.shown_at)
