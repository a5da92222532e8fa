"""Means over items when humans labelled only some of them and a judge labelled every one.

Three estimates of the same figure (a proportion, a mean rating, an F1 averaged over items):

* :func:`classical_mean` — the humans' labels alone, with the usual normal-approximation
  interval. Valid; as wide as the number of human labels makes it.
* :func:`judge_only_mean` — the judge's labels on every item. Narrow, and biased by whatever the
  judge gets wrong: its interval covers the judge's figure, not the truth. Report it only
  labelled as such.
* :func:`prediction_powered_mean` — PPI++ (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic,
  *Science* 382, 2023; Angelopoulos, Duchi & Zrnic, "PPI++: Efficient Prediction-Powered
  Inference", arXiv:2311.01453, 2024): the judge's mean over the items humans did not label,
  corrected by the judge's error measured on the items they did::

      θ̂ = λ · mean(f(X̃)) + mean(Y − λ · f(X))
      Var = Var(Y − λ f(X)) / n + λ² · Var(f(X̃)) / N

  with ``λ`` the minimiser of that estimated variance,
  ``λ̂ = Cov(Y, f(X)) / (Var f(X) + (n/N) Var f(X̃))`` clipped to [0, 1] (PPI++'s tuning with
  the two samples' own variances). The variance is a convex quadratic in ``λ`` whose value at
  ``λ = 0`` is the classical one, so the tuned interval is never wider than the humans-alone
  interval; a useless judge gets ``λ ≈ 0``. It is
  valid whatever the judge's bias, provided the human-labelled items are a uniform random sample
  of the items (or drawn with known probabilities: :func:`active_mean`).
* :func:`active_mean` — active inference (Zrnic & Candès, "Active Statistical Inference",
  ICML 2024): when item ``i`` was sent to humans with a known probability ``π_i`` (higher where
  the judge is unsure), ``θ̂ = mean_i(λ f_i + ξ_i / π_i · (Y_i − λ f_i))`` over every item is
  unbiased; its variance is estimated from the same terms.

``effective_labels`` says how many human labels alone would give an interval as narrow: the
worth of the judge, in annotations.

Intervals are normal approximations (the central limit theorem over items): fine for the tens to
thousands of items of a study, not for a handful.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class MeanEstimate:
    """A mean over items with its confidence interval."""

    estimate: float
    low: float
    high: float
    standard_error: float
    labels: int  # human labels used (0 for the judge alone)
    items: int  # items the estimate speaks for

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class PredictionPoweredEstimate(MeanEstimate):
    lam: float  # the power-tuning weight on the judge (0: humans alone)
    effective_labels: float  # human labels alone that would give the same standard error


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _array(values: Sequence[float], name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat list of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a value that is not a finite number")
    return array


def _interval(estimate: float, se: float, confidence: float) -> tuple[float, float]:
    half = _z(confidence) * se
    return estimate - half, estimate + half


def classical_mean(labels: Sequence[float], *, confidence: float = 0.95) -> MeanEstimate:
    """The humans' labels alone (needs at least two)."""
    y = _array(labels, "labels")
    if y.size < 2:
        raise ValueError("at least two human labels are needed for an interval")
    se = math.sqrt(y.var(ddof=1) / y.size)
    estimate = float(y.mean())
    low, high = _interval(estimate, se, confidence)
    return MeanEstimate(estimate, low, high, se, labels=int(y.size), items=int(y.size))


def judge_only_mean(predictions: Sequence[float], *, confidence: float = 0.95) -> MeanEstimate:
    """The judge's labels on every item: its interval is about the judge, not the truth."""
    f = _array(predictions, "predictions")
    if f.size < 2:
        raise ValueError("at least two judge labels are needed for an interval")
    se = math.sqrt(f.var(ddof=1) / f.size)
    estimate = float(f.mean())
    low, high = _interval(estimate, se, confidence)
    return MeanEstimate(estimate, low, high, se, labels=0, items=int(f.size))


