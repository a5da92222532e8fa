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
shown side by side with CV*, and Spearman's rho is taken over the vector. Modules are found by
name, so a new task type adds its report without editing a shared list; a task type without a
module gets the generic agreement table only.
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
