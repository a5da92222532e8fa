"""Utility calibration: a Bayesian model of crowd ratings (Xing et al., Appendix A, after
Mathur, Baldwin & Cohn 2018).

Plain functions over plain Python data and NumPy (no Django).

Model. Each annotator j's 0–100 scores are z-scored (per annotator, population SD) to s_ij. Item i
has a true utility μ_i ~ N(0, 1); annotator j a precision τ_j ~ Gamma(shape k = 1.5,
rate θ = 0.5) (prior mean 3); every rating s_ij ~ N(μ_i, 1/τ_j). A reliable annotator (high τ)
pulls an item's posterior towards its score more than a noisy one.

Inference. The authors used expectation propagation (Infer.NET). Here: mean-field variational
Bayes, q(μ, τ) = Π_i N(μ_i | m_i, v_i) · Π_j Gamma(τ_j | a_j, b_j), fitted by closed-form
coordinate ascent (the model is conditionally conjugate):

    1/v_i = 1/σ0² + Σ_{j rated i} E[τ_j],   m_i = v_i (μ0/σ0² + Σ_{j rated i} E[τ_j] s_ij)
    a_j = k + n_j / 2,   b_j = θ + ½ Σ_{i rated by j} ((s_ij - m_i)² + v_i),   E[τ_j] = a_j / b_j

It is deterministic (initialisation: m_i = mean z-score of item i, v_i = 0), fast (one pass over
the ratings per sweep) and never decreases the evidence lower bound (ELBO), which is recorded per
sweep. Convergence: the largest change of any m_i or E[τ_j] in a sweep, relative to
max(1, |value|), falls below ``tol`` (default 1e-9); ``max_iter`` caps the sweeps.

Bias against the exact posterior. Mean-field VB drops the posterior dependence between item
utilities and annotator precisions, and it is biased, not only in the variances. Against a
seeded Gibbs sampler of the same model on the paper's 1,392 released ratings (8 chains of 20,000
sweeps after 2,000 of burn-in, R-hat < 1.001, Monte Carlo standard errors 0.0007-0.0022 for the
item means), VB's annotator precisions E[τ_j] are lower for every annotator but one (and that
one is within its Monte Carlo error): by 3.5 % on average, up to 9.9 %, a median of 20 Monte
Carlo standard errors. Item means differ by up to 0.031 on the z-score scale (a median of two
standard errors); item SDs are 4 % narrower on average, up to 22 %. Rankings of items and of
annotators are what the dashboard uses them for, and those barely move, but the precisions are
VB's, not the posterior means: :data:`VB_GIBBS_GAPS` holds these bounds and
``tests/agreement/test_calibration.py`` checks them against its own Gibbs chains.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter

import numpy as np

__all__ = [
    "ESTIMATOR_NOTE",
    "VB_GIBBS_GAPS",
    "AnnotatorPosterior",
    "CalibrationResult",
    "ItemPosterior",
    "calibrate_utility",
    "zscore_by_annotator",
]

#: How far the variational fit lies from a Gibbs sampler of the same model on the paper's
#: ratings (see the module docstring): the largest |item mean gap| (z-scale), the lowest and the
#: highest relative gap of annotator precisions (VB / Gibbs - 1) and the range of their mean.
VB_GIBBS_GAPS = {
    "item_mean_max": 0.035,
    "precision_relative_min": -0.10,
    "precision_relative_max": 0.0,
    "precision_relative_mean": (-0.045, -0.025),
}

#: The estimator in words, for pages that show its figures.
ESTIMATOR_NOTE = (
    "Fitted by mean-field variational Bayes, which is biased against the exact posterior: on the "
    "paper's ratings, annotator precisions come out lower than a Gibbs sampler's (3.5 % on "
    "average, up to 9.9 %), item utilities differ by up to 0.03 and their SDs are about 4 % "
    "narrower; rankings barely move."
)

PRIOR_MEAN = 0.0
PRIOR_VAR = 1.0
PRECISION_SHAPE = 1.5
PRECISION_RATE = 0.5


@dataclass(frozen=True)
class ItemPosterior:
    """q(μ_i) = N(mean, sd²); ``n`` = number of ratings of the item that entered the model."""

    mean: float
    sd: float
    n: int


@dataclass(frozen=True)
class AnnotatorPosterior:
    """q(τ_j) = Gamma(shape, rate) (rate parametrisation); ``n`` = the annotator's ratings."""

    shape: float
    rate: float
    n: int

    @property
    def mean(self) -> float:
        return self.shape / self.rate

    @property
    def sd(self) -> float:
        return math.sqrt(self.shape) / self.rate


