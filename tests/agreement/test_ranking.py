"""Tests for metrics.ranking: ReproHum #0087-01 and Belz et al. (2022) figures first."""

import math
import random

import pytest

from metrics.ranking import (
    cv_star,
    mean_average_rank,
    spearman_rho,
    to_dense,
    to_fractional,
    to_standard_competition,
    unbiased_sd,
)

SYSTEMS = ("Just", "Explain-Extr", "Explain-MT")
# Published MARs ("All"), ReproHum #0087-01, Just / Explain-Extr / Explain-MT.
ORIGINAL = [1.48, 1.89, 1.68]
ORIGINAL_RECOMPUTED = [1.50, 1.86, 1.69]
REPRODUCTION = [2.18, 1.93, 1.62]


# --- published values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "published"),
    [
        (ORIGINAL_RECOMPUTED, ORIGINAL, [1.34, 1.60, 0.59]),
        (REPRODUCTION, ORIGINAL, [38.14, 2.09, 3.63]),
        (REPRODUCTION, ORIGINAL_RECOMPUTED, [36.85, 3.68, 4.22]),
    ],
)
def test_cv_star_reproduces_reprohum_table_2_from_the_published_mars(first, second, published):
    # The MARs are themselves rounded to two decimals; all nine values nevertheless come out
    # equal to the published ones after rounding to two decimals (largest gap 0.005).
    measured = [cv_star([a, b]) for a, b in zip(first, second, strict=True)]
    assert measured == pytest.approx(published, abs=0.0051)
    assert [round(v, 2) for v in measured] == published


@pytest.mark.parametrize(
    ("measurements", "published"),
    [
        ([84.51, 84.50, 87.46, 85.60, 84.20, 86.61, 86.20], 1.562),
        ([30.65, 30.65, 29.13, 30.65, 29.96], 2.487),
        ([87.50, 80.75, 89.36, 88.10, 89.64, 88.80], 4.176),
        ([31.11, 30.28, 31.11, 29.12], 3.572),
    ],
)
def test_cv_star_reproduces_belz_popovic_mille_2022_table_4(measurements, published):
    assert round(cv_star(measurements), 3) == published


@pytest.mark.parametrize(
    ("first", "second", "published"),
    [
        (ORIGINAL_RECOMPUTED, ORIGINAL, 1.00),
        (REPRODUCTION, ORIGINAL, -0.50),
        (REPRODUCTION, ORIGINAL_RECOMPUTED, -0.50),
    ],
)
def test_spearman_rho_reproduces_reprohum_table_3(first, second, published):
    assert spearman_rho(first, second) == pytest.approx(published, abs=1e-12)


def test_mean_average_rank_overall_is_the_mean_of_the_annotators_mars():
    rows = [
        # annotator, item, system, rank
        ("ann1", "i1", "Just", 1),
        ("ann1", "i1", "Explain-Extr", 2),
        ("ann1", "i1", "Explain-MT", 2),
        ("ann1", "i2", "Just", 3),
        ("ann1", "i2", "Explain-Extr", 1),
        ("ann1", "i2", "Explain-MT", 2),
        ("ann2", "i3", "Just", 1),
        ("ann2", "i3", "Explain-Extr", 1),
        ("ann2", "i3", "Explain-MT", 3),
    ]
    result = mean_average_rank(rows)
    assert result.per_annotator["ann1"] == {"Just": 2.0, "Explain-Extr": 1.5, "Explain-MT": 2.0}
    assert result.per_annotator["ann2"] == {"Just": 1.0, "Explain-Extr": 1.0, "Explain-MT": 3.0}
    # Overall = mean of annotators' MARs (not the pooled mean over the three items).
    assert result.overall == {"Just": 1.5, "Explain-Extr": 1.25, "Explain-MT": 2.5}
    assert result.pooled == pytest.approx(
        {"Just": 5 / 3, "Explain-Extr": 4 / 3, "Explain-MT": 7 / 3}
    )
    assert result.systems == ["Just", "Explain-Extr", "Explain-MT"]
    assert result.vector(SYSTEMS) == [1.5, 1.25, 2.5]


