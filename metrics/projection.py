"""How many human labels a figure needs: its interval's width projected from the data so far.

A pilot — humans labelled ``n`` items, a judge labelled those and ``N`` others — gives the
variances that set the width of a mean's interval. Assuming they hold as more items are labelled
(the pilot is a uniform random sample of the items, and so are the labels to come), the width
with ``n'`` human labels is projected for

* **humans alone**: ``2 z σ_y / √n'`` — closed form for the labels needed:
  ``n' = ⌈σ_y² (2 z / w)²⌉``;
* **with the judge** (PPI++, :func:`metrics.prediction_powered.prediction_powered_mean`): the
  ``T = n + N`` items stay the same, so ``n'`` of them are human-labelled and ``T − n'`` are
  left to the judge, and ``λ`` is tuned again at ``n'`` as the page would tune it::

      λ(n') = Cov(y, f) / (Var f + n' / (T − n') · Var f̃)          clipped to [0, 1]
      Var(n') = Var(y − λ f) / n' + λ² · Var f̃ / (T − n')

  (``f̃``: the judge on the unlabelled items; past ``T`` labels there is nothing left to the
  judge, ``λ = 0``). ``Var(n')`` is the minimum over ``λ`` in [0, 1] of a convex quadratic
  whose value at ``λ = 0`` is the humans-alone ``σ_y² / n'``, so it is never above it. The
  labels needed are the first ``n'`` whose projected width reaches the target (every ``n'`` is
  tried up to :data:`SCAN_LIMIT`; beyond, bisection, as ``Var(n')`` does not grow with ``n'``:
  by the envelope theorem ``dVar/dn' ∝ (ρ² − 1) σ_y² ≤ 0`` when the judge's variance is the same
  on both sets).

At ``n' = n`` the projection is the width of the interval computed from the pilot itself. The
projection is only as good as the pilot's variances: with fewer than :data:`MIN_PAIRED` items
labelled by both, or humans who all gave one value, it refuses (:class:`TooLittleData`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metrics.prediction_powered import _array, _z

MIN_PAIRED = 10  # items labelled by both humans and the judge below which nothing is projected
MAX_LABELS = 10**9  # searches stop here: a target needing more is out of reach in practice
SCAN_LIMIT = 10**6  # up to this many labels every number is tried; bisection beyond


class TooLittleData(ValueError):
    """The pilot cannot support a projection; the message says why, for a researcher."""


@dataclass(frozen=True)
class Pilot:
    """The variances of the data so far that a projection rests on."""

    n: int  # items labelled by humans (and judged)
    unlabelled: int  # items judged, not human-labelled
    var_labels: float  # Var y on the labelled items
    var_predictions: float  # Var f on the labelled items
    var_unlabelled: float  # Var f̃ on the unlabelled items (Var f when fewer than two)
    covariance: float  # Cov(y, f) on the labelled items
    z: float  # the normal quantile of the confidence level

    @property
    def items(self) -> int:
        return self.n + self.unlabelled


@dataclass(frozen=True)
class Need:
    """Human labels needed for an interval of ``target_width``, humans alone and with the
    judge; ``*_beyond_items`` when that is more items than there are (new items needed)."""

    target_width: float
    humans_alone: int
    with_judge: int
    lam: float  # the judge's weight at ``with_judge`` labels
    humans_alone_beyond_items: bool
    with_judge_beyond_items: bool


def pilot(
    labels: Sequence[float],
    predictions: Sequence[float],
    unlabelled_predictions: Sequence[float],
    *,
    confidence: float = 0.95,
    minimum: int = MIN_PAIRED,
) -> Pilot:
    """The pilot's variances; :class:`TooLittleData` below ``minimum`` paired items or when the
    humans' labels do not vary (nothing to project from)."""
    y = _array(labels, "labels")
    f = _array(predictions, "predictions")
    f_u = _array(unlabelled_predictions, "unlabelled_predictions")
    if y.size != f.size:
        raise ValueError(f"{y.size} labels but {f.size} predictions for the labelled items")
    if y.size < max(minimum, 2):
        raise TooLittleData(
            f"only {y.size} items are labelled by both the humans and the judge; a projection "
            f"needs at least {max(minimum, 2)} (their variances would be guesses)"
        )
    var_y = float(y.var(ddof=1))
    if var_y == 0:
        raise TooLittleData(
            f"the humans gave the same value on all {y.size} items so far: there is no spread "
            "to project from (label more items first)"
        )
    var_f = float(f.var(ddof=1))
    return Pilot(
        n=int(y.size),
        unlabelled=int(f_u.size),
        var_labels=var_y,
        var_predictions=var_f,
        var_unlabelled=float(f_u.var(ddof=1)) if f_u.size > 1 else var_f,
        covariance=float(np.cov(y, f, ddof=1)[0, 1]),
        z=_z(confidence),
    )


