"""Human-only, judge-only and prediction-powered estimates of a section's item means.

A task type declares which of its research figures are means or proportions over units and how
to read each unit's value (:class:`agreement.reports.sections.Estimand`: the humans' value where
they labelled the unit, each selected judge's everywhere it answered). For every such figure and
every selected judge, :func:`estimate_row` puts side by side (:mod:`metrics.prediction_powered`):

* the humans alone: the mean over the units they labelled, with its normal interval;
* the judge alone, over every unit it answered: labelled biased, its interval speaks for the
  judge, not the truth;
* the prediction-powered mean (PPI++): the judge on every unit, corrected by its error on the
  units humans labelled, with its interval, the weight λ on the judge and the number of human
  labels alone it is worth. Valid only if the units humans labelled are a uniform random sample
  of the units (docs/prediction-powered.md).

When the project deals its items actively (crowd ``assignment_strategy`` "active": the items
the judges are unsure of go to humans first, :mod:`metrics.active_sampling`), the items humans
labelled are not a uniform sample, and the prediction-powered column is instead the active
inference estimate (Zrnic & Candès 2024): each human label weighted by one over the item's
probability of being labelled, read from the weight and priority recorded on the item. The
method column says which was used. A figure whose units are made of several items
(``Estimand.items_of``) gets it too, a unit's probability the product of its items'
(:func:`metrics.active_sampling.grouped_active_estimate`); a figure whose units are neither
(or whose items were never weighed) has no prediction-powered figure in an active project, and
says so (its units' probabilities are unknown and PPI++'s uniform sample does not hold). :func:`active_ci_table` shows how the interval narrowed
as the answers arrived.

Plain part of the reports layer (no Django); the dashboard shows the table when judges are
selected under "who counts".
"""

from __future__ import annotations

from collections.abc import Mapping

from metrics.active_sampling import (
    active_estimate,
    grouped_active_estimate,
    width_as_answers_arrive,
)
from metrics.prediction_powered import (
    PredictionPoweredEstimate,
    classical_mean,
    judge_only_mean,
    prediction_powered_mean,
)

from .inputs import JUDGE, ItemInfo, ReportInput
from .sections import Estimand, estimands_for
from .tables import Table, column, table

ESTIMATES_TABLE = "prediction_powered"
ACTIVE_CI_TABLE = "active_sampling_ci"
PPI = "PPI++ (uniform sample assumed)"
ACTIVE = "active (recorded probabilities)"
ACTIVE_GROUPED = "active (recorded probabilities; a unit's is the product of its items')"
NOT_WEIGHED = "none: units are not weighed items"


def _ci(prefix: str, estimate, bounds: tuple[float, float] | None = None) -> dict:
    if estimate is None:
        return {prefix: None}
    low, high = estimate.low, estimate.high
    if bounds is not None:  # the figure cannot lie outside its units' range (Estimand.bounds)
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return {prefix: estimate.estimate, f"{prefix}_lower": low, f"{prefix}_upper": high}


def active_inputs(
    estimand: Estimand, judge: str, items: Mapping[str, ItemInfo] | None
) -> tuple[list[float], list[float | None], list[float], list[float]] | None:
    """(predictions, labels, weights, priorities) over the judged units, when every one is an
    item with a recorded weight; None otherwise (the figure's units are not items)."""
    judged = estimand.judges.get(judge, {})
    if items is None or not judged:
        return None
    sampling = [items[u].sampling if u in items else None for u in judged]
    if any(s is None for s in sampling):
        return None
    return (
        list(judged.values()),
        [estimand.humans.get(u) for u in judged],
        [s[0] for s in sampling if s is not None],
        [s[1] for s in sampling if s is not None],
    )


GroupedInputs = tuple[
    list[float], list[float | None], list[list[int]], list[float], list[float], list[bool] | None
]


def grouped_inputs(
    estimand: Estimand, judge: str, items: Mapping[str, ItemInfo] | None
) -> GroupedInputs | None:
    """(predictions, labels, item groups, weights, priorities, which items humans answered)
    over the judged units when each is made of items with a recorded weight
    (``Estimand.items_of``); None otherwise."""
    judged = estimand.judges.get(judge, {})
    if items is None or not judged or estimand.items_of is None:
        return None
    keys: dict[str, int] = {}
    groups = []
    for unit in judged:
        members = estimand.items_of.get(unit) or ()
        if not members or any(key not in items or not items[key].sampling for key in members):
            return None
        groups.append([keys.setdefault(key, len(keys)) for key in members])
    sampling = [items[key].sampling for key in keys]
    answered = estimand.labelled_items
    return (
        list(judged.values()),
        [estimand.humans.get(u) for u in judged],
        groups,
        [s[0] for s in sampling if s is not None],
        [s[1] for s in sampling if s is not None],
        None if answered is None else [key in answered for key in keys],
    )


