"""Bootstrap intervals for Krippendorff's alpha."""

from __future__ import annotations

import numpy as np
import pytest

from metrics import AgreementError, alpha_bootstrap, krippendorff_alpha


def noisy_ratings(n_units: int, seed: int = 0, coders: int = 4, levels: int = 5) -> dict:
    """Ordinal-ish ratings: a true score per unit plus coder noise, some missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, levels, n_units)
    noise = rng.integers(-1, 2, (n_units, coders)) * (rng.random((n_units, coders)) < 0.3)
    values = np.clip(truth[:, None] + noise, 0, levels - 1)
    missing = rng.random((n_units, coders)) < 0.1
    return {
        u: {c: None if missing[u, c] else int(values[u, c]) for c in range(coders)}
        for u in range(n_units)
    }


def noisy_sets(n_units: int, seed: int = 0, coders: int = 5) -> dict:
    """Citation-style answers: a gold subset of 3-8 sentences per unit, perturbed per coder."""
    rng = np.random.default_rng(seed)
    data = {}
    for u in range(n_units):
        k = int(rng.integers(3, 9))
        gold = rng.random(k) < 0.3
        row = {}
        for c in range(coders):
            flip = rng.random(k) < 0.15
            row[c] = frozenset(np.flatnonzero(gold ^ flip).tolist())
        data[u] = row
    return data


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "ratio"])
def test_same_seed_gives_the_same_interval(distance):
    data = noisy_ratings(200)
    first = alpha_bootstrap(data, distance, n_boot=300, seed=42)
    second = alpha_bootstrap(data, distance, n_boot=300, seed=42)
    assert (first.lower, first.upper) == (second.lower, second.upper)
    np.testing.assert_array_equal(first.replicates, second.replicates)
    other = alpha_bootstrap(data, distance, n_boot=300, seed=43)
    assert (other.lower, other.upper) != (first.lower, first.upper)


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "ratio", "jaccard", "masi"])
def test_interval_contains_the_point_estimate(distance):
    data = noisy_sets(300) if distance in ("jaccard", "masi") else noisy_ratings(300)
    result = alpha_bootstrap(data, distance, n_boot=500, seed=1)
    assert result.alpha == pytest.approx(krippendorff_alpha(data, distance), abs=1e-12)
    assert result.lower < result.alpha < result.upper
    assert result.n_boot == 500 == len(result.replicates)
    assert result.confidence == 0.95
    assert result.expected == "resampled"


def test_interval_narrows_with_more_units():
    small = alpha_bootstrap(noisy_ratings(100, seed=5), "interval", n_boot=400, seed=0)
    large = alpha_bootstrap(noisy_ratings(2000, seed=5), "interval", n_boot=400, seed=0)
    assert large.upper - large.lower < 0.5 * (small.upper - small.lower)


def test_higher_confidence_gives_a_wider_interval():
    data = noisy_ratings(300)
    narrow = alpha_bootstrap(data, "nominal", n_boot=500, confidence=0.8, seed=2)
    wide = alpha_bootstrap(data, "nominal", n_boot=500, confidence=0.99, seed=2)
    assert wide.lower < narrow.lower and narrow.upper < wide.upper


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "jaccard"])
def test_replicates_equal_alpha_on_the_resampled_units(distance):
    """Cross-check the weighted-sum shortcut against recomputing alpha on a drawn sample."""
    data = noisy_sets(60, seed=9) if distance == "jaccard" else noisy_ratings(60, seed=9)
    result = alpha_bootstrap(data, distance, n_boot=5, seed=11)
    # Replay the same draws: one integers() call per replicate chunk, all five in one chunk.
    rng = np.random.default_rng(11)
    draws = rng.integers(0, 60, size=(5, 60))
    units = list(data)  # every unit here is pairable, in input order
    for replicate, drawn in zip(result.replicates, draws, strict=True):
        sample = {(i, units[u]): data[units[u]] for i, u in enumerate(drawn)}
        assert replicate == pytest.approx(krippendorff_alpha(sample, distance), abs=1e-9)


def test_fixed_expected_disagreement_is_available_and_recorded():
    data = noisy_ratings(300)
    fixed = alpha_bootstrap(data, "interval", n_boot=300, seed=4, expected="fixed")
    assert fixed.expected == "fixed"
    assert fixed.lower < fixed.alpha < fixed.upper


def test_auto_keeps_expected_disagreement_fixed_when_there_are_too_many_distinct_sets(
    monkeypatch,
):
    import metrics.distances

    monkeypatch.setattr(metrics.distances, "MAX_DENSE_VALUES", 10)
    data = noisy_sets(100)
    auto = alpha_bootstrap(data, "jaccard", n_boot=200, seed=3)
    assert auto.expected == "fixed"
    assert auto.lower < auto.alpha < auto.upper
    fixed = alpha_bootstrap(data, "jaccard", n_boot=200, seed=3, expected="fixed")
    np.testing.assert_array_equal(auto.replicates, fixed.replicates)
    with pytest.raises(AgreementError, match='expected="fixed"'):
        alpha_bootstrap(data, "jaccard", n_boot=10, expected="resample")
    # Nominal and interval never need the matrix.
    assert alpha_bootstrap(noisy_ratings(100), "interval", n_boot=10).expected == "resampled"


def test_probability_below_a_threshold_counts_replicates():
    result = alpha_bootstrap(noisy_ratings(200), "ordinal", n_boot=200, seed=0)
    assert result.probability_below(-1.0) == 0.0
    assert result.probability_below(1.01) == 1.0
    assert result.probability_below(result.alpha) == pytest.approx(
        np.mean(result.replicates < result.alpha)
    )


def test_all_agreeing_data_gives_a_degenerate_interval_at_one():
    data = {u: {"a": 2, "b": 2} for u in range(20)}
    result = alpha_bootstrap(data, "nominal", n_boot=50, seed=0)
    assert (result.alpha, result.lower, result.upper) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "kwargs",
    [{"confidence": 1.0}, {"confidence": 0.0}, {"n_boot": 0}, {"n_boot": 2.5}, {"expected": "x"}],
)
def test_bad_arguments_are_errors(kwargs):
    with pytest.raises(AgreementError):
        alpha_bootstrap(noisy_ratings(20), "nominal", **kwargs)
