"""Position effects in human judgements: does the side or place an option was shown in sway the
answer? (Django-free.)

* :func:`first_shown_preference`: pairwise preferences coded by position (+1 the option shown
  first was preferred, 0 a tie, -1 the one shown second): the share of decided answers that
  prefer the first-shown option, with a Wilson score interval. No position effect: 0.5.
* :func:`mean_rank_by_position`: ranks given to outputs by the position they were shown in.
  With outputs counterbalanced over positions, no position effect means the same mean rank at
  every position.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class PositionPreference:
    answers: int
    first: int  # the first-shown option preferred
    ties: int
    second: int  # the second-shown option preferred
    share_first: float | None  # first / (first + second); None without decided answers
    low: float | None
    high: float | None


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (Wilson 1927)."""
    if trials <= 0:
        raise ValueError("a proportion needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError("successes must lie between 0 and the trials")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def first_shown_preference(outcomes: Iterable[int], confidence: float = 0.95) -> PositionPreference:
    """Counts and the share of decided answers preferring the first-shown option."""
    first = ties = second = 0
    for outcome in outcomes:
        if outcome > 0:
            first += 1
        elif outcome < 0:
            second += 1
        else:
            ties += 1
    decided = first + second
    if not decided:
        return PositionPreference(first + ties + second, first, ties, second, None, None, None)
    low, high = wilson_interval(first, decided, confidence)
    return PositionPreference(decided + ties, first, ties, second, first / decided, low, high)


def mean_rank_by_position(rows: Iterable[tuple[int, float]]) -> dict[int, tuple[int, float]]:
    """``{position: (count, mean rank)}`` from ``(position shown, rank given)`` pairs."""
    ranks: dict[int, list[float]] = defaultdict(list)
    for position, rank in rows:
        ranks[position].append(float(rank))
    return {p: (len(r), sum(r) / len(r)) for p, r in sorted(ranks.items())}
