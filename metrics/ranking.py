"""Rankings with ties, mean average rank, Spearman's rho and the reproducibility measure CV*.

Plain functions over plain Python data (no Django).

Tie conventions. Annotators rank k outputs 1..k, lower is better, and tied outputs share a rank.
Three conventions are in use and this module converts between them:

* standard competition ("1224"): ``[1, 1, 3]`` — a tie pushes the next rank down;
* dense ("1223"): ``[1, 1, 2]`` — no gaps;
* fractional (average ranks): ``[1.5, 1.5, 3]`` — what Spearman's rho uses.

The three are order-preserving images of each other, so any of them can be converted to any
other from the values alone. :func:`mean_average_rank` averages the ranks exactly as the caller
passes them unless ``convention`` asks for a conversion of every single ranking first; MARs
computed under different conventions are not comparable (dense ranks give smaller MARs).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "MARResult",
    "cv_star",
    "mean_average_rank",
    "spearman_rho",
    "to_dense",
    "to_fractional",
    "to_standard_competition",
    "unbiased_sd",
]

NAN = float("nan")
Convention = Literal["competition", "dense", "fractional"]


# --- tie conventions -----------------------------------------------------------------------------


def to_standard_competition(ranks: Sequence[float]) -> list[int]:
    """Standard competition ranks ("1224") of a ranking given in any tie convention.

    Equal values are ties; each element's rank is 1 + the number of elements strictly better
    (smaller). ``[1, 1, 2]`` (dense) → ``[1, 1, 3]``; ``[3, 1, 3]`` → ``[2, 1, 2]``.
    """
    return [1 + sum(1 for other in ranks if other < value) for value in ranks]


def to_dense(ranks: Sequence[float]) -> list[int]:
    """Dense ranks ("1223") of a ranking given in any tie convention.

    Each element's rank is 1 + the number of distinct strictly better values.
    ``[1, 1, 3]`` (competition) → ``[1, 1, 2]``.
    """
    distinct = sorted(set(ranks))
    position = {value: i + 1 for i, value in enumerate(distinct)}
    return [position[value] for value in ranks]


def to_fractional(ranks: Sequence[float]) -> list[float]:
    """Fractional (average) ranks of a sequence of values: ties get the mean of the positions.

    ``[1, 1, 2]`` → ``[1.5, 1.5, 3.0]``. Also ranks arbitrary scores (smallest value → rank 1),
    which is how :func:`spearman_rho` uses it.
    """
    return [
        sum(1 for other in ranks if other < value)
        + (sum(1 for other in ranks if other == value) + 1) / 2
        for value in ranks
    ]


_CONVERTERS: dict[str, Callable[[Sequence[float]], Sequence[float]]] = {
    "competition": to_standard_competition,
    "dense": to_dense,
    "fractional": to_fractional,
}


# --- mean average rank ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MARResult:
    """Mean average ranks.

    ``per_annotator[a][s]``: mean rank annotator ``a`` gave system ``s`` over the items ``a``
    ranked. ``overall[s]``: mean over annotators of ``per_annotator[a][s]`` (each annotator weighs
    the same, as in ReproHum; annotators who never ranked ``s`` are left out of that mean).
    ``pooled[s]``: mean over all (annotator, item) rankings, for comparison. ``systems``: systems in
    first-seen order.
    """

    per_annotator: dict[Hashable, dict[Hashable, float]]
    overall: dict[Hashable, float]
    pooled: dict[Hashable, float]
    systems: list[Hashable] = field(default_factory=list)

    def vector(self, systems: Sequence[Hashable] | None = None) -> list[float]:
        """``overall`` as a list in the order of ``systems`` (default: first-seen order)."""
        return [self.overall[s] for s in (self.systems if systems is None else systems)]


def mean_average_rank(
    rows: Iterable[tuple[Hashable, Hashable, Hashable, float]],
    convention: Convention | None = None,
) -> MARResult:
    """Mean average rank (MAR) per system, per annotator and overall.

    ``rows`` are ``(annotator, item, system, rank)``; one ranking is the set of rows sharing
    ``(annotator, item)``. Ranks are averaged as given (lower = better) unless ``convention`` is
    ``"competition"``, ``"dense"`` or ``"fractional"``, in which case every ranking is first
    converted to that convention. A system ranked twice in one ranking raises ``ValueError``.
    """
    rankings: dict[tuple[Hashable, Hashable], dict[Hashable, float]] = defaultdict(dict)
    systems: dict[Hashable, None] = {}
    for annotator, item, system, rank in rows:
        ranking = rankings[(annotator, item)]
        if system in ranking:
            raise ValueError(f"{system!r} ranked twice by {annotator!r} for item {item!r}")
        ranking[system] = float(rank)
        systems.setdefault(system, None)
    if convention is not None:
        if convention not in _CONVERTERS:
            raise ValueError(f"unknown tie convention {convention!r}")
        convert = _CONVERTERS[convention]
        for key, ranking in rankings.items():
            names = list(ranking)
            converted = convert([ranking[s] for s in names])
            rankings[key] = {s: float(r) for s, r in zip(names, converted, strict=True)}

    by_annotator: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    pooled_ranks: dict[Hashable, list[float]] = defaultdict(list)
    for (annotator, _item), ranking in rankings.items():
        for system, rank in ranking.items():
            by_annotator[annotator][system].append(rank)
            pooled_ranks[system].append(rank)

    per_annotator = {
        a: {s: sum(r) / len(r) for s, r in ranks.items()} for a, ranks in by_annotator.items()
    }
    overall = {}
    for system in systems:
        mars = [m[system] for m in per_annotator.values() if system in m]
        overall[system] = sum(mars) / len(mars)
    pooled = {s: sum(r) / len(r) for s, r in pooled_ranks.items()}
    return MARResult(per_annotator, overall, pooled, list(systems))


# --- Spearman ------------------------------------------------------------------------------------


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation between two paired result vectors.

    Both vectors are converted to fractional (average) ranks and rho is the Pearson correlation
    of the rank vectors; this equals ``scipy.stats.spearmanr(x, y).statistic``, ties included.
    NaN when either vector is constant (or shorter than 2); ``ValueError`` for unequal lengths.
    """
    if len(x) != len(y):
        raise ValueError("spearman_rho needs two vectors of equal length")
    n = len(x)
    if n < 2:
        return NAN
    rx, ry = to_fractional(x), to_fractional(y)
    mx, my = sum(rx) / n, sum(ry) / n
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return NAN
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


