"""Chance-corrected and raw agreement for categorical labels, and per-item choice entropy.

Plain functions over plain Python data (no Django). Conventions:

* Labels are any hashable values; ``None`` means "no label" and is dropped wherever it appears.
* A statistic that is undefined for the given data (no eligible items, chance agreement equal to
  one) is returned as ``float("nan")`` rather than raising, so that a dashboard over a
  half-finished study can still render; malformed input (unpaired sequences, negative counts,
  unequal numbers of raters where the statistic needs equal numbers) raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations

import numpy as np

__all__ = [
    "all_agree_rate",
    "at_least_two_agree_rate",
    "choice_entropy",
    "choice_entropy_from_labels",
    "coded_agreement_rates",
    "cohen_kappa",
    "count_matrix",
    "fleiss_kappa",
    "fleiss_kappa_from_labels",
    "pairwise_agreement",
]

NAN = float("nan")


def _present(labels: Iterable[Hashable | None]) -> list[Hashable]:
    return [label for label in labels if label is not None]


# --- Cohen ---------------------------------------------------------------------------------------


def cohen_kappa(labels_a: Sequence[Hashable | None], labels_b: Sequence[Hashable | None]) -> float:
    """Cohen's (1960) unweighted kappa between two raters who labelled the same items.

    ``labels_a[i]`` and ``labels_b[i]`` are the two raters' labels of item ``i``. Pairs where
    either label is ``None`` are dropped. kappa = (p_o - p_e) / (1 - p_e), with p_o the observed
    share of identical pairs and p_e = sum_c p_a(c) p_b(c) from each rater's own marginals (as in
    R ``irr::kappa2`` and scikit-learn). Returns NaN when no pair is left or when p_e = 1 (both
    raters used one and the same category throughout).
    """
    if len(labels_a) != len(labels_b):
        raise ValueError("cohen_kappa needs two label sequences of equal length (paired items)")
    pairs = [
        (a, b) for a, b in zip(labels_a, labels_b, strict=True) if a is not None and b is not None
    ]
    n = len(pairs)
    if n == 0:
        return NAN
    observed = sum(1 for a, b in pairs if a == b) / n
    marg_a = Counter(a for a, _ in pairs)
    marg_b = Counter(b for _, b in pairs)
    expected = sum(marg_a[c] * marg_b.get(c, 0) for c in marg_a) / (n * n)
    if math.isclose(expected, 1.0):
        return NAN
    return (observed - expected) / (1.0 - expected)


# --- Fleiss --------------------------------------------------------------------------------------


def count_matrix(
    labels_per_subject: Iterable[Iterable[Hashable | None]],
    categories: Sequence[Hashable] | None = None,
) -> tuple[list[list[int]], list[Hashable]]:
    """Turn per-subject label lists into a subjects × categories count matrix.

    Returns ``(counts, categories)``; ``counts[i][k]`` is how many raters put subject ``i`` into
    ``categories[k]``. Without ``categories`` the observed labels are used, sorted (falling back
    to first-seen order when the labels are not mutually orderable). With ``categories``,
    unused categories keep a zero column and a label outside them raises ``ValueError``.
    ``None`` labels are dropped.
    """
    subjects = [_present(labels) for labels in labels_per_subject]
    if categories is None:
        seen: dict[Hashable, None] = {}
        for labels in subjects:
            for label in labels:
                seen.setdefault(label, None)
        try:
            cats: list[Hashable] = sorted(seen)  # type: ignore[type-var]
        except TypeError:
            cats = list(seen)
    else:
        cats = list(categories)
    index = {c: k for k, c in enumerate(cats)}
    counts: list[list[int]] = []
    for labels in subjects:
        row = [0] * len(cats)
        for label in labels:
            if label not in index:
                raise ValueError(f"label {label!r} is not one of the declared categories")
            row[index[label]] += 1
        counts.append(row)
    return counts, cats


def fleiss_kappa(counts: Sequence[Sequence[float]]) -> float:
    """Fleiss' (1971) kappa from a subjects × categories count matrix.

    ``counts[i][k]`` is the number of raters who assigned subject ``i`` to category ``k``. Every
    subject must have the same number of ratings m >= 2 (Fleiss' kappa is defined for a fixed
    number of raters per subject, not necessarily the same raters); otherwise ``ValueError``.
    P_i = (sum_k n_ik^2 - m) / (m (m - 1)), P-bar = mean_i P_i, p_k = sum_i n_ik / (N m),
    P_e = sum_k p_k^2, kappa = (P-bar - P_e) / (1 - P_e). NaN if there are no subjects or if
    P_e = 1 (all ratings in one category).
    """
    rows = [[float(x) for x in row] for row in counts]
    if not rows:
        return NAN
    if any(x < 0 for row in rows for x in row):
        raise ValueError("counts must be non-negative")
    totals = {sum(row) for row in rows}
    if len(totals) != 1:
        raise ValueError("Fleiss' kappa needs the same number of ratings for every subject")
    m = totals.pop()
    if m < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per subject")
    n_subjects = len(rows)
    n_categories = len(rows[0])
    if any(len(row) != n_categories for row in rows):
        raise ValueError("every row of the count matrix needs one entry per category")
    p_bar = sum((sum(x * x for x in row) - m) / (m * (m - 1)) for row in rows) / n_subjects
    p_k = [sum(row[k] for row in rows) / (n_subjects * m) for k in range(n_categories)]
    p_e = sum(p * p for p in p_k)
    if math.isclose(p_e, 1.0):
        return NAN
    return (p_bar - p_e) / (1.0 - p_e)


def fleiss_kappa_from_labels(
    labels_per_subject: Iterable[Iterable[Hashable | None]],
    categories: Sequence[Hashable] | None = None,
) -> float:
    """Fleiss' kappa from per-subject label lists (e.g. ``[["a", "a", "b"], ["b", "b", "b"]]``).

    The order of labels within a subject does not matter (raters need not be the same people
    across subjects). ``None`` labels are dropped before the equal-count check of
    :func:`fleiss_kappa`.
    """
    counts, _ = count_matrix(labels_per_subject, categories)
    return fleiss_kappa(counts)


# --- raw agreement -------------------------------------------------------------------------------


def pairwise_agreement(items: Iterable[Iterable[Hashable | None]]) -> float:
    """Mean over items of the share of rater pairs that gave the same label.

    Each element of ``items`` is one item's labels (``None`` dropped). Items with fewer than two
    labels are not pairable and are excluded. The per-item share is averaged over items (each
    item weighs the same, Fleiss' P-bar); when every item has the same number of labels this
    equals the pooled share over all pairs. NaN without pairable items.
    """
    shares = []
    for labels in items:
        present = _present(labels)
        if len(present) < 2:
            continue
        pairs = list(combinations(present, 2))
        shares.append(sum(1 for a, b in pairs if a == b) / len(pairs))
    return sum(shares) / len(shares) if shares else NAN


def all_agree_rate(items: Iterable[Iterable[Hashable | None]], min_labels: int = 2) -> float:
    """Share of items on which every rater gave the same label.

    Only items with at least ``min_labels`` labels (default 2, ``None`` dropped) count; an item
    with a single label agrees trivially and would inflate the rate. NaN without eligible items.
    """
    eligible = [p for p in (_present(labels) for labels in items) if len(p) >= max(min_labels, 1)]
    if not eligible:
        return NAN
    return sum(1 for p in eligible if len(set(p)) == 1) / len(eligible)


def at_least_two_agree_rate(
    items: Iterable[Iterable[Hashable | None]], min_labels: int = 3
) -> float:
    """Share of items on which at least two raters gave the same label.

    Only items with at least ``min_labels`` labels count; the default is 3 because with only two
    labels "at least two agree" is the same as "all agree" (UPHILL reports both for three
    annotators per item). Pass ``min_labels=2`` to include two-label items anyway. NaN without
    eligible items.
    """
    eligible = [p for p in (_present(labels) for labels in items) if len(p) >= max(min_labels, 2)]
    if not eligible:
        return NAN
    return sum(1 for p in eligible if max(Counter(p).values()) >= 2) / len(eligible)


def coded_agreement_rates(
    units: np.ndarray, labels: np.ndarray, *, n_units: int | None = None
) -> tuple[float, float, float]:
    """:func:`pairwise_agreement`, :func:`all_agree_rate` and :func:`at_least_two_agree_rate`
    (default ``min_labels``) of items given as integer columns: ``units[i]`` is the item of the
    ``i``-th label and ``labels[i]`` its code (equal labels, equal codes; missing labels left
    out). Items are taken in the order of their codes, so the rates equal those of the item lists
    in that order bit for bit; the cost is a sort of the labels, with no Python loop over them.
    """
    units = np.asarray(units, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if not len(units):
        return NAN, NAN, NAN
    n_units = int(units.max()) + 1 if n_units is None else n_units
    n_labels = int(labels.max()) + 1
    pair, counts = np.unique(units * n_labels + labels, return_counts=True)
    owner = pair // n_labels
    m = np.bincount(units, minlength=n_units)
    agreeing = np.bincount(owner, weights=counts * (counts - 1) // 2, minlength=n_units)
    distinct = np.bincount(owner, minlength=n_units)
    top = np.zeros(n_units, dtype=np.int64)
    np.maximum.at(top, owner, counts)
    two, three = m >= 2, m >= 3
    shares = (agreeing[two] / (m[two] * (m[two] - 1) // 2)).tolist()
    pairwise = sum(shares) / len(shares) if shares else NAN
    n_two, n_three = int(two.sum()), int(three.sum())
    all_agree = int((distinct[two] == 1).sum()) / n_two if n_two else NAN
    at_least_two = int((top[three] >= 2).sum()) / n_three if n_three else NAN
    return pairwise, all_agree, at_least_two


# --- entropy -------------------------------------------------------------------------------------


def choice_entropy(counts: Sequence[float], normalise: bool = True) -> float:
    """Entropy of one item's choice distribution (Xing et al., Appendix B).

    ``counts[k]`` is how often option ``k`` was chosen for the item; pass a zero for every option
    that nobody chose, since the number of options sets the normaliser. The counts are turned
    into proportions p_k and H = -sum_k p_k ln p_k (0 ln 0 = 0). With ``normalise`` (default) the
    result is H / ln K, K = ``len(counts)``, so it lies in [0, 1]: ``[0, 0, 4, 0]`` → 0 and
    ``[1, 1, 1, 1]`` → 1. Without ``normalise`` H is in nats. K = 1 gives 0; all-zero counts
    (nobody answered) give NaN; negative counts raise ``ValueError``.
    """
    values = [float(c) for c in counts]
    if any(c < 0 for c in values):
        raise ValueError("counts must be non-negative")
    total = sum(values)
    if total == 0:
        return NAN
    entropy = -sum((c / total) * math.log(c / total) for c in values if c > 0)
    entropy = max(entropy, 0.0)  # avoid -0.0
    if not normalise:
        return entropy
    if len(values) <= 1:
        return 0.0
    return min(entropy / math.log(len(values)), 1.0)


def choice_entropy_from_labels(
    labels: Iterable[Hashable | None], options: Sequence[Hashable], normalise: bool = True
) -> float:
    """:func:`choice_entropy` of an item from its raw labels and the full list of options.

    ``options`` fixes K (unchosen options count as zeros); a label outside ``options`` raises
    ``ValueError``; ``None`` labels are dropped.
    """
    counter = Counter(_present(labels))
    unknown = set(counter) - set(options)
    if unknown:
        raise ValueError(f"labels {sorted(map(repr, unknown))} are not among the options")
    return choice_entropy([counter.get(o, 0) for o in options], normalise=normalise)
