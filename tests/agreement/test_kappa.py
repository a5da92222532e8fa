"""Tests for metrics.kappa: published values first, then the documented edge rules."""

import math

import pytest

from metrics.kappa import (
    all_agree_rate,
    at_least_two_agree_rate,
    choice_entropy,
    choice_entropy_from_labels,
    cohen_kappa,
    count_matrix,
    fleiss_kappa,
    fleiss_kappa_from_labels,
    pairwise_agreement,
)

# Fleiss (1971): 30 patients, 6 psychiatrists each, 5 categories (1 Depression, 2 Personality
# Disorder, 3 Schizophrenia, 4 Neurosis, 5 Other). The data set `diagnoses` of R's irr package;
# columns rater1..rater6. Published: irr::kappam.fleiss(diagnoses) = 0.4302445 and
# irr::kappa2(diagnoses[, 1:2]) = 0.6511628.
DIAGNOSES = [
    [4, 4, 4, 4, 4, 4],
    [2, 2, 2, 5, 5, 5],
    [2, 3, 3, 3, 3, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3],
    [3, 3, 3, 3, 5, 5],
    [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4],
    [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4],
    [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3],
    [1, 4, 4, 4, 4, 4],
    [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5],
    [1, 1, 1, 1, 1, 2],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 4, 4, 4, 4, 4],
    [2, 2, 4, 5, 5, 5],
    [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4],
    [1, 1, 1, 1, 5, 5],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3],
    [5, 5, 5, 5, 5, 5],
]


# --- published values -------------------------------------------------------------------------


def test_fleiss_kappa_reproduces_fleiss_1971_diagnoses():
    assert fleiss_kappa_from_labels(DIAGNOSES) == pytest.approx(0.4302445, abs=1e-7)


def test_fleiss_kappa_on_the_count_matrix_of_diagnoses_gives_the_same_value():
    counts, categories = count_matrix(DIAGNOSES)
    assert categories == [1, 2, 3, 4, 5]
    assert len(counts) == 30 and all(sum(row) == 6 for row in counts)
    assert fleiss_kappa(counts) == pytest.approx(0.4302445, abs=1e-7)


def test_cohen_kappa_reproduces_irr_kappa2_on_raters_1_and_2_of_diagnoses():
    rater1 = [row[0] for row in DIAGNOSES]
    rater2 = [row[1] for row in DIAGNOSES]
    assert cohen_kappa(rater1, rater2) == pytest.approx(0.6511628, abs=1e-7)


def test_fleiss_kappa_reproduces_the_wikipedia_example():
    # The worked example of the Wikipedia article "Fleiss' kappa" (10 subjects, 14 raters).
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)


# --- kappa rules -------------------------------------------------------------------------------


def test_cohen_kappa_is_one_for_identical_labellings_and_symmetric():
    a = ["x", "y", "y", "z", "x"]
    b = ["x", "y", "z", "z", "y"]
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a))


def test_cohen_kappa_hand_computed_two_by_two_table():
    # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5 → 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_drops_pairs_with_a_missing_label():
    a = ["x", "y", None, "x"]
    b = ["x", "y", "x", None]
    assert cohen_kappa(a, b) == 1.0


def test_cohen_kappa_is_nan_when_chance_agreement_is_total():
    assert math.isnan(cohen_kappa(["a", "a", "a"], ["a", "a", "a"]))


def test_cohen_kappa_rejects_unpaired_input():
    with pytest.raises(ValueError, match=r"equal length \(paired items\)"):
        cohen_kappa([1, 2], [1])


def test_fleiss_kappa_rejects_subjects_with_different_numbers_of_raters():
    with pytest.raises(ValueError, match=r"same number of ratings for every subject"):
        fleiss_kappa([[2, 1], [1, 1]])


def test_fleiss_kappa_with_two_raters_and_perfect_agreement_is_one():
    assert fleiss_kappa_from_labels([["a", "a"], ["b", "b"], ["a", "a"]]) == 1.0


def test_count_matrix_keeps_declared_categories_even_when_unused():
    counts, categories = count_matrix([["a", "b"], ["a", "a"]], categories=["a", "b", "c"])
    assert categories == ["a", "b", "c"]
    assert counts == [[1, 1, 0], [2, 0, 0]]
    with pytest.raises(ValueError, match=r"label 'd' is not one of the declared categories"):
        count_matrix([["a", "d"]], categories=["a", "b"])


# --- percent agreement -------------------------------------------------------------------------


def test_pairwise_agreement_averages_the_share_of_agreeing_pairs_per_item():
    items = [
        ["a", "a", "a"],  # 3/3 pairs agree
        ["a", "a", "b"],  # 1/3
        ["a", "b", "c"],  # 0/3
        ["a", "a"],  # 1/1
        ["a"],  # not pairable: excluded
    ]
    assert pairwise_agreement(items) == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)


def test_all_agree_and_at_least_two_agree_rates():
    items = [["a", "a", "a"], ["a", "a", "b"], ["a", "b", "c"], ["b", "b", "b"], ["a"]]
    assert all_agree_rate(items) == pytest.approx(2 / 4)
    assert at_least_two_agree_rate(items) == pytest.approx(3 / 4)


def test_at_least_two_agree_ignores_items_with_fewer_than_three_labels_by_default():
    items = [["a", "b"], ["a", "a"], ["a", "b", "b"]]
    assert at_least_two_agree_rate(items) == 1.0
    assert at_least_two_agree_rate(items, min_labels=2) == pytest.approx(2 / 3)
    assert all_agree_rate(items) == pytest.approx(1 / 3)


def test_agreement_rates_are_nan_without_eligible_items():
    assert math.isnan(pairwise_agreement([["a"], []]))
    assert math.isnan(all_agree_rate([]))
    assert math.isnan(at_least_two_agree_rate([["a", "b"]]))


def test_agreement_rates_ignore_missing_labels():
    assert all_agree_rate([["a", None, "a"]]) == 1.0


# --- entropy -----------------------------------------------------------------------------------


def test_choice_entropy_is_zero_when_everyone_chose_the_same_option():
    assert choice_entropy([0, 0, 4, 0]) == 0.0


def test_choice_entropy_is_one_for_a_uniform_choice_distribution():
    assert choice_entropy([1, 1, 1, 1]) == pytest.approx(1.0)


def test_choice_entropy_is_normalised_by_the_log_of_the_number_of_options():
    # [2, 2, 0, 0]: H = ln 2, normalised by ln 4 → 0.5
    assert choice_entropy([2, 2, 0, 0]) == pytest.approx(0.5)
    assert choice_entropy([2, 2, 0, 0], normalise=False) == pytest.approx(math.log(2))


def test_choice_entropy_from_labels_counts_options_including_unchosen_ones():
    options = ["agree", "disagree", "neutral", "not sure"]
    assert choice_entropy_from_labels(["agree", "disagree"], options) == pytest.approx(0.5)
    assert choice_entropy_from_labels(["agree"] * 3, options) == 0.0
    with pytest.raises(ValueError, match=r"""labels \["'maybe'"\] are not among the options"""):
        choice_entropy_from_labels(["maybe"], options)


def test_choice_entropy_edge_cases():
    assert math.isnan(choice_entropy([0, 0, 0]))
    assert choice_entropy([5]) == 0.0
    with pytest.raises(ValueError, match=r"counts must be non-negative"):
        choice_entropy([1, -1])
