"""Classification scores of one coder (a judge) against reference labels (the humans), with
bootstrap intervals: the judge validation of UPHILL (Tables 4, 12, 13), where each entailment
judge is checked against the claim-response pairs the humans agree on.

Plain functions over plain Python data (no Django). Conventions (scikit-learn's, with
``zero_division=0``, so :func:`classification_scores` equals ``classification_report``):

* the classes are the labels seen in the reference or the predictions; ``labels`` only orders
  them (declared labels first, in their order, then the others sorted by their text);
* per class: precision = TP / predicted (0 when the class is never predicted), recall = TP /
  support (0 when it never occurs in the reference), F1 = 2PR / (P + R) (0 when P + R = 0);
* macro F1 = unweighted mean of the classes' F1; weighted F1 = mean weighted by support
  (the paper's "overall F1"); accuracy = share of equal pairs. All NaN without pairs;
* the confusion matrix has reference labels as rows and predicted labels as columns;
* :func:`classification_bootstrap`: percentile interval over replicates that draw the pairs
  with replacement; each replicate is scored like the full data (its classes are those present
  in the replicate), so a perfect coder's interval is exactly [1, 1].
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ClassScores",
    "ClassificationBootstrap",
    "ClassificationScores",
    "Interval",
    "classification_bootstrap",
    "classification_scores",
    "confusion_matrix",
    "plurality_label",
]

NAN = float("nan")
# Upper bound on the elements of one replicate chunk's work array (as in metrics.bootstrap).
_CHUNK_ELEMENTS = 1 << 20


def plurality_label(labels: Iterable[Hashable | None]) -> Hashable | None:
    """The single most common label (``None`` labels dropped), or None when there is no label
    or the most common count is tied."""
    counts = Counter(label for label in labels if label is not None).most_common(2)
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _ordered(
    seen: Iterable[Hashable], labels: Sequence[Hashable] | None, *, keep_declared: bool
) -> tuple:
    seen = set(seen)
    declared = list(dict.fromkeys(labels or ()))
    first = [label for label in declared if keep_declared or label in seen]
    rest = sorted((label for label in seen if label not in set(declared)), key=str)
    return tuple(first + rest)


def _check(reference: Sequence, predicted: Sequence) -> None:
    if len(reference) != len(predicted):
        raise ValueError(
            f"{len(reference)} reference labels but {len(predicted)} predicted labels: "
            "they must be paired"
        )


def confusion_matrix(
    reference: Sequence[Hashable],
    predicted: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> tuple[tuple, tuple[tuple[int, ...], ...]]:
    """``(labels, matrix)``: ``matrix[i][j]`` counts pairs with reference ``labels[i]`` and
    prediction ``labels[j]``. Declared ``labels`` are all kept (a row of zeros for a class
    nobody used); labels seen but not declared follow, sorted."""
    _check(reference, predicted)
    order = _ordered([*reference, *predicted], labels, keep_declared=True)
    index = {label: i for i, label in enumerate(order)}
    matrix = [[0] * len(order) for _ in order]
    for ref, pred in zip(reference, predicted, strict=True):
        matrix[index[ref]][index[pred]] += 1
    return order, tuple(tuple(row) for row in matrix)


@dataclass(frozen=True)
class ClassScores:
    """One class: precision, recall, F1, support (pairs whose reference is this class) and how
    often it was predicted."""

    label: Hashable
    precision: float
    recall: float
    f1: float
    support: int
    predicted: int


@dataclass(frozen=True)
class ClassificationScores:
    """Per-class scores, confusion matrix and averages of one coder against the reference."""

    labels: tuple
    matrix: tuple[tuple[int, ...], ...]
    per_class: tuple[ClassScores, ...]
    accuracy: float
    macro_f1: float
    weighted_f1: float
    n: int


def _scores_from_matrices(matrices: np.ndarray) -> dict[str, np.ndarray]:
    """Per-class and averaged scores of a stack of confusion matrices ``(b, K, K)``."""
    tp = np.diagonal(matrices, axis1=1, axis2=2).astype(np.float64)
    support = matrices.sum(axis=2).astype(np.float64)
    predicted = matrices.sum(axis=1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, 0.0)
        total = precision + recall
        f1 = np.where(total > 0, 2 * precision * recall / total, 0.0)
        present = (support > 0) | (predicted > 0)
        n_present = present.sum(axis=1)
        n = support.sum(axis=1)
        macro = np.where(n_present > 0, (f1 * present).sum(axis=1) / n_present, NAN)
        weighted = np.where(n > 0, (f1 * support).sum(axis=1) / n, NAN)
        accuracy = np.where(n > 0, tp.sum(axis=1) / n, NAN)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "support": support,
        "predicted": predicted,
        "macro_f1": macro,
        "weighted_f1": weighted,
        "accuracy": accuracy,
    }


def classification_scores(
    reference: Sequence[Hashable],
    predicted: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> ClassificationScores:
    """Per-class precision / recall / F1 / support, the confusion matrix, accuracy, macro and
    support-weighted F1 of ``predicted`` against ``reference`` (see the module docstring; equal
    to scikit-learn's ``classification_report`` with ``zero_division=0``). ``labels`` orders
    the classes; a declared class absent from both sides has no row."""
    _check(reference, predicted)
    order = _ordered([*reference, *predicted], labels, keep_declared=False)
    _, matrix = confusion_matrix(reference, predicted, order)
    k = len(order)
    scores = _scores_from_matrices(np.array([matrix], dtype=np.int64).reshape(1, k, k))
    per_class = tuple(
        ClassScores(
            label=label,
            precision=float(scores["precision"][0][i]),
            recall=float(scores["recall"][0][i]),
            f1=float(scores["f1"][0][i]),
            support=int(scores["support"][0][i]),
            predicted=int(scores["predicted"][0][i]),
        )
        for i, label in enumerate(order)
    )
    return ClassificationScores(
        labels=order,
        matrix=matrix,
        per_class=per_class,
        accuracy=float(scores["accuracy"][0]),
        macro_f1=float(scores["macro_f1"][0]),
        weighted_f1=float(scores["weighted_f1"][0]),
        n=len(reference),
    )


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval."""

    value: float
    lower: float
    upper: float


@dataclass(frozen=True)
class ClassificationBootstrap:
    """Bootstrap intervals of the averaged scores (``n_boot`` replicates over ``n`` pairs)."""

    accuracy: Interval
    macro_f1: Interval
    weighted_f1: Interval
    confidence: float
    n_boot: int
    n: int


def classification_bootstrap(
    reference: Sequence[Hashable],
    predicted: Sequence[Hashable],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = None,
) -> ClassificationBootstrap:
    """Percentile bootstrap intervals (``numpy.quantile``, linear interpolation) for accuracy,
    macro F1 and weighted F1, drawing the ``n`` pairs with replacement ``n_boot`` times. The
    same ``seed`` and data give the same intervals. Without pairs every figure is NaN."""
    _check(reference, predicted)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    n_boot = int(n_boot)
    point = classification_scores(reference, predicted)
    n = len(reference)
    names = ("accuracy", "macro_f1", "weighted_f1")
    if n == 0:
        nan = Interval(NAN, NAN, NAN)
        return ClassificationBootstrap(nan, nan, nan, confidence, n_boot, 0)
    index = {label: i for i, label in enumerate(point.labels)}
    k = len(point.labels)
    cells = np.array(
        [index[r] * k + index[p] for r, p in zip(reference, predicted, strict=True)],
        dtype=np.int64,
    )
    rng = np.random.default_rng(seed)
    replicates = {name: np.empty(n_boot) for name in names}
    chunk = max(1, min(n_boot, _CHUNK_ELEMENTS // max(n, k * k)))
    for lo in range(0, n_boot, chunk):
        b = min(chunk, n_boot - lo)
        draws = cells[rng.integers(0, n, size=(b, n))]
        draws += (np.arange(b) * (k * k))[:, None]
        matrices = np.bincount(draws.ravel(), minlength=b * k * k).reshape(b, k, k)
        scores = _scores_from_matrices(matrices)
        for name in names:
            replicates[name][lo : lo + b] = scores[name]
    tail = (1.0 - confidence) / 2.0
    intervals = {}
    for name in names:
        lower, upper = np.quantile(replicates[name], [tail, 1.0 - tail])
        intervals[name] = Interval(getattr(point, name), float(lower), float(upper))
    return ClassificationBootstrap(
        accuracy=intervals["accuracy"],
        macro_f1=intervals["macro_f1"],
        weighted_f1=intervals["weighted_f1"],
        confidence=confidence,
        n_boot=n_boot,
        n=n,
    )
