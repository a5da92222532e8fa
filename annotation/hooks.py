"""Hooks a higher app fills in its ``AppConfig.ready()`` so that ``annotation`` never imports it.

``assignment_scopes``: functions ``(assignments, *, user) -> assignments`` that narrow what a
user may reach of their own assignments. ``crowd`` registers one: a crowd login reaches only the
work of its current platform session (``crowd.selectors.in_current_session``).
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
