"""The report registry: task-specific dashboard sections, one per task type.

A task-type package's ``report.py`` calls :func:`register` with ``section(report_input:
ReportInput) -> SectionResult``. A section is built from small functions, one per table, each
returning a :data:`agreement.reports.tables.Table`; :class:`SectionResult` collects them with the
headline figures, plots, notes and the figures a reproduction is compared on (``scalars``, and
``vectors`` such as MAR per system, one vector per criterion, with optional axis ``domains``);
the original-versus-reproduction view shows each side by side with CV*, and Spearman's rho over
each vector.

A section that needs more of an item than its id, group and gold registers
``item_extra(payload: dict, prepared: dict) -> dict``: the reports layer then reads payloads
(in chunks) and keeps only what it returns, as ``ItemInfo.extra`` (e.g. the system behind each
ranking key, a stance item's claim, veracity and level). Numbers researchers may set on the
dashboard are declared as ``parameters`` (:class:`ReportParameter`).

``AgreementConfig.ready()`` imports every installed app's ``report`` module; a task type that
registers none gets the generic agreement table only (the system check ``concord.W001`` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agreement.reports.inputs import ReportInput, ReportParameter
from agreement.reports.tables import Table
from core.registry import Registry


@dataclass(frozen=True)
class Figure:
    """A headline figure: a label and its formatted value ("0.63 ± 0.29")."""

    label: str
    value: str


@dataclass
class SectionResult:
    """What a task type's section adds to the report (see the module docstring)."""

    title: str
    tables: dict[str, Table]
    summary: list[Figure] = field(default_factory=list)
    plots: list[dict] = field(default_factory=list)  # specs for agreement.reports.plots.render
    notes: list[str] = field(default_factory=list)
    scalars: dict[str, float | None] = field(default_factory=dict)
    vectors: dict[str, dict[str, float | None]] = field(default_factory=dict)
    domains: dict[str, tuple[float, float]] = field(default_factory=dict)


Section = Callable[[ReportInput], SectionResult]
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
