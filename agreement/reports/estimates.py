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

Plain part of the reports layer (no Django); the dashboard shows the table when judges are
selected under "who counts".
"""

from __future__ import annotations

from collections.abc import Mapping

from metrics.prediction_powered import classical_mean, judge_only_mean, prediction_powered_mean

from .inputs import JUDGE, ReportInput
from .sections import Estimand, estimands_for
from .tables import Table, column, table

ESTIMATES_TABLE = "prediction_powered"


def _ci(prefix: str, estimate, bounds: tuple[float, float] | None = None) -> dict:
    if estimate is None:
        return {prefix: None}
    low, high = estimate.low, estimate.high
    if bounds is not None:  # the figure cannot lie outside its units' range (Estimand.bounds)
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return {prefix: estimate.estimate, f"{prefix}_lower": low, f"{prefix}_upper": high}


def estimate_row(
    estimand: Estimand, judge: str, confidence: float
) -> dict[str, float | str | int | None]:
    """One figure for one judge: the three estimates (None where too few units)."""
    humans: Mapping[str, float] = estimand.humans
    judged: Mapping[str, float] = estimand.judges.get(judge, {})
    labelled = [u for u in humans if u in judged]
    unlabelled = [u for u in judged if u not in humans]
    human = (
        classical_mean(list(humans.values()), confidence=confidence) if len(humans) > 1 else None
    )
    alone = (
        judge_only_mean(list(judged.values()), confidence=confidence) if len(judged) > 1 else None
    )
    powered = None
    if len(labelled) > 1 and len(unlabelled) > 1:
        powered = prediction_powered_mean(
            [humans[u] for u in labelled],
            [judged[u] for u in labelled],
            [judged[u] for u in unlabelled],
            confidence=confidence,
        )
    return {
        "figure": estimand.figure,
        "judge": judge,
        "unit": estimand.unit,
        "human_n": len(humans),
        **_ci("human", human, estimand.bounds),
        "judge_n": len(judged),
        **_ci("judge_only", alone, estimand.bounds),
        "ppi_labelled": len(labelled),
        "ppi_n": len(labelled) + len(unlabelled),
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
    rows = [
        estimate_row(estimand, judge, confidence) for estimand in declared(inp) for judge in judges
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
            column("ppi", f"Prediction-powered, PPI++ ({pct} % CI)", "ci"),
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
        "would give an interval as narrow. — where there are fewer than two units to use.",
    )