def _with_judge(p: Pilot, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(λ, variance)`` of the PPI++ mean with ``labels`` human labels, elementwise."""
    n = labels.astype(float)
    rest = np.maximum(p.items - n, 0.0)
    # n' / (T − n') · Var f̃, infinite (λ = 0) when nothing is left to the judge.
    spread = np.divide(n * p.var_unlabelled, rest, out=np.full_like(n, np.inf), where=rest > 0)
    denominator = p.var_predictions + spread
    usable = np.isfinite(denominator) & (denominator > 0)
    lam = np.clip(np.divide(p.covariance, denominator, out=np.zeros_like(n), where=usable), 0, 1)
    rectifier = p.var_labels - 2 * lam * p.covariance + lam**2 * p.var_predictions
    judge_term = np.divide(lam**2 * p.var_unlabelled, rest, out=np.zeros_like(n), where=rest > 0)
    return lam, np.maximum(rectifier, 0.0) / n + judge_term


def projected_widths(p: Pilot, labels: Sequence[int]) -> dict[str, np.ndarray]:
    """Projected interval widths (full width, ``2 z se``) at each number of human labels:
    ``humans_alone``, ``with_judge`` and the judge's weight ``lam`` there."""
    n = np.asarray(labels, dtype=float)
    if n.ndim != 1 or np.any(n < 2):
        raise ValueError("numbers of labels must be a flat list of values of at least 2")
    lam, variance = _with_judge(p, n)
    return {
        "humans_alone": 2 * p.z * np.sqrt(p.var_labels / n),
        "with_judge": 2 * p.z * np.sqrt(variance),
        "lam": lam,
    }


def _first_reaching(p: Pilot, variance_target: float, upper: int) -> int:
    """The least ``n'`` in [2, upper] whose with-judge variance is at most the target
    (``upper`` reaches it): every ``n'`` is tried up to a million, bisection beyond (the
    variance does not grow with ``n'``)."""
    if upper <= SCAN_LIMIT:
        labels = np.arange(2, upper + 1)
        reached = _with_judge(p, labels)[1] <= variance_target
        return int(labels[int(np.argmax(reached))]) if reached.any() else upper
    low, high = 2, upper
    while low < high:
        middle = (low + high) // 2
        if _with_judge(p, np.array([middle]))[1][0] <= variance_target:
            high = middle
        else:
            low = middle + 1
    return low


def labels_needed(p: Pilot, target_width: float) -> Need:
    """Human labels needed for an interval of ``target_width`` (full width, in the figure's
    units), humans alone and with the judge, from the pilot's variances."""
    if not math.isfinite(target_width) or target_width <= 0:
        raise ValueError("the target width must be a positive number")
    variance_target = (target_width / (2 * p.z)) ** 2
    # A width so small that its variance underflows to 0 (found by a probe: 1e-300, a 500)
    # needs more labels than any study has, like any width beyond MAX_LABELS.
    ratio = p.var_labels / variance_target if variance_target > 0 else math.inf
    alone = max(2, math.ceil(ratio - 1e-9)) if math.isfinite(ratio) else MAX_LABELS + 1
    if alone > MAX_LABELS:
        raise TooLittleData(
            f"a width of {target_width:g} would need more than {MAX_LABELS:,} human labels"
        )
    # Humans alone at ``alone`` labels reach the target, and the judge's variance is never above.
    with_judge = _first_reaching(p, variance_target, alone)
    lam = float(_with_judge(p, np.array([with_judge]))[0][0])
    return Need(
        target_width=target_width,
        humans_alone=alone,
        with_judge=with_judge,
        lam=lam,
        humans_alone_beyond_items=alone > p.items,
        with_judge_beyond_items=with_judge > p.items,
    )


def label_grid(p: Pilot, need: Need | None, points: int = 40) -> list[int]:
    """Numbers of human labels to draw the curves at: from 2 to past the current labels and
    the labels needed, evenly spaced, with the current number and the needed ones included."""
    top = max(p.n * 2, 20)
    marks = {p.n}
    if need is not None:
        top = max(top, math.ceil(need.humans_alone * 1.1), math.ceil(need.with_judge * 1.1))
        marks |= {need.humans_alone, need.with_judge}
    step = max(1, math.ceil((top - 2) / (points - 1)))
    return sorted(set(range(2, top + 1, step)) | marks)
