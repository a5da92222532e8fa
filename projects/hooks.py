"""Hooks a higher app fills in its ``AppConfig.ready()`` so that ``projects`` never imports it.

``annotator_left``: functions ``(*, project_id, user_id, now) -> None`` called inside the
transaction that removes an annotator from a project or gives them another role
(``projects.members``). ``annotation`` registers one: the member's reservations are given back
and their open batches stopped, as when they are disqualified, so that the items they held are
dealt to others at once instead of waiting for the reservations to expire.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

AnnotatorLeft = Callable[..., None]

annotator_left: list[AnnotatorLeft] = []


def register_annotator_left(hook: AnnotatorLeft) -> AnnotatorLeft:
    if hook not in annotator_left:
        annotator_left.append(hook)
    return hook


def announce_annotator_left(*, project_id: int, user_id: int, now: datetime) -> None:
    for hook in annotator_left:
        hook(project_id=project_id, user_id=user_id, now=now)
