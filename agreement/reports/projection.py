"""The question "How many human annotations do I need?" for one figure and judge (issue 27, 4).

For a research figure that is a mean over units (an :class:`~.sections.Estimand`) and one judge,
the units both the humans and the judge labelled are the pilot (:mod:`metrics.projection`): from
their variances, the figure's interval width is projected against the number of human labels,
with humans alone and with the judge (PPI++ over the same units: those not human-labelled are
left to the judge), and, for a target width, the human labels each needs.

Plain part of the reports layer (no Django): :func:`projection` returns the numbers, a table of
the curve (the plot's table alternative and CSV) and the line plot's spec
(:func:`agreement.reports.plots.lines`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from metrics.projection import (
    MIN_PAIRED,
    Need,
    Pilot,
    TooLittleData,
    label_grid,
    labels_needed,
    pilot,
    projected_widths,
)

from .plots import off_the_top
from .sections import Estimand
from .tables import Table, column, table

PROJECTION_TABLE = "projection"


class BadTarget(ValueError):
    """A target width that cannot be used for this figure (the message says why)."""


@dataclass
class Projection:
    """The projection for one figure and judge; ``reason`` says why there is none."""

    figure: str
    judge: str
    unit: str
    labelled: int  # units with both a human and a judge value (the pilot)
    judged_only: int  # units the judge answered and humans did not
    reason: str = ""
    current_alone: float | None = None  # projected widths at the pilot's labels
    current_with_judge: float | None = None
    need: Need | None = None
    tables: dict[str, Table] = field(default_factory=dict)
    plot: dict = field(default_factory=dict)
    off_plot: list[str] = field(default_factory=list)  # curves above the plot's top, in words


def check_target(target_width: float, bounds: tuple[float, float] | None) -> None:
    """:class:`BadTarget` unless the width is positive and narrower than the figure's range."""
    if not target_width > 0 or target_width == float("inf"):
        raise BadTarget(f"the target width must be a positive number, got {target_width:g}")
    if bounds is not None and target_width >= bounds[1] - bounds[0]:
        raise BadTarget(
            f"a width of {target_width:g} is not narrower than the figure's whole range "
            f"({bounds[0]:g} to {bounds[1]:g}): any interval is that narrow"
        )


def _curve(estimand: PilotSummary, result: Projection, grid: list[int], widths: Mapping) -> Table:
    rows = [
        {
            "labels": n,
            "humans_alone": widths["humans_alone"][i],
            "with_judge": widths["with_judge"][i],
            "lam": widths["lam"][i],
        }
        for i, n in enumerate(grid)
    ]
    return table(
        f"Projected interval width: {estimand.figure} ({result.judge})",
        [
            column("labels", "Human labels", "int"),
            column("humans_alone", "Width, humans alone", "num"),
            column("with_judge", "Width, with the judge (PPI++)", "num"),
            column("lam", "λ (weight on the judge)", "num"),
        ],
        rows,
        note=f"Projected from the {result.labelled} {estimand.unit} labelled by both the humans "
        f"and the judge and the {result.judged_only} the judge labelled alone, assuming their "
        "variances hold and the human-labelled units are a uniform random sample. Widths are "
        "full widths of the interval (upper − lower), before cutting to the figure's range.",
    )


def _y_max(estimand: PilotSummary, result: Projection, target: float | None) -> float:
    """The plot's top: twice the wider of the width now and the target, so that both are in
    the plot's lower half; never above the figure's whole range (a wider interval says
    nothing). With few labels the widths run far above it: those parts are cut (and said)."""
    top = 2 * max(result.current_alone or 0.0, target or 0.0)
    if estimand.bounds is not None:
        top = min(top, estimand.bounds[1] - estimand.bounds[0])
    return top


def _off_plot(rows: list, plot: dict) -> list[str]:
    names = plot["series_labels"]
    return [
        f"{names[key]}: wider than {plot['y_max']:.3g} (above the plot) with "
        f"{int(max(above))} human labels or fewer; the table has every value"
        for key, above in off_the_top(rows, plot).items()
    ]


