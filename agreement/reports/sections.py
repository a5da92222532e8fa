"""The report registry: task-specific dashboard sections, one per task type.

A task-type package's ``report.py`` calls :func:`register` with ``section(report_input:
ReportInput) -> dict`` returning::

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

A section that needs more of an item than its id, group and gold registers
``item_extra(payload: dict, prepared: dict) -> dict``: the reports layer then reads payloads
(in chunks) and keeps only what it returns, as ``ItemInfo.extra`` (e.g. the system behind each
ranking key, a stance item's claim, veracity and level).

``AgreementConfig.ready()`` imports every installed app's ``report`` module; a task type that
registers none gets the generic agreement table only (the system check ``concord.W001`` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agreement.reports.inputs import ReportInput, ReportParameter
from core.registry import Registry

Section = Callable[[ReportInput], dict]
ItemExtra = Callable[[dict, dict], dict]


@dataclass(frozen=True)
class ReportHooks:
    section: Section
    item_extra: ItemExtra | None = None
    parameters: tuple[ReportParameter, ...] = ()


report_registry: Registry[ReportHooks] = Registry("report section")


def register(
    task_type: str,
    *,
    section: Section,
    item_extra: ItemExtra | None = None,
    parameters: tuple[ReportParameter, ...] = (),
) -> None:
    """``parameters``: numbers researchers may set on the dashboard (``?<name>=<value>``);
    the section reads them with ``report_input.options.parameter(spec)``."""
    report_registry.register(
        task_type,
        ReportHooks(section=section, item_extra=item_extra, parameters=tuple(parameters)),
    )


def section_for(task_type: str) -> Section | None:
    hooks = report_registry.find(task_type)
    return hooks.section if hooks else None


def item_extra_for(task_type: str) -> ItemExtra | None:
    hooks = report_registry.find(task_type)
    return hooks.item_extra if hooks else None


def parameters_for(task_type: str) -> tuple[ReportParameter, ...]:
    hooks = report_registry.find(task_type)
    return hooks.parameters if hooks else ()