@dataclass(frozen=True)
class CalibrationResult:
    """Posteriors of every item and annotator, with the fit's diagnostics.

    ``excluded_annotators``: annotators whose scores have no spread (including those with a
    single rating) — their z-scores are undefined, so their ratings were left out; items rated
    only by them keep the prior N(0, 1) with ``n = 0``.
    """

    items: dict[Hashable, ItemPosterior]
    annotators: dict[Hashable, AnnotatorPosterior]
    iterations: int
    converged: bool
    elbo: float
    elbo_trace: list[float] = field(default_factory=list, repr=False)
    excluded_annotators: list[Hashable] = field(default_factory=list)

    def item_means(self) -> dict[Hashable, float]:
        return {k: v.mean for k, v in self.items.items()}

    def annotator_precisions(self) -> dict[Hashable, float]:
        return {k: v.mean for k, v in self.annotators.items()}


def zscore_by_annotator(
    rows: Iterable[tuple[Hashable, Hashable, float]],
) -> tuple[list[tuple[Hashable, Hashable, float]], list[Hashable]]:
    """Z-score each annotator's scores: (score - annotator mean) / annotator population SD.

    ``rows`` are ``(annotator, item, score)``. Returns ``(z_rows, excluded)``: ``z_rows`` keeps
    the input order (minus excluded rows) with the score replaced by its z-score; ``excluded``
    lists annotators whose scores have zero SD (one rating, or all equal): their z-scores are
    undefined and their rows are dropped. The population SD (divide by n) matches the
    normalised ratings released with the paper (``utility_ratings_normalized.csv``).
    """
    rows = list(rows)
    scores, excluded = _Scores.of_rows(rows, standardise=True)
    left_out = set(excluded)
    kept = [(annotator, item) for annotator, item, _ in rows if annotator not in left_out]
    z_rows = [
        (annotator, item, z) for (annotator, item), z in zip(kept, scores.s.tolist(), strict=True)
    ]
    return z_rows, excluded


def _digamma(x: np.ndarray) -> np.ndarray:
    """ψ(x) for x > 0: recurrence up to x >= 6, then the asymptotic series (error < 1e-12)."""
    x = np.array(x, dtype=float)
    result = np.zeros_like(x)
    for _ in range(6):
        small = x < 6
        if not small.any():
            break
        result[small] -= 1.0 / x[small]
        x[small] += 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (
        1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132))))
    )
    return result + np.log(x) - 0.5 / x - series


def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.array([math.lgamma(float(v)) for v in np.ravel(x)]).reshape(np.shape(x))


