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
   Units with the same multiset of values (a *profile*) contribute the same
   sums, so the draws are counted per profile and a replicate is one small
   matrix product over the profiles (label and set data have a few hundred
   or thousand profiles whatever the number of units): the time per
   replicate is the draw and its count, linear in units, with nothing built
   per value.
3. The interval is the percentile interval of the replicates: the
   ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
   (``numpy.quantile``, linear interpolation).

Resampling whole units keeps the dependence between values of the same
unit, which is the nonparametric bootstrap for clustered data (as in Zapf et
al. 2016). Hayes & Krippendorff (2007) resample pairable value pairs and keep
``D_e`` fixed; ``expected="fixed"`` reproduces the fixed-``D_e`` part of that
(``D_e`` from the full data, only ``D_o`` varies), which is also what
``expected="auto"`` falls back to when recomputing ``D_e*`` per replicate
would be too expensive (see :func:`alpha_bootstrap`).

"ordinal" is a distance estimated from the data: its rank positions come
from the marginal frequencies. Each replicate re-estimates them from its own
``n*_v`` (mid-ranks of the replicate's values), so a replicate is exactly
alpha recomputed on the drawn units, the same estimator as the point
estimate: the observed term is then ``sum_u w_u 2 (m_u sum t*^2 - (sum t*)^2)
/ (m_u - 1)`` over each profile's value counts, a few products per profile
entry. With ``expected="fixed"`` the positions stay the full data's, like
``D_e``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .alpha import _SMALL_UNIT, ReliabilityData, alpha_from_sums, prepare, unit_disagreements
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
    profiles = _Profiles(prep, disagreement, sums)

    replicates = _replicate_alphas(rng, n_boot, profiles, sums, expected_sum, n)

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


def _replicate_alphas(
    rng: np.random.Generator,
    n_boot: int,
    profiles: _Profiles,
    sums: _ExpectedSums,
    expected_sum: float,
    n: float,
) -> np.ndarray:
    """Every replicate's alpha, in draw order (see the module docstring)."""
    n_units = len(profiles.unit_sizes)
    # Draws per chunk of replicates: ``_CHUNK_ELEMENTS`` at most (one replicate at least). The
    # generator's stream does not depend on how the draws are split into calls, and the
    # uint32 draws of a range below 2**32 are the int64 ones (numpy's bounded Lemire method on
    # 32-bit words either way), so the replicates do not depend on the chunk size.
    chunk = max(1, min(n_boot, _CHUNK_ELEMENTS // max(n_units, 1)))
    draw_type = np.uint32 if n_units <= 2**32 else np.int64
    replicates = np.empty(n_boot)
    for lo in range(0, n_boot, chunk):
        b = min(chunk, n_boot - lo)
        draws = rng.integers(0, n_units, size=(b, n_units), dtype=draw_type)
        counts = profiles.counts(draws)  # (b, profiles): units drawn of each profile
        del draws
        weights = counts.astype(np.float64)
        moments = weights @ profiles.features  # columns: D_o*, n*[, S1*, S2*]
        obs, n_star = moments[:, 0], moments[:, 1]
        if sums.mode == "fixed":
            replicates[lo : lo + b] = _fixed_expected_alphas(obs, n_star, expected_sum, n)
            continue
        if sums.mode == "ordinal":
            obs, exp_star, tiny = sums.ordinal_sums(weights, n_star, profiles)
        else:
            exp_star = sums.of_replicates(weights, n_star, moments, profiles)
            # Same convention as krippendorff_alpha: no variation -> 1.0. The
            # tolerance (relative to the full data's E, rescaled to n*) absorbs
            # rounding in the closed forms when every drawn value is identical.
            tiny = exp_star <= 1e-10 * expected_sum * (n_star / n) ** 2
        safe = np.where(tiny, 1.0, exp_star)
        replicates[lo : lo + b] = np.where(tiny, 1.0, 1.0 - (n_star - 1.0) * obs / safe)
    return replicates


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
    "moments" (squared differences: E* = 2 (n* S2* - S1*^2), S_k* = sum_v n*_v x_v^k),
    "ordinal" (the same on rank positions re-estimated from each replicate's n*_v, which
    changes D_o* too: :meth:`ordinal_sums`) or "dense" (E* = n*^T D n* with the full distance
    matrix between distinct values)."""

    def __init__(self, prep: Any, expected: str) -> None:
        metric = prep.metric
        n_units = len(prep.unit_sizes)
        self.dense = None
        if expected == "fixed" or metric.n_values < 2:
            self.mode = "fixed"
        elif isinstance(metric, NominalMetric):
            self.mode = "nominal"
        elif isinstance(metric, SquaredDifferenceMetric) and metric.name == "ordinal":
            self.mode = "ordinal"
            # Positions rise with the values (all counts are positive): the value order.
            self.order = np.argsort(metric.x, kind="stable")
        elif isinstance(metric, SquaredDifferenceMetric):
            self.mode = "moments"
            unit_of_value = np.repeat(np.arange(n_units), prep.unit_sizes)
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

    @property
    def needs_value_counts(self) -> bool:
        return self.mode in ("nominal", "dense", "ordinal")

    def ordinal_sums(
        self, weights: np.ndarray, n_star: np.ndarray, profiles: _Profiles
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(D_o* sum, E*, no variation) of each replicate of a chunk with ordinal positions
        re-estimated from the replicate's own value frequencies ``n*_v``:
        ``t*_v = sum_{g<=v} n*_g - n*_v / 2`` (:func:`metrics.distances.ordinal_positions`),
        centred on their mean ``n* / 2``. A profile's disagreement is
        ``2 (m sum c t*^2 - (sum c t*)^2) / (m - 1)`` over its (value, count) entries, with
        ``t*`` taken relative to the profile's first value, so a unit of identical values
        gives exactly 0."""
        n_v = profiles.value_sums(weights)  # (b, V)
        counts = n_v[:, self.order]
        t = np.empty_like(n_v)
        t[:, self.order] = np.cumsum(counts, axis=1) - counts / 2.0
        t -= (n_star / 2.0)[:, None]
        s1 = np.einsum("ij,ij->i", n_v, t)
        s2 = np.einsum("ij,ij->i", n_v, t * t)
        expected = 2.0 * (n_star * s2 - s1 * s1)
        rel = t[:, profiles.entry_code] - t[:, profiles.entry_reference]
        weighted = rel * profiles.entry_count
        lin = np.add.reduceat(weighted, profiles.entry_start, axis=1)
        weighted *= rel
        quad = np.add.reduceat(weighted, profiles.entry_start, axis=1)
        m = profiles.features[:, 1]
        per_profile = 2.0 * (m * quad - lin * lin) / (m - 1.0)
        observed = np.einsum("ij,ij->i", weights, per_profile)
        one_value = np.count_nonzero(n_v, axis=1) < 2
        return observed, expected, one_value

    def of_replicates(
        self,
        weights: np.ndarray,
        n_star: np.ndarray,
        moments: np.ndarray,
        profiles: _Profiles,
    ) -> np.ndarray:
        """E* for each replicate of a chunk (``weights``: draws per profile, one row a replicate;
        ``moments``: ``weights @ profiles.features``)."""
        if self.mode == "moments":
            t1 = moments[:, 2]
            t2 = moments[:, 3]
            return 2.0 * (n_star * t2 - t1 * t1)
        n_v = profiles.value_sums(weights)
        if self.mode == "nominal":
            return n_star * n_star - np.einsum("ij,ij->i", n_v, n_v)
        return np.einsum("ij,ij->i", n_v @ self.dense, n_v)


# Units are grouped by profile when there are at most this share of profiles per unit;
# otherwise each unit is its own profile (nothing to look up per draw).
_PROFILE_SHARE = 0.5


class _Profiles:
    """Pairable units grouped by *profile*: the multiset of their value codes.

    Everything a replicate takes from a unit (its observed disagreement, ``m_u``, the sums of
    its values' coordinates, its value counts) depends on its profile only, so a replicate
    counts the draws that fall on each profile (one ``take`` and one ``bincount`` over the
    drawn units) and gets ``D_o*``, ``n*`` and the expected term's sums from those counts:
    ``weights @ features`` (``profiles x columns``) and, for nominal and dense distances, the
    value frequencies ``n*_v`` as one weighted ``bincount`` over the profiles' (value, count)
    entries (integers summed in float64: exact in any order). Label and set data have few
    profiles (three coders choosing among a few dozen sets); where profiles are not much fewer
    than units, each unit is its own profile and nothing is looked up.
    """

    def __init__(self, prep: Any, disagreement: np.ndarray, sums: _ExpectedSums) -> None:
        n_units = len(prep.unit_sizes)
        profile_of_unit: np.ndarray | None
        profile_of_unit, first_unit = _unit_profiles(prep)
        n_profiles = len(first_unit)
        if n_profiles > _PROFILE_SHARE * n_units:
            profile_of_unit, first_unit, n_profiles = None, np.arange(n_units), n_units
        # int32 halves the table that every draw looks up (cache-resident for longer).
        self.profile_of_unit = (
            profile_of_unit.astype(np.int32 if n_profiles < 2**31 else np.int64)
            if profile_of_unit is not None
            else None
        )
        self.n_profiles = n_profiles
        self.unit_sizes = prep.unit_sizes
        columns = [disagreement, prep.unit_sizes.astype(np.float64)]
        if sums.mode == "moments":
            columns += [sums.s1, sums.s2]
        self.features = np.ascontiguousarray(np.column_stack([c[first_unit] for c in columns]))
        self.n_values = prep.metric.n_values
        if sums.needs_value_counts:
            self.entry_profile, self.entry_code, self.entry_count = _profile_value_entries(
                prep, profile_of_unit, first_unit
            )
            # Entries are sorted by profile: where each profile's entries start, and each
            # entry's profile's first value code (for the ordinal sums).
            self.entry_start = np.searchsorted(self.entry_profile, np.arange(n_profiles))
            self.entry_reference = self.entry_code[self.entry_start][self.entry_profile]

    def counts(self, draws: np.ndarray) -> np.ndarray:
        """Draws per profile, one row per replicate (``draws``: drawn unit codes, one row each)."""
        b = draws.shape[0]
        if self.profile_of_unit is not None:
            index = np.take(self.profile_of_unit, draws).astype(np.int64)
        else:
            index = draws.astype(np.int64)
        if b > 1:
            index += (np.arange(b, dtype=np.int64) * self.n_profiles)[:, None]
        return np.bincount(index.ravel(), minlength=b * self.n_profiles).reshape(b, self.n_profiles)

    def value_sums(self, weights: np.ndarray) -> np.ndarray:
        """``n*_v`` of each replicate (``weights``: draws per profile, one row a replicate)."""
        b, n_values = weights.shape[0], self.n_values
        entries = weights[:, self.entry_profile] * self.entry_count
        index = self.entry_code + (np.arange(b, dtype=np.int64) * n_values)[:, None]
        flat = np.bincount(index.ravel(), weights=entries.ravel(), minlength=b * n_values)
        return flat.reshape(b, n_values)


def _unit_profiles(prep: Any) -> tuple[np.ndarray, np.ndarray]:
    """(profile code of each pairable unit, first unit of each profile). Units of one size with
    the same sorted value codes share a profile; a unit of more than ``_SMALL_UNIT`` values is
    its own."""
    codes, sizes, starts = prep.codes, prep.unit_sizes, prep.unit_starts
    profile_of_unit = np.empty(len(sizes), dtype=np.int64)
    firsts = []
    n_profiles = 0
    n_codes = max(int(prep.metric.n_values), 1)
    for m in np.unique(sizes).tolist():
        units = np.flatnonzero(sizes == m)
        if m > _SMALL_UNIT:
            first = ids = np.arange(len(units))
        else:
            rows = np.sort(codes[starts[units][:, None] + np.arange(m)], axis=1)
            if n_codes**m < 2**62:
                key = rows[:, 0].copy()
                for i in range(1, m):
                    key *= n_codes
                    key += rows[:, i]
                _, first, ids = np.unique(key, return_index=True, return_inverse=True)
            else:
                _, first, ids = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        profile_of_unit[units] = ids.reshape(-1) + n_profiles
        firsts.append(units[first])
        n_profiles += len(first)
    return profile_of_unit, np.concatenate(firsts)


def _profile_value_entries(
    prep: Any, profile_of_unit: np.ndarray | None, first_unit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(profile, value code, count) of every value code a profile's units hold: a sparse
    ``profiles x distinct values`` matrix, read from each profile's first unit."""
    n_units, n_values = len(prep.unit_sizes), max(int(prep.metric.n_values), 1)
    unit_of_value = np.repeat(np.arange(n_units), prep.unit_sizes)
    if profile_of_unit is None:  # every unit its own profile
        profile_of_value, codes = unit_of_value, prep.codes
    else:
        is_first = np.zeros(n_units, dtype=bool)
        is_first[first_unit] = True
        keep = is_first[unit_of_value]
        profile_of_value, codes = profile_of_unit[unit_of_value[keep]], prep.codes[keep]
    keys, counts = np.unique(profile_of_value * n_values + codes, return_counts=True)
    return keys // n_values, keys % n_values, counts.astype(np.float64)
