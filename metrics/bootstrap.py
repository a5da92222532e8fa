"""Bootstrap confidence intervals for Krippendorff's alpha.

What :func:`alpha_bootstrap` does, exactly:

1. Compute alpha on the full data (the point estimate) and, once, each
   pairable unit's contributions: its number of values ``m_u``, its observed
   disagreement ``sum_{i != j} d(v_i, v_j) / (m_u - 1)``, and what the expected
   term needs (its values' codes, or sums of their coordinates).
2. Each replicate draws ``N`` units with replacement from the ``N`` pairable
   units (units with fewer than two values never contribute to alpha and are
   not drawn). A unit drawn ``w`` times counts ``w`` times: the replicate's
   coincidence matrix is ``sum_u w_u o_u``, so its marginals ``n*_v`` and
   ``n* = sum n*_v``, its ``D_o*`` and, by default, its ``D_e*`` are
   recomputed from those weights, and ``alpha* = 1 - D_o* / D_e*`` (1.0 when
   ``D_e* == 0``, the same convention as :func:`agreement.krippendorff_alpha`).
   Weights come from one ``Generator.integers`` draw per replicate, so
   replicates are cheap matrix products over precomputed per-unit sums.
3. The interval is the percentile interval of the replicates: the
   ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
   (``numpy.quantile``, linear interpolation).

Resampling whole units keeps the dependence between values of the same
unit, which is the nonparametric bootstrap for clustered data (as in Zapf et
al. 2016). Hayes & Krippendorff (2007) resample pairable value pairs and keep
``D_e`` fixed; ``expected="fixed"`` reproduces the fixed-``D_e`` part of that
(``D_e`` from the full data, only ``D_o`` varies), which is also what
``expected="auto"`` falls back to when recomputing ``D_e*`` per replicate
would be too expensive (see :func:`alpha_bootstrap`). The distance itself is
held fixed across replicates; for "ordinal" this means the rank positions
come from the full data's marginal frequencies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .alpha import ReliabilityData, alpha_from_sums, prepare, unit_disagreements
from .distances import (
    MAX_DENSE_VALUES,
    AgreementError,
    DistanceSpec,
    NominalMetric,
    SquaredDifferenceMetric,
)

__all__ = ["BootstrapResult", "alpha_bootstrap"]

# Upper bound on the elements of one replicate-chunk work array (2**20 float64
# = 8 MiB). Small chunks keep the bincount of draws cache-resident, which
# measured faster than larger ones.
_CHUNK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate and percentile bootstrap interval for alpha.

    ``expected`` says whether ``D_e`` was recomputed per replicate
    ("resampled") or held at its full-data value ("fixed").
    ``replicates`` holds every replicate's alpha, in draw order.
    """

    alpha: float
    lower: float
    upper: float
    confidence: float
    n_boot: int
    n_units: int
    distance: str
    expected: Literal["resampled", "fixed"]
    replicates: np.ndarray = field(repr=False, compare=False)

    def probability_below(self, threshold: float) -> float:
        """Share of replicates with alpha below ``threshold``.

        Hayes & Krippendorff's ``q``: the estimated chance that the data's
        reliability does not reach a required minimum such as 0.667 or 0.8.
        """
        return float(np.mean(self.replicates < threshold))


