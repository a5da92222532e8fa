"""Tests for metrics.classification (judge validation on label tasks, UPHILL Tables 4, 12, 13)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.classification import (
    classification_bootstrap,
    classification_scores,
    confusion_matrix,
    plurality_label,
)

LABELS = ["agree", "disagree", "neutral", "mixed"]

pairs = st.lists(
    st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=60
)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_per_class_and_averaged_scores_equal_scikit_learns_classification_report(data):
    from sklearn.metrics import classification_report

    reference = [r for r, _ in data]
    predicted = [p for _, p in data]
    expected = classification_report(reference, predicted, output_dict=True, zero_division=0)
    scores = classification_scores(reference, predicted)
    for row in scores.per_class:
        theirs = expected[row.label]
        assert row.precision == pytest.approx(theirs["precision"], abs=1e-12)
        assert row.recall == pytest.approx(theirs["recall"], abs=1e-12)
        assert row.f1 == pytest.approx(theirs["f1-score"], abs=1e-12)
        assert row.support == theirs["support"]
    assert {row.label for row in scores.per_class} == set(reference) | set(predicted)
    assert scores.macro_f1 == pytest.approx(expected["macro avg"]["f1-score"], abs=1e-12)
    assert scores.weighted_f1 == pytest.approx(expected["weighted avg"]["f1-score"], abs=1e-12)
    assert scores.n == len(data)


@settings(max_examples=50, deadline=None)
@given(pairs)
@pytest.mark.filterwarnings("ignore:A single label was found")
def test_confusion_matrix_equals_scikit_learns(data):
    from sklearn.metrics import confusion_matrix as sk_confusion

    reference = [r for r, _ in data]
    predicted = [p for _, p in data]
    labels, matrix = confusion_matrix(reference, predicted)
    assert [list(row) for row in matrix] == sk_confusion(
        reference, predicted, labels=labels
    ).tolist()


def test_the_interval_of_a_perfect_judge_is_one_to_one():
    reference = ["agree"] * 5 + ["disagree"] * 3 + ["neutral"]
    result = classification_bootstrap(reference, list(reference), n_boot=500, seed=1)
    for interval in (result.macro_f1, result.weighted_f1, result.accuracy):
        assert (interval.value, interval.lower, interval.upper) == (1.0, 1.0, 1.0)


def test_the_interval_holds_the_point_estimate_and_is_reproducible():
    reference = ["a", "a", "b", "b", "c", "c", "a", "b"]
    predicted = ["a", "b", "b", "b", "c", "a", "a", "c"]
    first = classification_bootstrap(reference, predicted, n_boot=400, seed=7)
    again = classification_bootstrap(reference, predicted, n_boot=400, seed=7)
    assert first == again
    point = classification_scores(reference, predicted)
    assert first.macro_f1.value == pytest.approx(point.macro_f1)
    assert first.weighted_f1.value == pytest.approx(point.weighted_f1)
    assert first.macro_f1.lower <= first.macro_f1.value <= first.macro_f1.upper
    assert 0 <= first.weighted_f1.lower < first.weighted_f1.upper <= 1


def test_a_small_case_by_hand():
    # reference a a b, predicted a b b: a P 1 R 1/2 F1 2/3; b P 1/2 R 1 F1 2/3.
    scores = classification_scores(["a", "a", "b"], ["a", "b", "b"])
    assert scores.labels == ("a", "b")
    assert scores.matrix == ((1, 1), (0, 1))
    assert scores.macro_f1 == pytest.approx(2 / 3)
    assert scores.weighted_f1 == pytest.approx(2 / 3)
    assert scores.accuracy == pytest.approx(2 / 3)


def test_declared_label_order_is_kept_and_empty_input_is_nan():
    labels, matrix = confusion_matrix(["b"], ["a"], labels=["b", "a", "c"])
    assert labels == ("b", "a", "c") and matrix[0] == (0, 1, 0)
    assert math.isnan(classification_scores([], []).macro_f1)
    with pytest.raises(
        ValueError, match=r"1 reference labels but 2 predicted labels: they must be paired"
    ):
        classification_scores(["a"], ["a", "b"])


def test_plurality_label_needs_a_single_most_common_label():
    assert plurality_label(["a", "a", "b"]) == "a"
    assert plurality_label(["a", "b"]) is None
    assert plurality_label([]) is None