def calibrate_utility(
    rows: Iterable[tuple[Hashable, Hashable, float]],
    *,
    standardise: bool = True,
    prior_mean: float = PRIOR_MEAN,
    prior_var: float = PRIOR_VAR,
    precision_shape: float = PRECISION_SHAPE,
    precision_rate: float = PRECISION_RATE,
    tol: float = 1e-9,
    max_iter: int = 10_000,
) -> CalibrationResult:
    """Posterior item utilities and annotator precisions from ``(annotator, item, score)`` rows.

    With ``standardise`` (default) raw scores are z-scored per annotator first
    (:func:`zscore_by_annotator`); pass ``standardise=False`` for scores already on the model's
    scale. Priors default to the paper's: μ_i ~ N(0, 1), τ_j ~ Gamma(shape 1.5, rate 0.5). See
    the module docstring for the variational updates and the convergence rule.
    """
    d, excluded = _Scores.of_rows(list(rows), standardise=standardise)
    priors = _Priors(prior_mean, prior_var, precision_shape, precision_rate)

    # initialisation: item means from the raw z-scores, no item uncertainty
    sums = np.bincount(d.ii, weights=d.s, minlength=d.n_items)
    q = _Posterior(
        m=np.divide(sums, d.n_per_item, out=np.full(d.n_items, prior_mean), where=d.n_per_item > 0),
        v=np.zeros(d.n_items),
        a=precision_shape + d.n_per_annotator / 2.0,  # fixed by the model
        b=np.full(d.n_annotators, precision_rate),
    )
    trace: list[float] = []
    converged = False
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        change = _update(q, d, priors)
        trace.append(_elbo(q, d, priors))
        if change < tol:
            converged = True
            break

    # np.sqrt is IEEE-exact like math.sqrt; tolist() gives the same Python floats and ints.
    items = {
        key: ItemPosterior(m, sd, n)
        for key, m, sd, n in zip(
            d.item_ids,
            q.m.tolist(),
            np.sqrt(q.v).tolist(),
            d.n_per_item.tolist(),
            strict=True,
        )
    }
    annotators = {
        key: AnnotatorPosterior(float(q.a[n]), float(q.b[n]), int(d.n_per_annotator[n]))
        for n, key in enumerate(d.annotator_ids)
    }
    return CalibrationResult(
        items=items,
        annotators=annotators,
        iterations=iterations,
        converged=converged,
        elbo=trace[-1] if trace else float("nan"),
        elbo_trace=trace,
        excluded_annotators=excluded,
    )


@dataclass
class _Scores:
    """The standardised scores as index arrays: score ``s[k]`` of item ``ii[k]`` by annotator
    ``jj[k]``."""

    item_ids: list[Hashable]
    annotator_ids: list[Hashable]
    ii: np.ndarray
    jj: np.ndarray
    s: np.ndarray

    @classmethod
    def of(cls, data: list[tuple[Hashable, Hashable, float]], item_ids: list[Hashable]) -> _Scores:
        annotator_ids = list(dict.fromkeys(a for a, _, _ in data))
        item_index = {k: n for n, k in enumerate(item_ids)}
        annotator_index = {k: n for n, k in enumerate(annotator_ids)}
        return cls(
            item_ids=item_ids,
            annotator_ids=annotator_ids,
            ii=np.array([item_index[i] for _, i, _ in data], dtype=int),
            jj=np.array([annotator_index[a] for a, _, _ in data], dtype=int),
            s=np.array([z for _, _, z in data], dtype=float),
        )

    @classmethod
    def of_rows(
        cls, rows: list[tuple[Hashable, Hashable, float]], *, standardise: bool
    ) -> tuple[_Scores, list[Hashable]]:
        """``(annotator, item, score)`` rows as arrays, z-scored per annotator when
        ``standardise`` (exactly as :func:`zscore_by_annotator`, with NumPy over columns:
        each annotator's scores in input order, the same elementwise operations); returns
        the scores and the annotators left out for having no spread."""
        item_ids = list(dict.fromkeys(map(itemgetter(1), rows)))
        item_index = {k: n for n, k in enumerate(item_ids)}
        annotator_codes: dict[Hashable, int] = {}
        for annotator in map(itemgetter(0), rows):
            if annotator not in annotator_codes:
                annotator_codes[annotator] = len(annotator_codes)
        jj = np.fromiter(map(annotator_codes.__getitem__, map(itemgetter(0), rows)), np.int64)
        ii = np.fromiter(map(item_index.__getitem__, map(itemgetter(1), rows)), np.int64)
        s = np.fromiter(map(float, map(itemgetter(2), rows)), np.float64)
        annotators = list(annotator_codes)
        excluded: list[Hashable] = []
        if standardise and len(s):
            order = np.argsort(jj, kind="stable")  # each annotator's scores in input order
            starts = np.searchsorted(jj[order], np.arange(len(annotators) + 1))
            mean = np.zeros(len(annotators))
            sd = np.ones(len(annotators))
            kept = np.ones(len(annotators), dtype=bool)
            for j in range(len(annotators)):
                scores = s[order[starts[j] : starts[j + 1]]]
                spread = float(scores.std())
                if not spread > 1e-12 * max(1.0, float(np.abs(scores).max())):
                    kept[j] = False
                    excluded.append(annotators[j])
                else:
                    mean[j], sd[j] = float(scores.mean()), spread
            s = (s - mean[jj]) / sd[jj]
            if not kept.all():
                keep = kept[jj]
                ii, jj, s = ii[keep], jj[keep], s[keep]
                new_code = np.cumsum(kept) - 1
                jj = new_code[jj]
                annotators = [a for a, k in zip(annotators, kept.tolist(), strict=True) if k]
        return cls(item_ids=item_ids, annotator_ids=annotators, ii=ii, jj=jj, s=s), excluded

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_annotators(self) -> int:
        return len(self.annotator_ids)

    @cached_property
    def n_per_item(self) -> np.ndarray:
        return np.bincount(self.ii, minlength=self.n_items)

    @cached_property
    def n_per_annotator(self) -> np.ndarray:
        return np.bincount(self.jj, minlength=self.n_annotators)