# --- CV* -----------------------------------------------------------------------------------------


def _c4(n: int) -> float:
    """c4(n) = sqrt(2 / (n - 1)) * Gamma(n / 2) / Gamma((n - 1) / 2)."""
    return math.sqrt(2.0 / (n - 1)) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))


def unbiased_sd(values: Sequence[float]) -> float:
    """Unbiased estimate of the standard deviation, s / c4(n).

    s is the sample standard deviation with the n - 1 denominator; dividing by c4(n) removes its
    bias under normality (for n = 2, c4 = sqrt(2/pi) ≈ 0.798). Needs n >= 2.
    """
    n = len(values)
    if n < 2:
        raise ValueError("the unbiased standard deviation needs at least two values")
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return s / _c4(n)


def cv_star(values: Sequence[float], shift: float = 0.0) -> float:
    """Small-sample coefficient of variation CV* (Belz, Popović & Mille 2022, QRA).

    CV* = (1 + 1/(4n)) * 100 * s* / mean, where n = number of measurements (e.g. 2 for
    "reproduction vs original") and s* = s / c4(n) is the unbiased standard deviation of
    :func:`unbiased_sd` (s with the n - 1 denominator). This is the formula of the authors'
    reference code (github.com/asbelz/coeff-var); it reproduces their Table 4 (1.562, 2.487,
    4.176, 3.572) and all nine CV* values of ReproHum #0087-01 Table 2 from the published MARs.

    ``shift`` is subtracted from every value first: QRA recommends moving a scale that does not
    start at 0 to one that does (e.g. ``shift=1`` for ranks 1..3). The default 0 is what the
    ReproHum #0087-01 figures use (MARs on the 1..3 rank scale, unshifted). CV needs a positive
    mean: a mean <= 0 after shifting gives NaN. Fewer than two values raise ``ValueError``.
    """
    n = len(values)
    if n < 2:
        raise ValueError("CV* needs at least two measurements")
    shifted = [v - shift for v in values]
    mean = sum(shifted) / n
    if mean <= 0:
        return NAN
    return (1 + 1 / (4 * n)) * 100 * unbiased_sd(shifted) / mean