def alpha_bootstrap(
    data: ReliabilityData,
    distance: DistanceSpec = "nominal",
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = None,
    expected: Literal["auto", "resample", "fixed"] = "auto",
) -> BootstrapResult:
    """Percentile bootstrap interval for Krippendorff's alpha, resampling units.

    ``data`` and ``distance`` are as for :func:`agreement.krippendorff_alpha`.
    ``seed`` (an int or a ``numpy.random.Generator``) makes the result
    reproducible: the same seed and data give the same replicates.

    ``expected`` controls ``D_e``: "resample" recomputes it in every replicate
    from the replicate's value frequencies; "fixed" keeps the full-data value
    (Hayes & Krippendorff 2007); "auto" (default) resamples unless that needs
    the full distance matrix between distinct values and there are more than
    :data:`metrics.distances.MAX_DENSE_VALUES` of them (e.g. Jaccard over
    tens of thousands of distinct sets), in which case it keeps ``D_e`` fixed.
    Nominal, interval and ordinal always resample cheaply. The result's
    ``expected`` field records what was done.
    """
    _check_arguments(n_boot=n_boot, confidence=confidence, expected=expected)
    n_boot = int(n_boot)
    rng = np.random.default_rng(seed)

    prep = prepare(data, distance)
    metric = prep.metric
    disagreement = unit_disagreements(prep)
    sizes = prep.unit_sizes.astype(np.float64)
    n_units = len(sizes)
    n = float(sizes.sum())
    expected_sum = metric.expected_sum() if metric.n_values > 1 else 0.0
    point = alpha_from_sums(float(disagreement.sum()), expected_sum, n)
    sums = _ExpectedSums(prep, expected)
    constant = metric.n_values < 2 and expected != "fixed"

    width = max(n_units, prep.n_values if sums.mode in ("nominal", "dense") else 0)
    chunk = max(1, min(n_boot, _CHUNK_ELEMENTS // max(width, 1)))
    replicates = np.empty(n_boot)
    for lo in range(0, n_boot, chunk):
        b = min(chunk, n_boot - lo)
        draws = rng.integers(0, n_units, size=(b, n_units))
        draws += (np.arange(b) * n_units)[:, None]
        counts = np.bincount(draws.ravel(), minlength=b * n_units).reshape(b, n_units)
        del draws
        weights = counts.astype(np.float64)
        obs = weights @ disagreement
        n_star = weights @ sizes
        if sums.mode == "fixed":
            replicates[lo : lo + b] = _fixed_expected_alphas(obs, n_star, expected_sum, n)
            continue
        exp_star = sums.of_replicates(counts, weights, n_star)
        # Same convention as krippendorff_alpha: no variation -> 1.0. The
        # tolerance (relative to the full data's E, rescaled to n*) absorbs
        # rounding in the closed forms when every drawn value is identical.
        tiny = exp_star <= 1e-10 * expected_sum * (n_star / n) ** 2
        safe = np.where(tiny, 1.0, exp_star)
        replicates[lo : lo + b] = np.where(tiny, 1.0, 1.0 - (n_star - 1.0) * obs / safe)

    tail = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(replicates, [tail, 1.0 - tail])
    return BootstrapResult(
        alpha=point,
        lower=float(lower),
        upper=float(upper),
        confidence=confidence,
        n_boot=n_boot,
        n_units=n_units,
        distance=prep.distance,
        # With a single distinct value every replicate is 1.0 either way;
        # report what was asked for.
        expected="fixed" if sums.mode == "fixed" and not constant else "resampled",
        replicates=replicates,
    )


def _check_arguments(*, n_boot: int, confidence: float, expected: str) -> None:
    if not 0.0 < confidence < 1.0:
        raise AgreementError(f"confidence must be between 0 and 1, got {confidence!r}")
    if int(n_boot) != n_boot or n_boot < 1:
        raise AgreementError(f"n_boot must be a positive integer, got {n_boot!r}")
    if expected not in ("auto", "resample", "fixed"):
        raise AgreementError(f'expected must be "auto", "resample" or "fixed", got {expected!r}')


def _fixed_expected_alphas(
    obs: np.ndarray, n_star: np.ndarray, expected_sum: float, n: float
) -> np.ndarray | float:
    """D_e fixed at the full-data value: alpha* = 1 - D_o* / D_e."""
    if expected_sum <= 0.0:
        return 1.0
    d_e = expected_sum / (n * (n - 1.0))
    return 1.0 - (obs / n_star) / d_e


class _ExpectedSums:
    """How each replicate gets its expected-disagreement sum E* = sum n*_v n*_v' d.

    ``mode``: "fixed" (E kept at the full-data value), "nominal" (E* = n*^2 - sum n*_v^2),
    "moments" (squared differences: E* = 2 (n* S2* - S1*^2), S_k* = sum_v n*_v x_v^k) or
    "dense" (E* = n*^T D n* with the full distance matrix between distinct values)."""

    def __init__(self, prep: Any, expected: str) -> None:
        metric = prep.metric
        n_units = len(prep.unit_sizes)
        unit_of_value = np.repeat(np.arange(n_units), prep.unit_sizes)
        self.dense = None
        if expected == "fixed" or metric.n_values < 2:
            self.mode = "fixed"
        elif isinstance(metric, NominalMetric):
            self.mode = "nominal"
        elif isinstance(metric, SquaredDifferenceMetric):
            self.mode = "moments"
            x = metric.x[prep.codes]
            self.s1 = np.bincount(unit_of_value, weights=x, minlength=n_units)
            self.s2 = np.bincount(unit_of_value, weights=x * x, minlength=n_units)
        else:
            self.dense = metric.dense_matrix()
            if self.dense is not None:
                self.mode = "dense"
            elif expected == "resample":
                raise AgreementError(
                    f"cannot resample the expected disagreement for {metric.n_values} distinct "
                    f'values under distance "{prep.distance}" (limit {MAX_DENSE_VALUES}); '
                    'use expected="fixed" or expected="auto"'
                )
            else:
                self.mode = "fixed"
        if self.mode in ("nominal", "dense"):
            # n*_v = sum over values of the weight of their unit, grouped by code:
            # sort values by code once, then reduceat per replicate chunk.
            by_code = np.argsort(prep.codes, kind="stable")
            self.unit_by_code = unit_of_value[by_code]
            self.code_starts = np.flatnonzero(np.r_[True, np.diff(prep.codes[by_code]) != 0])
            # A replicate's n*_v is at most n_units * max(m_u).
            exact32 = n_units * int(prep.unit_sizes.max()) < 2**24
            self.count_dtype = np.float32 if exact32 else np.float64

    def of_replicates(
        self, counts: np.ndarray, weights: np.ndarray, n_star: np.ndarray
    ) -> np.ndarray:
        """E* for each replicate of a chunk (``counts``: draws per unit, one row a replicate)."""
        if self.mode == "moments":
            t1 = weights @ self.s1
            t2 = weights @ self.s2
            return 2.0 * (n_star * t2 - t1 * t1)
        # np.take is several times faster than fancy indexing here, and float32 halves the
        # memory traffic; it stays exact because all partial sums are integers below 2**24.
        per_value = np.take(counts.astype(self.count_dtype), self.unit_by_code, axis=1)
        n_v = np.add.reduceat(per_value, self.code_starts, axis=1).astype(np.float64)
        if self.mode == "nominal":
            return n_star * n_star - np.einsum("ij,ij->i", n_v, n_v)
        return np.einsum("ij,ij->i", n_v @ self.dense, n_v)