def test_mean_average_rank_can_convert_each_ranking_to_a_tie_convention():
    # One item: dense ranks 1, 1, 2 become competition ranks 1, 1, 3.
    rows = [("a", "i", "x", 1), ("a", "i", "y", 1), ("a", "i", "z", 2)]
    assert mean_average_rank(rows).overall == {"x": 1.0, "y": 1.0, "z": 2.0}
    converted = mean_average_rank(rows, convention="competition")
    assert converted.overall == {"x": 1.0, "y": 1.0, "z": 3.0}
    fractional = mean_average_rank(rows, convention="fractional")
    assert fractional.overall == {"x": 1.5, "y": 1.5, "z": 3.0}


def test_mean_average_rank_rejects_a_system_ranked_twice_in_one_item_by_one_annotator():
    with pytest.raises(ValueError, match=r"'x' ranked twice by 'a' for item 'i'"):
        mean_average_rank([("a", "i", "x", 1), ("a", "i", "x", 2)])


# --- tie conventions --------------------------------------------------------------------------


def test_tie_conventions_convert_into_each_other():
    dense = [1, 1, 2]
    competition = [1, 1, 3]
    assert to_standard_competition(dense) == competition
    assert to_dense(competition) == dense
    assert to_fractional(dense) == [1.5, 1.5, 3.0]
    assert to_standard_competition([2, 1, 2]) == [2, 1, 2]
    assert to_standard_competition([3, 1, 3]) == [2, 1, 2]
    assert to_dense([3, 1, 3, 4]) == [2, 1, 2, 3]
    assert to_standard_competition([2, 2, 2]) == [1, 1, 1]
    assert to_standard_competition([]) == []


def test_tie_conversions_are_idempotent_and_order_preserving_on_random_rankings():
    rng = random.Random(7)
    for _ in range(200):
        values = [rng.randint(1, 4) for _ in range(rng.randint(1, 6))]
        comp = to_standard_competition(values)
        dense = to_dense(values)
        assert to_standard_competition(comp) == comp
        assert to_dense(dense) == dense
        assert to_dense(comp) == dense
        assert to_standard_competition(dense) == comp
        for i in range(len(values)):
            for j in range(len(values)):
                same_order = (values[i] < values[j]) == (comp[i] < comp[j]) == (dense[i] < dense[j])
                assert same_order


# --- Spearman ---------------------------------------------------------------------------------


def test_spearman_rho_uses_average_ranks_for_ties():
    # x ranks: 1.5, 1.5, 3, 4; y ranks: 1, 2, 3, 4 → Pearson of the rank vectors.
    x = [10, 10, 20, 30]
    y = [1, 2, 3, 4]
    rx = [1.5, 1.5, 3, 4]
    ry = [1, 2, 3, 4]
    mx, my = sum(rx) / 4, sum(ry) / 4
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    assert spearman_rho(x, y) == pytest.approx(cov / var)


def test_spearman_rho_matches_scipy_values_computed_once():
    # scipy.stats.spearmanr([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]).statistic
    x = [3, 1, 4, 1, 5, 9, 2, 6]
    y = [2, 7, 1, 8, 2, 8, 1, 8]
    assert spearman_rho(x, y) == pytest.approx(0.19885368120992467, abs=1e-12)


def test_spearman_rho_is_nan_for_a_constant_vector_and_rejects_unpaired_input():
    assert math.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match=r"spearman_rho needs two vectors of equal length"):
        spearman_rho([1, 2], [1, 2, 3])


# --- CV* --------------------------------------------------------------------------------------


def test_unbiased_sd_divides_the_sample_sd_by_c4():
    # n = 2: c4 = sqrt(2/pi), s = |a - b| / sqrt(2)
    assert unbiased_sd([1.0, 2.0]) == pytest.approx((1 / math.sqrt(2)) / math.sqrt(2 / math.pi))


def test_cv_star_of_two_values_reduces_to_a_closed_form():
    a, b = 2.18, 1.48
    s_star = abs(a - b) / math.sqrt(2) / math.sqrt(2 / math.pi)
    assert cv_star([a, b]) == pytest.approx((1 + 1 / 8) * 100 * s_star / ((a + b) / 2))


def test_cv_star_shift_moves_the_scale_to_start_at_zero():
    # ranks 1..3 shifted by the lower bound 1
    assert cv_star([1.5, 1.48], shift=1.0) == pytest.approx(cv_star([0.5, 0.48]))


def test_cv_star_is_zero_for_identical_values_and_rejects_bad_input():
    assert cv_star([1.7, 1.7, 1.7]) == 0.0
    with pytest.raises(ValueError, match=r"CV\* needs at least two measurements"):
        cv_star([1.0])
    assert math.isnan(cv_star([1.0, -1.0]))
