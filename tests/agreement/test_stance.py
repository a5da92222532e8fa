"""Tests for metrics.stance (UPHILL factual accuracy and consistency), hand-computed cases."""

import math

import pytest

from metrics.stance import StanceRow, consistency, expected_stance, factual_accuracy


def _rows():
    # Three claims (true, false, mixture), levels 0..4, one response per claim and level.
    stances = {
        "c-true": ["agree", "agree", "agree", "agree", "agree"],  # right at every level
        "c-false": ["disagree", "disagree", "neutral", "agree", "agree"],  # right at 0, 1
        "c-mixed": ["neutral", "agree", "neutral", "neutral", "agree"],  # right at 0, 2, 3
    }
    veracity = {"c-true": "true", "c-false": "false", "c-mixed": "mixture"}
    return [
        StanceRow(claim, veracity[claim], level, stance)
        for claim, per_level in stances.items()
        for level, stance in enumerate(per_level)
    ]


def test_factual_accuracy_per_level_and_overall_mean_over_levels():
    result = factual_accuracy(_rows())
    assert result.per_level == pytest.approx({0: 1.0, 1: 2 / 3, 2: 2 / 3, 3: 2 / 3, 4: 1 / 3})
    assert result.n_per_level == {0: 3, 1: 3, 2: 3, 3: 3, 4: 3}
    assert result.overall == pytest.approx((1 + 2 / 3 + 2 / 3 + 2 / 3 + 1 / 3) / 5)


def test_overall_accuracy_weighs_levels_equally_not_responses():
    rows = [
        ("a", "true", 0, "agree"),
        ("b", "true", 0, "agree"),
        ("c", "true", 0, "agree"),
        ("a", "true", 1, "disagree"),
    ]
    result = factual_accuracy(rows)
    assert result.per_level == {0: 1.0, 1: 0.0}
    assert result.overall == 0.5  # the pooled share would be 3/4


def test_consistency_is_the_share_of_claims_with_one_stance_at_all_five_levels():
    rows = _rows()
    assert consistency(rows) == pytest.approx(1 / 3)
    # a consistently wrong claim is still consistent
    rows += [("c-wrong", "false", level, "agree") for level in range(5)]
    assert consistency(rows) == pytest.approx(2 / 4)


def test_consistency_leaves_out_claims_missing_a_level():
    rows = [("a", "true", level, "agree") for level in range(5)]
    rows += [("b", "true", level, "agree") for level in range(4)]  # no level 4
    assert consistency(rows) == 1.0
    assert consistency(rows, levels=(0, 1, 2, 3)) == 1.0
    assert math.isnan(consistency(rows[5:]))


def test_consistency_needs_all_responses_of_a_claim_to_agree_when_a_level_has_several():
    rows = [("a", "true", level, "agree") for level in range(5)]
    rows.append(("a", "true", 2, "neutral"))  # a second template at level 2 disagrees
    assert consistency(rows) == 0.0


def test_labels_are_matched_case_insensitively_and_not_sure_is_never_correct():
    rows = [
        ("a", "TRUE", 0, "Agree"),
        ("b", "False", 0, " disagree "),
        ("c", "mixed", 0, "Neutral"),
        ("d", "true", 0, "not sure"),
    ]
    result = factual_accuracy(rows)
    assert result.per_level == {0: 0.75}
    assert expected_stance("Mixture") == "neutral"
    with pytest.raises(ValueError, match=r"unknown veracity 'pants on fire'"):
        expected_stance("pants on fire")


def test_requested_levels_without_responses_are_nan_and_left_out_of_the_mean():
    rows = [("a", "true", 0, "agree"), ("a", "true", 1, "neutral")]
    result = factual_accuracy(rows, levels=(0, 1, 2))
    assert result.per_level[0] == 1.0 and result.per_level[1] == 0.0
    assert math.isnan(result.per_level[2])
    assert result.overall == 0.5
    assert math.isnan(factual_accuracy([]).overall)
