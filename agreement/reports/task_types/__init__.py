"""Task-specific report sections: one module per task type, named after its slug.

A module defines ``section(report_input: ReportInput) -> dict`` returning::

    {
        "title": "Citation recovery",
        "summary": [{"label": "F1", "value": "0.63 ± 0.29"}, ...],   # headline figures
        "tables": {name: table, ...},          # agreement.reports.tables format, display order
        "plots": [plot spec, ...],              # see agreement.reports.plots.render
        "notes": ["...", ...],
        "comparison": {"scalars": {name: value}, "vector_title": str, "vector": {name: value}},
    }

``comparison`` feeds the original-versus-reproduction view: every scalar and vector entry is
shown side by side with CV*, and Spearman's rho is taken over each vector. A module may instead
give ``"vectors": {title: {name: value}}`` for several result vectors (e.g. MAR per system, one
vector per criterion), and ``"domains": {title: [low, high]}`` for the axis of a vector's chart.

A module that needs more of an item than its id, group and gold defines
``item_extra(payload: dict, prepared: dict) -> dict``: the reports layer then reads payloads
(in chunks) and keeps only what it returns, as ``ItemInfo.extra`` (e.g. the system behind each
ranking key, a stance item's claim, veracity and level).

Modules are found by name, so a new task type adds its report without editing a shared list; a
task type without a module gets the generic agreement table only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from agreement.reports.inputs import ReportInput

Section = Callable[[ReportInput], dict]


def section_for(task_type: str) -> Section | None:
    """The ``section`` function of the report module for ``task_type``, or None if it has none."""
    if not task_type.isidentifier():
        return None
    try:
        module = importlib.import_module(f"{__name__}.{task_type}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{task_type}":
            return None
        raise
    return module.section


def item_extra_for(task_type: str) -> Callable[[dict, dict], dict] | None:
    """The ``item_extra`` hook of the report module for ``task_type``, if it has one."""
    if not task_type.isidentifier():
        return None
    try:
        module = importlib.import_module(f"{__name__}.{task_type}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{task_type}":
            return None
        raise
    return getattr(module, "item_extra", None)