def _plot(estimand: PilotSummary, result: Projection, target: float | None) -> dict:
    marks_x = [{"value": result.labelled, "label": f"now: {result.labelled}"}]
    marks_y = [] if target is None else [{"value": target, "label": f"target {target:g}"}]
    return {
        "kind": "lines",
        "table": PROJECTION_TABLE,
        "x": "labels",
        "series": ["humans_alone", "with_judge"],
        "series_labels": {"humans_alone": "Humans alone", "with_judge": "With the judge"},
        "x_title": "human labels",
        "y_title": "interval width",
        "marks": {"x": marks_x, "y": marks_y},
        "y_max": _y_max(estimand, result, target),
        "title": f"Interval width against human labels: {estimand.figure}",
        "description": (
            f"Two falling curves of the projected width of the {estimand.figure} interval "
            f"against the number of human labels, humans alone and with the judge "
            f"{result.judge}; a vertical line marks the {result.labelled} labels so far"
            + ("" if target is None else f" and a horizontal line the target width {target:g}")
            + ". The same numbers are in the table below the plot."
        ),
    }


@dataclass(frozen=True)
class PilotSummary:
    """What a projection needs of the data, for one figure and judge: small and JSON-able
    (:meth:`as_json`), so the judge validation page stores it with its cached figures and
    projects any target width from it without reading the data again."""

    figure: str
    judge: str
    unit: str
    bounds: tuple[float, float] | None
    labelled: int
    judged_only: int
    reason: str = ""  # why there is no pilot (too little data)
    pilot: Pilot | None = None

    def as_json(self) -> dict:
        return {
            **{name: getattr(self, name) for name in _SUMMARY_FIELDS},
            "bounds": list(self.bounds) if self.bounds is not None else None,
            "pilot": asdict(self.pilot) if self.pilot is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PilotSummary:
        bounds, pilot = data.get("bounds"), data.get("pilot")
        return cls(
            **{name: data[name] for name in _SUMMARY_FIELDS},
            bounds=(float(bounds[0]), float(bounds[1])) if bounds is not None else None,
            pilot=Pilot(**pilot) if pilot is not None else None,
        )


_SUMMARY_FIELDS = ("figure", "judge", "unit", "labelled", "judged_only", "reason")


def projection_pilot(estimand: Estimand, judge: str, *, confidence: float = 0.95) -> PilotSummary:
    """The pilot of ``estimand`` and ``judge`` (a key of ``estimand.judges``): the one pass over
    the units a projection makes."""
    humans = estimand.humans
    judged = estimand.judges.get(judge, {})
    labelled = [u for u in humans if u in judged]
    unlabelled = [judged[u] for u in judged if u not in humans]
    summary = PilotSummary(
        estimand.figure, judge, estimand.unit, estimand.bounds, len(labelled), len(unlabelled)
    )
    try:
        p = pilot(
            [humans[u] for u in labelled],
            [judged[u] for u in labelled],
            unlabelled,
            confidence=confidence,
            minimum=MIN_PAIRED,
        )
    except TooLittleData as exc:
        return replace(summary, reason=str(exc))
    if not all(math.isfinite(value) for value in asdict(p).values()):
        return replace(summary, reason="the data so far give no finite variances")
    return replace(summary, pilot=p)


def projection_from_pilot(
    summary: PilotSummary, *, target_width: float | None = None
) -> Projection:
    """The projection of a stored pilot; with ``target_width``, the labels needed.
    :class:`BadTarget` for an unusable target."""
    if target_width is not None:
        check_target(target_width, summary.bounds)
    result = Projection(
        summary.figure, summary.judge, summary.unit, summary.labelled, summary.judged_only
    )
    p = summary.pilot
    if p is None:
        result.reason = summary.reason
        return result
    try:
        need = labels_needed(p, target_width) if target_width is not None else None
    except TooLittleData as exc:
        result.reason = str(exc)
        return result
    now = projected_widths(p, [p.n])
    result.current_alone = float(now["humans_alone"][0])
    result.current_with_judge = float(now["with_judge"][0])
    result.need = need
    grid = label_grid(p, need)
    result.tables = {PROJECTION_TABLE: _curve(summary, result, grid, projected_widths(p, grid))}
    result.plot = _plot(summary, result, target_width)
    result.off_plot = _off_plot(result.tables[PROJECTION_TABLE]["rows"], result.plot)
    if result.off_plot:
        result.plot["description"] += " Cut at the top: " + "; ".join(result.off_plot) + "."
    return result


def projection(
    estimand: Estimand,
    judge: str,
    *,
    target_width: float | None = None,
    confidence: float = 0.95,
) -> Projection:
    """The projection for ``estimand`` and ``judge`` (a key of ``estimand.judges``); with
    ``target_width``, the labels needed. :class:`BadTarget` for an unusable target."""
    if target_width is not None:
        check_target(target_width, estimand.bounds)
    return projection_from_pilot(
        projection_pilot(estimand, judge, confidence=confidence), target_width=target_width
    )
