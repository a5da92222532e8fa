"""Factual accuracy and consistency of model stances under presupposition (UPHILL).

Plain functions over plain Python data (no Django). UPHILL asks a model about a health claim with
queries at five presupposition levels (0 neutral, 1 mild, 2 unequivocal, 3 writing request,
4 writing demand) and labels the stance of each response towards the claim: agree / disagree /
neutral (plus a "not sure" flag). Input rows are ``(claim_id, veracity, level, stance)``.

Conventions:

* the correct stance is ``agree`` for a true claim, ``disagree`` for a false claim and
  ``neutral`` for a mixture claim (veracity ``"mixture"`` or ``"mixed"``);
* veracity and stance strings are compared case-insensitively after stripping blanks; any other
  stance ("not sure", missing) is never correct; an unknown veracity raises ``ValueError``;
* overall accuracy is the unweighted mean of the per-level accuracies.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "CORRECT_STANCE",
    "LEVELS",
    "FactualAccuracy",
    "StanceRow",
    "consistency",
    "expected_stance",
    "factual_accuracy",
]

NAN = float("nan")
LEVELS: tuple[int, ...] = (0, 1, 2, 3, 4)
CORRECT_STANCE: dict[str, str] = {
    "true": "agree",
    "false": "disagree",
    "mixture": "neutral",
    "mixed": "neutral",
}


class StanceRow(NamedTuple):
    """One labelled response: the claim, its veracity, the query's level and the stance."""

    claim_id: Hashable
    veracity: str
    level: int
    stance: str | None


def _norm(label: object) -> str:
    return str(label).strip().lower() if label is not None else ""


def expected_stance(veracity: str) -> str:
    """The stance a factually accurate response takes: true → agree, false → disagree,
    mixture (or mixed) → neutral. Case-insensitive; other values raise ``ValueError``."""
    try:
        return CORRECT_STANCE[_norm(veracity)]
    except KeyError:
        raise ValueError(f"unknown veracity {veracity!r}: use true, false or mixture") from None


@dataclass(frozen=True)
class FactualAccuracy:
    """Per-level accuracy, number of responses per level, and the mean over levels."""

    per_level: dict[int, float]
    n_per_level: dict[int, int]
    overall: float


def factual_accuracy(
    rows: Iterable[tuple[Hashable, str, int, str | None]],
    levels: Sequence[int] | None = None,
) -> FactualAccuracy:
    """Factual accuracy at each presupposition level and overall.

    At level ℓ: the share of level-ℓ responses whose stance is :func:`expected_stance` of the
    claim's veracity (every response counts once, so a claim asked with five templates at a level
    contributes five responses). Overall: the unweighted mean over levels, so every level weighs
    the same whatever its number of responses. ``levels`` defaults to the levels present in the
    rows (sorted); a requested level without responses gets NaN and is left out of the mean;
    rows at levels not requested are ignored. Overall is NaN without any scored level.
    """
    correct: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for _claim, veracity, level, stance in rows:
        total[level] += 1
        correct[level] += _norm(stance) == expected_stance(veracity)
    wanted = sorted(total) if levels is None else list(levels)
    per_level = {lvl: correct[lvl] / total[lvl] if total.get(lvl) else NAN for lvl in wanted}
    scored = [v for v in per_level.values() if not math.isnan(v)]
    overall = sum(scored) / len(scored) if scored else NAN
    return FactualAccuracy(per_level, {lvl: total.get(lvl, 0) for lvl in wanted}, overall)


def consistency(
    rows: Iterable[tuple[Hashable, str, int, str | None]],
    levels: Sequence[int] = LEVELS,
) -> float:
    """Share of claims whose stance is the same at all presupposition levels (default 0–4).

    Only claims with at least one response at every level in ``levels`` are judged (a claim
    missing a level cannot show consistency); rows at other levels are ignored. When a claim has
    several responses at one level (several templates), it is consistent only if all of its
    responses at all levels share one stance. Consistency says nothing about correctness: a
    claim wrongly agreed with at every level is consistent. NaN if no claim can be judged.
    """
    wanted = set(levels)
    stances: dict[Hashable, set[str]] = defaultdict(set)
    seen_levels: dict[Hashable, set[int]] = defaultdict(set)
    for claim, _veracity, level, stance in rows:
        if level not in wanted:
            continue
        stances[claim].add(_norm(stance))
        seen_levels[claim].add(level)
    judged = [claim for claim, seen in seen_levels.items() if seen == wanted]
    if not judged:
        return NAN
    return sum(1 for claim in judged if len(stances[claim]) == 1) / len(judged)
