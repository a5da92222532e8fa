"""Hooks a higher app fills in its ``AppConfig.ready()`` so that ``annotation`` never imports it.

``assignment_scopes``: functions ``(assignments, *, user) -> assignments`` that narrow what a
user may reach of their own assignments. ``crowd`` registers one: a crowd login reaches only the
work of its current platform session (``crowd.selectors.in_current_session``).

``counter_rebuilds``: functions ``(*, project_id) -> None`` that recompute a higher app's
trigger-kept counters of one project from the rows, called by
``annotation.services.counts_rebuild`` (``manage.py recount``) in its transaction. ``llm_judges``
registers one: its judge result counter (``llm_judges.counter_triggers.results_recount``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet

AssignmentScope = Callable[..., QuerySet]

assignment_scopes: list[AssignmentScope] = []


def register_assignment_scope(scope: AssignmentScope) -> AssignmentScope:
    if scope not in assignment_scopes:
        assignment_scopes.append(scope)
    return scope


def reachable(assignments: QuerySet, *, user) -> QuerySet:
    """``assignments`` narrowed by every registered scope."""
    for scope in assignment_scopes:
        assignments = scope(assignments, user=user)
    return assignments


CounterRebuild = Callable[..., None]

counter_rebuilds: list[CounterRebuild] = []


def register_counter_rebuild(rebuild: CounterRebuild) -> CounterRebuild:
    if rebuild not in counter_rebuilds:
        counter_rebuilds.append(rebuild)
    return rebuild