def _active(
    estimand: Estimand, judge: str, confidence: float, items: Mapping[str, ItemInfo] | None
) -> tuple[PredictionPoweredEstimate | None, int, int, str] | None:
    """The active estimate where the units are weighed items or made of them; None where they
    are neither (or the project does not deal actively)."""
    judged = estimand.judges.get(judge, {})
    inputs = active_inputs(estimand, judge, items)
    grouped = None if inputs is not None else grouped_inputs(estimand, judge, items)
    if inputs is None and grouped is None:
        return None
    try:
        if inputs is not None:
            est = active_estimate(*inputs, confidence=confidence)
        else:
            assert grouped is not None
            *arguments, answered = grouped
            est = grouped_active_estimate(*arguments, item_labelled=answered, confidence=confidence)
    except ValueError:  # fewer than two labels in the labelled prefix
        return None, 0, len(judged), ACTIVE if inputs is not None else ACTIVE_GROUPED
    return est, est.labels, est.items, ACTIVE if inputs is not None else ACTIVE_GROUPED


def _powered(
    estimand: Estimand, judge: str, confidence: float, items: Mapping[str, ItemInfo] | None
) -> tuple[PredictionPoweredEstimate | None, int, int, str]:
    """The prediction-powered estimate (active where the items were dealt actively), with the
    human labels and units it used and its method."""
    humans, judged = estimand.humans, estimand.judges.get(judge, {})
    active = _active(estimand, judge, confidence, items)
    if active is not None:
        return active
    labelled = [u for u in humans if u in judged]
    unlabelled = [u for u in judged if u not in humans]
    if items is not None:  # dealt actively: PPI++'s uniform sample does not hold
        return None, len(labelled), len(labelled) + len(unlabelled), NOT_WEIGHED
    if len(labelled) < 2 or len(unlabelled) < 2:
        return None, len(labelled), len(labelled) + len(unlabelled), PPI
    powered = prediction_powered_mean(
        [humans[u] for u in labelled],
        [judged[u] for u in labelled],
        [judged[u] for u in unlabelled],
        confidence=confidence,
    )
    return powered, len(labelled), len(labelled) + len(unlabelled), PPI


def estimate_row(
    estimand: Estimand,
    judge: str,
    confidence: float,
    items: Mapping[str, ItemInfo] | None = None,
) -> dict[str, float | str | int | None]:
    """One figure for one judge: the three estimates (None where too few units). ``items``:
    the report's items when the project deals actively (their recorded sampling), else None."""
    humans: Mapping[str, float] = estimand.humans
    judged: Mapping[str, float] = estimand.judges.get(judge, {})
    human = (
        classical_mean(list(humans.values()), confidence=confidence) if len(humans) > 1 else None
    )
    alone = (
        judge_only_mean(list(judged.values()), confidence=confidence) if len(judged) > 1 else None
    )
    powered, ppi_labelled, ppi_n, method = _powered(estimand, judge, confidence, items)
    return {
        "figure": estimand.figure,
        "judge": judge,
        "unit": estimand.unit,
        "human_n": len(humans),
        **_ci("human", human, estimand.bounds),
        "judge_n": len(judged),
        **_ci("judge_only", alone, estimand.bounds),
        "ppi_labelled": ppi_labelled,
        "ppi_n": ppi_n,
        "method": method,
        **_ci("ppi", powered, estimand.bounds),
        "lam": powered.lam if powered is not None else None,
        "effective": powered.effective_labels if powered is not None else None,
    }


