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

A task type whose judges can be validated against the humans registers ``judge_validation``
(:class:`JudgeValidationHooks`): label tasks say how to read the labels (and certainty) of one
answer, set tasks how to pair a judge's answer with the merged humans'; the judge validation page
(:mod:`agreement.reports.validation`) calls only these hooks.

A task type whose research figures are means or proportions over items registers
``estimands(report_input) -> [Estimand]``: per-unit values of the humans and of each judge, from
which :mod:`agreement.reports.estimates` shows human-only, judge-only and prediction-powered
(PPI++) estimates side by side.

``AgreementConfig.ready()`` imports every installed app's ``report`` module. A report section is
required: the system check refuses a task type without one (``concord.E003``) and a section
registered under a slug that names no task type (``concord.E006``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agreement.reports.inputs import ItemInfo, ReportInput, ReportParameter
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
class ValidationLabel:
    """One label of an answer for judge validation, and whether its coder was certain of it
    (None: the task type records no certainty)."""

    label: str
    certain: bool | None = None


@dataclass(frozen=True)
class JudgeValidationHooks:
    """How a task type's judges are checked against the humans (one of the two kinds).

    * label tasks: ``labels(item, answer)`` gives ``{part: ValidationLabel}`` for one answer, the
      part of the item each label is for (``""`` for the whole item, a claim id…); the humans'
      labels of a part are merged by plurality. ``label_order`` orders the classes in tables
      and plots; ``records_certainty`` offers the "humans are certain" subset;
    * set tasks: ``values(item, judge_answer, human_answers)`` gives the judge's value and the
      merged humans' value of one item, or None when the item cannot be compared; alpha uses
      ``distance``. ``rule`` says in words how the humans are merged.
    """

    labels: Callable[[ItemInfo, Mapping], Mapping[str, ValidationLabel]] | None = None
    label_order: tuple[str, ...] = ()
    records_certainty: bool = False
    values: Callable[[ItemInfo, Mapping, Sequence[Mapping]], tuple[Any, Any] | None] | None = None
    distance: str = "nominal"
    rule: str = ""


@dataclass(frozen=True)
class Estimand:
    """A research figure that is a mean or proportion over units (items, or claims made of
    several items), with each unit's value: the humans' (as the task type merges several
    coders of one unit) and each judge's (by judge label). A unit missing from ``humans`` was
    not (fully) labelled by humans. :mod:`agreement.reports.estimates` turns these into
    human-only, judge-only and prediction-powered estimates."""

    figure: str
    humans: Mapping[str, float]
    judges: Mapping[str, Mapping[str, float]]
    unit: str = "items"  # what the units are, in words ("responses", "claims")
    # The range every unit's value lies in, when the task type knows it (a proportion: 0 and 1;
    # a Likert mean: 1 and the points): the figure lies in it too, so intervals are cut to it
    # (a normal interval of a share near 0 or 1 would reach past it; cutting loses no coverage).
    bounds: tuple[float, float] | None = None
    # Units made of several items (a claim of several masked evidences): each unit's item keys,
    # all labelled for the unit to be. Where the items were dealt actively, the unit's probability
    # of being labelled is the product of its items' (agreement.reports.estimates).
    items_of: Mapping[str, Sequence[str]] | None = None
    # With items_of: the item keys humans answered (the dealing order's labelled prefix is the
    # items'); None: the items of the units in ``humans``.
    labelled_items: frozenset[str] | None = None


Estimands = Callable[[ReportInput], list[Estimand]]


@dataclass(frozen=True)
class ReportHooks:
    section: Section
    item_extra: ItemExtra | None = None
    parameters: tuple[ReportParameter, ...] = ()
    judge_validation: JudgeValidationHooks | None = None
    estimands: Estimands | None = None


report_registry: Registry[ReportHooks] = Registry("report section")


def register(
    task_type: str,
    *,
    section: Section,
    item_extra: ItemExtra | None = None,
    parameters: tuple[ReportParameter, ...] = (),
    judge_validation: JudgeValidationHooks | None = None,
    estimands: Estimands | None = None,
) -> None:
    """``estimands``: the section's figures that are means or proportions over units, with
    per-unit values (:class:`Estimand`), for the prediction-powered estimates.
    ``parameters``: numbers researchers may set on the dashboard (``?<name>=<value>``);
    the section reads them with ``report_input.options.parameter(spec)``.
    ``judge_validation``: how judges are validated against the humans (see
    :class:`JudgeValidationHooks`)."""
    report_registry.register(
        task_type,
        ReportHooks(
            section=section,
            item_extra=item_extra,
            parameters=tuple(parameters),
            judge_validation=judge_validation,
            estimands=estimands,
        ),
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


def judge_validation_for(task_type: str) -> JudgeValidationHooks | None:
    hooks = report_registry.find(task_type)
    return hooks.judge_validation if hooks else None


def estimands_for(task_type: str) -> Estimands | None:
    hooks = report_registry.find(task_type)
    return hooks.estimands if hooks else None
