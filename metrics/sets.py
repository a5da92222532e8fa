"""Set-valued scores for citation recovery (Xing, Baldwin & Lau, "Evaluating Evidence
Attribution in Generated Fact Checking Explanations").

Plain functions over plain Python data (no Django). In citation recovery one citation marker of an
explanation is masked; the annotator (or an LLM judge) selects the explanation sentences that the
masked evidence supports. X_gold = the sentences whose marker was masked, X_pred = the selection.

Conventions (all documented on the functions):

* per-item precision / recall / F1 with explicit empty-set rules (:func:`set_scores`);
* mean ± standard deviation over items with the population SD (``ddof=0``, NumPy's default)
  unless the caller asks for the sample SD (``ddof=1``); with the ~120 items per cell of the
  paper the two differ by less than 0.5 %;
* "sample" setting: one masked evidence per claim, every row is an item; "full" setting: every
  cited evidence masked in turn, scores averaged per claim first, then over claims;
* transparency proportion: share of explanations whose every scored evidence reaches
  F1 >= threshold (default 0.6, inclusive, up to 1e-12 of rounding);
* judge versus humans: "none" (the empty selection) is the label -1, as the paper's LLM
  annotators answer it; union of the humans' selections, labels outside gold ("none" included)
  collapsed into one label (default -2), then Krippendorff's alpha with Jaccard distance between
  the two coders. A gold of ∅ means "none" is right: it is the gold {-1}.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from metrics.distances import DistanceSpec

__all__ = [
    "JUDGE",
    "HUMANS",
    "OTHER_LABEL",
    "NONE_LABEL",
    "MeanSD",
    "ScoreSummary",
    "SetScores",
    "aggregate_claims",
    "annotation_entropy",
    "breakdown_by_group",
    "breakdown_values_by_group",
    "judge_human_alpha",
    "judge_human_reliability_data",
    "mean_sd",
    "merge_selections",
    "none_as_label",
    "set_scores",
    "standardise_to_gold",
    "summarise_scores",
    "transparency_proportion",
]

NAN = float("nan")
#: How far below the transparency threshold an F1 (mean) may be computed and still pass: the
#: rounding of float F1s, see :func:`transparency_proportion`.
TRANSPARENCY_SLACK = 1e-12
OTHER_LABEL = -2
NONE_LABEL = -1
JUDGE = "judge"
HUMANS = "humans"


# --- per-item scores -----------------------------------------------------------------------------


def annotation_entropy(counts: Iterable[float]) -> float:
    """Entropy in bits of how often each option of an item was chosen (Xing et al., Appendix B):
    the counts are normalised to a distribution, so ``[0, 0, 4, 0]`` gives 0 and ``[1, 1, 1, 1]``
    the maximum, log2 4 = 2. Options nobody chose add nothing; NaN when nothing was chosen."""
    counts = [float(c) for c in counts if c > 0]
    total = sum(counts)
    if not total:
        return NAN
    return max(0.0, -sum((c / total) * math.log2(c / total) for c in counts))


@dataclass(frozen=True)
class SetScores:
    """Precision, recall and F1 of one predicted set against one gold set."""

    precision: float
    recall: float
    f1: float


def set_scores(predicted: Iterable[Hashable], gold: Iterable[Hashable]) -> SetScores:
    """Set precision, recall and F1 of ``predicted`` against ``gold`` (duplicates ignored).

    P = |pred ∩ gold| / |pred|, R = |pred ∩ gold| / |gold|, F1 = 2PR / (P + R) (0 when P + R = 0).
    Empty sets, where a ratio would be 0/0:

    * gold = ∅ means "no sentence" is the right answer: pred = ∅ scores P = R = F1 = 1, a
      non-empty pred scores P = R = F1 = 0;
    * pred = ∅ against a non-empty gold: P = 0 (the paper's P = |∩| / |pred| with an empty
      prediction counted as 0, not left out), R = 0, F1 = 0.
    """
    pred_set, gold_set = set(predicted), set(gold)
    if not gold_set:
        return SetScores(1.0, 1.0, 1.0) if not pred_set else SetScores(0.0, 0.0, 0.0)
    if not pred_set:
        return SetScores(0.0, 0.0, 0.0)
    hits = len(pred_set & gold_set)
    precision = hits / len(pred_set)
    recall = hits / len(gold_set)
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return SetScores(precision, recall, f1)


# --- aggregation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeanSD:
    """Mean, standard deviation and number of values; ``str`` gives ``"0.62 ± 0.29"``."""

    mean: float
    sd: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.2f} ± {self.sd:.2f}"


def mean_sd(values: Iterable[float], ddof: int = 0) -> MeanSD:
    """Mean ± standard deviation of ``values``.

    ``ddof=0`` (default) is the population SD (divide by n), ``ddof=1`` the sample SD (divide by
    n - 1). Mean and SD are NaN without values; the SD is NaN when n <= ddof.
    """
    data = list(map(float, values))
    n = len(data)
    if n == 0:
        return MeanSD(NAN, NAN, 0)
    mean = sum(data) / n
    if n <= ddof:
        return MeanSD(mean, NAN, n)
    return MeanSD(mean, math.sqrt(sum([(v - mean) ** 2 for v in data]) / (n - ddof)), n)


@dataclass(frozen=True)
class ScoreSummary:
    """Mean ± SD of precision, recall and F1 over the same ``n`` items."""

    precision: MeanSD
    recall: MeanSD
    f1: MeanSD

    @property
    def n(self) -> int:
        return self.f1.n


def summarise_scores(scores: Iterable[SetScores], ddof: int = 0) -> ScoreSummary:
    """Mean ± SD of precision, recall and F1 over items (see :func:`mean_sd` for ``ddof``)."""
    items = list(scores)
    return ScoreSummary(
        mean_sd(map(attrgetter("precision"), items), ddof),
        mean_sd(map(attrgetter("recall"), items), ddof),
        mean_sd(map(attrgetter("f1"), items), ddof),
    )


def _average(scores: Sequence[SetScores]) -> SetScores:
    n = len(scores)
    return SetScores(
        sum(s.precision for s in scores) / n,
        sum(s.recall for s in scores) / n,
        sum(s.f1 for s in scores) / n,
    )


def aggregate_claims(
    rows: Iterable[tuple[Hashable, SetScores]],
    setting: Literal["full", "sample"] = "full",
    ddof: int = 0,
) -> ScoreSummary:
    """Mean ± SD of P/R/F1 over claims in the paper's "full" or "sample" setting.

    ``rows`` are ``(claim_id, SetScores)``, one per scored (masked evidence[, annotator]).

    * ``"full"``: every cited evidence of an explanation is masked in turn; the rows of a claim
      are averaged first (P, R and F1 each averaged; F1 is not recomputed from the averaged P
      and R), then mean ± SD is taken over claims, so n = number of claims.
    * ``"sample"``: one masked evidence per claim; every row is one item, n = number of rows.
    """
    if setting not in ("full", "sample"):
        raise ValueError(f"unknown setting {setting!r}: use 'full' or 'sample'")
    rows = list(rows)
    if setting == "sample":
        return summarise_scores(map(itemgetter(1), rows), ddof)
    by_claim: dict[Hashable, list[SetScores]] = defaultdict(list)
    for claim, scores in rows:
        by_claim[claim].append(scores)
    return summarise_scores((_average(s) for s in by_claim.values()), ddof)


def transparency_proportion(
    f1_by_explanation: Mapping[Hashable, Sequence[float]] | Iterable[Sequence[float]],
    threshold: float = 0.6,
) -> float:
    """Share of explanations whose every scored evidence reaches F1 >= ``threshold``.

    Pass a mapping explanation → F1 of each of its masked evidences (or just the sequences). In
    the full setting an explanation has several F1 values (one per cited evidence), in the sample
    setting one. The threshold is inclusive (0.6 passes at 0.6). Explanations without any score
    are left out; NaN if none is left.

    Inclusive up to rounding: an F1 is a ratio of set sizes (rational), but it arrives as a
    float, and a mean of several annotators' F1s that is exactly the threshold can be computed
    one step below it (1/2, 3/4, 3/4, 2/3, 1/3 average to 3/5 and come out 0.5999999999999999).
    So a value passes from ``threshold - TRANSPARENCY_SLACK`` on. The slack, 1e-12 (≈ 4,500
    ulps of 1), covers the rounding of the F1s (about 3 ulps each: P, R, their product, sum
    and quotient) and of means over thousands of them; a mean of F1s that truly lies below the
    threshold is further off than that (five annotators on explanations of up to ten sentences:
    their F1 means are multiples of 1 / (5 · lcm(1..20)), so at least 8.6e-10 from 3/5).
    """
    groups = (
        f1_by_explanation.values() if isinstance(f1_by_explanation, Mapping) else f1_by_explanation
    )
    judged = passed = 0
    threshold = threshold - TRANSPARENCY_SLACK
    for group in groups:
        values = group if isinstance(group, (list, tuple)) else list(group)
        if not values:
            continue
        judged += 1
        if len(values) == 1:  # the sample setting: one F1 per explanation
            passed += values[0] >= threshold
        elif all(f >= threshold for f in values):
            passed += 1
    if not judged:
        return NAN
    return passed / judged


def breakdown_by_group(
    rows: Iterable[tuple[Hashable, SetScores]], ddof: int = 0
) -> dict[Hashable, ScoreSummary]:
    """Per-group mean ± SD (and n) of P/R/F1 from ``(group, SetScores)`` rows.

    Groups keep their first-seen order. Aggregate to one row per item first (e.g. with the
    per-claim averaging of the full setting) if a group should count claims rather than rows.
    """
    by_group: dict[Hashable, list[SetScores]] = defaultdict(list)
    for group, scores in rows:
        by_group[group].append(scores)
    return {g: summarise_scores(s, ddof) for g, s in by_group.items()}


def breakdown_values_by_group(
    rows: Iterable[tuple[Hashable, float]], ddof: int = 0
) -> dict[Hashable, MeanSD]:
    """Per-group mean ± SD (and n) of one number per row, from ``(group, value)`` rows."""
    by_group: dict[Hashable, list[float]] = defaultdict(list)
    for group, value in rows:
        by_group[group].append(value)
    return {g: mean_sd(v, ddof) for g, v in by_group.items()}


# --- judge versus humans -------------------------------------------------------------------------


def merge_selections(selections: Iterable[Iterable[Hashable]]) -> frozenset:
    """Union of several annotators' selections for one item (∅ for no selections)."""
    merged: set = set()
    for selection in selections:
        merged.update(selection)
    return frozenset(merged)