def estimates_table(inp: ReportInput) -> Table | None:
    """The table of every declared figure × selected judge; None without judges or figures."""
    declared = estimands_for(inp.task_type)
    judges = [c.label or c.id for c in inp.coders if c.kind == JUDGE]
    if declared is None or not judges:
        return None
    confidence = inp.options.confidence
    items = inp.items if inp.active_sampling else None
    rows = [
        estimate_row(estimand, judge, confidence, items)
        for estimand in declared(inp)
        for judge in judges
    ]
    pct = round(100 * confidence)
    return table(
        "Human-only, judge-only and prediction-powered estimates",
        [
            column("figure", "Figure", "text"),
            column("judge", "Judge", "text"),
            column("unit", "Units", "text"),
            column("human_n", "Human-labelled", "int"),
            column("human", f"Humans only ({pct} % CI)", "ci"),
            column("judge_n", "Judged", "int"),
            column("judge_only", f"Judge only, biased ({pct} % CI)", "ci"),
            column("ppi_labelled", "PPI human labels", "int"),
            column("ppi_n", "PPI units", "int"),
            column("method", "Method", "text"),
            column("ppi", f"Prediction-powered ({pct} % CI)", "ci"),
            column("lam", "λ (weight on the judge)", "num"),
            column("effective", "Worth (human labels)", "num1"),
        ],
        rows,
        note="Humans only: the mean over the units humans labelled (several coders of a unit "
        "merged as the section does). Judge only: the judge's mean over every unit it answered; "
        "biased by the judge's errors, its interval covers the judge's figure, not the truth. "
        "Prediction-powered (PPI++, Angelopoulos et al. 2023, 2024): the judge on every unit, "
        "corrected by its error on the human-labelled units; valid only when the human-labelled "
        "units are a uniform random sample of the units and the judge was fixed before the "
        "labels were seen (see docs/prediction-powered.md). Worth: how many human labels alone "
        "would give an interval as narrow. — where there are fewer than two units to use. "
        "Method 'active': the project dealt its items actively (the judges' unsure items to "
        "humans first); each human label is weighted by one over the item's recorded "
        "probability of being labelled (Zrnic & Candès 2024), and only the labels of the "
        "order's fully labelled prefix count. A unit made of several items (an explanation "
        "of several masked evidences, a claim's responses) counts when all its items are in "
        "that prefix, weighted by one over the product of its items' probabilities. A figure "
        "whose units are neither weighed items nor made of them has none there.",
    )


ANSWER_STEPS = (5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
MAX_ACTIVE_PLOTS = 6  # charts of the interval as answers arrived: the first figures' only


def active_ci_plots(tbl: Table | None, confidence: float) -> list[dict]:
    """One chart per figure of :func:`active_ci_table` (its first ``MAX_ACTIVE_PLOTS``): the
    interval's width against the human-labelled items, one line per judge; every number is in
    the table under the charts."""
    if tbl is None:
        return []
    figures = list(dict.fromkeys(row["figure"] for row in tbl["rows"]))
    pct = round(100 * confidence)
    return [
        {
            "kind": "lines",
            "table": ACTIVE_CI_TABLE,
            "x": "labels",
            "y": "width",
            "series_from": "judge",
            "where": {"figure": figure},
            "x_title": "human-labelled items",
            "y_title": f"{pct} % CI width",
            "title": f"How the interval narrowed: {figure}",
            "description": (
                f"The width of the {pct} % interval of the active estimate of {figure} against "
                "the number of human-labelled items, one line per judge: had humans stopped "
                "after that many items of the order. The numbers are in the table below."
            ),
        }
        for figure in figures[:MAX_ACTIVE_PLOTS]
    ]


def active_ci_table(inp: ReportInput) -> Table | None:
    """How the active estimate's interval narrowed as human answers arrived (had humans stopped
    after the first k labelled items of the order); None unless the project deals actively."""
    declared = estimands_for(inp.task_type)
    judges = [c.label or c.id for c in inp.coders if c.kind == JUDGE]
    if not inp.active_sampling or declared is None or not judges:
        return None
    confidence = inp.options.confidence
    rows = []
    for estimand in declared(inp):
        for judge in judges:
            inputs = active_inputs(estimand, judge, inp.items)
            if inputs is None:
                continue
            labelled = sum(y is not None for y in inputs[1])
            steps = [k for k in ANSWER_STEPS if k < labelled] + [labelled]
            for k, estimate, width in width_as_answers_arrive(
                *inputs, steps=steps, confidence=confidence
            ):
                rows.append(
                    {
                        "figure": estimand.figure,
                        "judge": judge,
                        "labels": k,
                        "estimate": estimate,
                        "width": width,
                    }
                )
    if not rows:
        return None
    pct = round(100 * confidence)
    return table(
        "Active sampling: the interval as human answers arrived",
        [
            column("figure", "Figure", "text"),
            column("judge", "Judge", "text"),
            column("labels", "Human-labelled items so far", "int"),
            column("estimate", "Active estimate", "num"),
            column("width", f"{pct} % CI width", "num"),
        ],
        rows,
        note="The active estimate had humans stopped after the first k labelled items of the "
        "project's weighted order, for growing k: the interval narrows as answers arrive. "
        f"The charts above draw the widths of the first {MAX_ACTIVE_PLOTS} figures.",
    )