def power_tuning(labels: np.ndarray, predictions: np.ndarray, unlabelled: np.ndarray) -> float:
    """The ``λ`` in [0, 1] that minimises the estimated variance of the PPI++ mean."""
    n, big_n = labels.size, unlabelled.size
    denominator = predictions.var(ddof=1) + n / big_n * unlabelled.var(ddof=1)
    if denominator == 0:
        return 0.0
    covariance = float(np.cov(labels, predictions, ddof=1)[0, 1])
    return float(np.clip(covariance / denominator, 0.0, 1.0))


def prediction_powered_mean(
    labels: Sequence[float],
    predictions: Sequence[float],
    unlabelled_predictions: Sequence[float],
    *,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PredictionPoweredEstimate:
    """PPI++ mean: ``labels`` and ``predictions`` on the items humans labelled (same order),
    ``unlabelled_predictions`` the judge's on the items they did not. ``lam`` None: tuned."""
    y = _array(labels, "labels")
    f = _array(predictions, "predictions")
    f_u = _array(unlabelled_predictions, "unlabelled_predictions")
    if y.size != f.size:
        raise ValueError(f"{y.size} labels but {f.size} predictions for the labelled items")
    if y.size < 2 or f_u.size < 2:
        raise ValueError("at least two labelled and two unlabelled items are needed")
    weight = power_tuning(y, f, f_u) if lam is None else float(lam)
    estimate = float(weight * f_u.mean() + (y - weight * f).mean())
    variance = (y - weight * f).var(ddof=1) / y.size + weight**2 * f_u.var(ddof=1) / f_u.size
    se = math.sqrt(variance)
    low, high = _interval(estimate, se, confidence)
    classical_variance = y.var(ddof=1) / y.size
    effective = y.size * classical_variance / variance if variance > 0 else math.inf
    return PredictionPoweredEstimate(
        estimate,
        low,
        high,
        se,
        labels=int(y.size),
        items=int(y.size + f_u.size),
        lam=weight,
        effective_labels=float(effective),
    )


def active_mean(
    predictions: Sequence[float],
    labels: Sequence[float | None],
    probabilities: Sequence[float],
    *,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PredictionPoweredEstimate:
    """Active inference over every item: ``predictions[i]`` the judge's label, ``labels[i]``
    the human label (None where item ``i`` was not sent to humans) and ``probabilities[i]`` the
    probability it was sent (recorded when it was dealt, > 0). ``lam`` None: tuned on the terms'
    estimated variance over [0, 1]."""
    f = _array(predictions, "predictions")
    pi = _array(probabilities, "probabilities")
    if not (f.size == pi.size == len(labels)):
        raise ValueError("predictions, labels and probabilities must have one entry per item")
    if np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("every probability must be in (0, 1]")
    sent = np.array([label is not None for label in labels])
    y = np.array([0.0 if label is None else float(label) for label in labels])
    if not np.all(np.isfinite(y)):
        raise ValueError("labels holds a value that is not a finite number")
    if sent.sum() < 2:
        raise ValueError("at least two items must have a human label")

    def terms(weight: float) -> np.ndarray:
        return weight * f + sent / pi * (y - weight * f)

    if lam is None:
        # The terms are linear in λ: their variance is a quadratic, minimised in closed form.
        a = f - sent / pi * f  # d(term)/dλ
        b = sent / pi * y  # term at λ = 0
        var_a = a.var(ddof=1)
        weight = 0.0 if var_a == 0 else float(np.clip(-np.cov(a, b)[0, 1] / var_a, 0.0, 1.0))
    else:
        weight = float(lam)
    values = terms(weight)
    estimate = float(values.mean())
    se = math.sqrt(values.var(ddof=1) / values.size)
    low, high = _interval(estimate, se, confidence)
    labelled = y[sent]
    classical_variance = labelled.var(ddof=1) / labelled.size
    effective = labelled.size * classical_variance / se**2 if se > 0 else math.inf
    return PredictionPoweredEstimate(
        estimate,
        low,
        high,
        se,
        labels=int(sent.sum()),
        items=int(f.size),
        lam=weight,
        effective_labels=float(effective),
    )