@dataclass(frozen=True)
class _Priors:
    mean: float
    var: float
    shape: float  # k0 of the Gamma prior on annotator precision
    rate: float  # b0


@dataclass
class _Posterior:
    """q(μ_i) = N(m_i, v_i) and q(τ_j) = Gamma(a_j, b_j)."""

    m: np.ndarray
    v: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @property
    def e_tau(self) -> np.ndarray:
        return self.a / self.b


def _update(q: _Posterior, d: _Scores, priors: _Priors) -> float:
    """One round of the variational updates, q(τ) then q(μ); returns the largest relative change
    of an item mean or an annotator's expected precision."""
    e_tau = q.e_tau
    resid = (d.s - q.m[d.ii]) ** 2 + q.v[d.ii]
    q.b = priors.rate + 0.5 * np.bincount(d.jj, weights=resid, minlength=d.n_annotators)
    new_e_tau = q.e_tau
    prec0 = 1.0 / priors.var
    precision = prec0 + np.bincount(d.ii, weights=new_e_tau[d.jj], minlength=d.n_items)
    new_v = 1.0 / precision
    new_m = new_v * (
        priors.mean * prec0 + np.bincount(d.ii, weights=new_e_tau[d.jj] * d.s, minlength=d.n_items)
    )
    change = max(
        float(np.max(np.abs(new_m - q.m) / np.maximum(1.0, np.abs(new_m)), initial=0.0)),
        float(np.max(np.abs(new_e_tau - e_tau) / np.maximum(1.0, new_e_tau), initial=0.0)),
    )
    q.m, q.v = new_m, new_v
    return change


def _elbo(q: _Posterior, d: _Scores, priors: _Priors) -> float:
    a, b, e_tau, m, v = q.a, q.b, q.e_tau, q.m, q.v
    k0, b0 = priors.shape, priors.rate
    e_log_tau = _digamma(a) - np.log(b)
    resid = (d.s - m[d.ii]) ** 2 + v[d.ii]
    like = np.sum(0.5 * e_log_tau[d.jj] - 0.5 * math.log(2 * math.pi) - 0.5 * e_tau[d.jj] * resid)
    prior_mu = np.sum(
        -0.5 * math.log(2 * math.pi * priors.var) - ((m - priors.mean) ** 2 + v) / (2 * priors.var)
    )
    prior_tau = np.sum(k0 * math.log(b0) - math.lgamma(k0) + (k0 - 1) * e_log_tau - b0 * e_tau)
    entropy_mu = np.sum(0.5 * np.log(2 * math.pi * math.e * v))
    entropy_tau = np.sum(a - np.log(b) + _lgamma(a) + (1 - a) * _digamma(a))
    return float(like + prior_mu + prior_tau + entropy_mu + entropy_tau)