def standardise_to_gold(
    selection: Iterable[Hashable], gold: Iterable[Hashable], other: Hashable = OTHER_LABEL
) -> frozenset:
    """Replace every label outside ``gold`` by the single label ``other`` (default -2).

    Gold {9}: {7, 9} → {-2, 9}; {5, 9} → {-2, 9}; ∅ stays ∅. All wrong selections thus count as
    the same wrong answer, so a judge and the humans are not penalised for being wrong in
    different ways. ``other`` must not be a gold label (``ValueError``).
    """
    gold_set = set(gold)
    if other in gold_set:
        raise ValueError(f"the replacement label {other!r} is itself a gold label")
    return frozenset(label if label in gold_set else other for label in selection)


def none_as_label(selection: Iterable[Hashable], none: Hashable = NONE_LABEL) -> frozenset:
    """A selection as labels, with "no sentence" (the empty selection) as the label ``none``
    (default -1, the paper's answer for "no sentence should cite it"): ∅ → {-1}; any other
    selection is unchanged."""
    labels = frozenset(selection)
    return labels or frozenset({none})


JudgeHumanItem = tuple[Iterable[Hashable], Iterable[Hashable] | None, Iterable[Iterable[Hashable]]]


def judge_human_reliability_data(
    items: Mapping[Hashable, JudgeHumanItem]
    | Iterable[
        tuple[Hashable, Iterable[Hashable], Iterable[Hashable] | None, Iterable[Iterable[Hashable]]]
    ],
    other: Hashable = OTHER_LABEL,
) -> dict[Hashable, dict[Hashable, frozenset]]:
    """Reliability data ``{item: {"judge": set, "humans": set}}`` for judge-vs-humans alpha.

    ``items`` are ``(item_id, gold, judge_selection, human_selections)`` tuples or a mapping
    ``item_id → (gold, judge_selection, human_selections)``.

    Every empty selection ("none") is first the label -1 (:func:`none_as_label`), so a human's
    "none" is not lost in the union: humans ∅ and {3} merge to {-1, 3}. The humans' selections
    are merged by union (:func:`merge_selections`); then both the judge's set and the merged set
    go through :func:`standardise_to_gold`, where -1, outside gold, becomes ``other`` like any
    wrong sentence (gold {3}: {-1, 3} → {-2, 3}). An empty gold means "none" is the right
    answer and counts as gold {-1}, so a right "none" stays -1 and differs from a wrong sentence.
    A judge selection of ``None`` or an empty list of human selections leaves that coder out
    of the item.
    """
    entries = (
        ((key, *value) for key, value in items.items()) if isinstance(items, Mapping) else items
    )
    data: dict[Hashable, dict[Hashable, frozenset]] = {}
    for item_id, gold, judge, humans in entries:
        gold_set = none_as_label(gold)
        human_list = [none_as_label(h) for h in humans]
        row: dict[Hashable, frozenset] = {}
        if judge is not None:
            row[JUDGE] = standardise_to_gold(none_as_label(judge), gold_set, other)
        if human_list:
            row[HUMANS] = standardise_to_gold(merge_selections(human_list), gold_set, other)
        data[item_id] = row
    return data


def judge_human_alpha(
    items: Mapping[Hashable, JudgeHumanItem]
    | Iterable[
        tuple[Hashable, Iterable[Hashable], Iterable[Hashable] | None, Iterable[Iterable[Hashable]]]
    ],
    distance: DistanceSpec = "jaccard",
    other: Hashable = OTHER_LABEL,
) -> float:
    """Krippendorff's alpha between an LLM judge and the merged humans (paper §4.1, fn. 11).

    Builds :func:`judge_human_reliability_data` ("none" as -1, union of the humans' selections,
    labels outside gold → ``other``) and computes alpha over items with two coders, "judge" and "humans", with
    Jaccard distance by default (``"masi"`` or a callable also work; d(∅, ∅) = 0). Items where
    one coder is missing are not pairable and drop out of alpha; if no item has both coders,
    :func:`metrics.alpha.krippendorff_alpha` raises ``AgreementError`` (a ``ValueError``).
    """
    from metrics.alpha import krippendorff_alpha

    return krippendorff_alpha(judge_human_reliability_data(items, other), distance=distance)
