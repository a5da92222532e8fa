"""Active sampling of items for humans (metrics.active_sampling): weights, priorities, the
probabilities of a priority sample, and the simulation the issue asks for: unbiased, and a
narrower interval than uniform sampling at the same number of human labels when the judge's
uncertainty is informative. Django-free."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.active_sampling import (
    active_estimate,
    inclusion_probabilities,
    priorities,
    sampling_weights,
    width_as_answers_arrive,
)
from metrics.prediction_powered import active_mean


def test_weights_mix_uncertainty_with_a_uniform_floor():
    w = sampling_weights([0.0, 1.0, 3.0, None], floor=0.2)
    # mean of the known uncertainties is 4/3: 0.8 * u / (4/3) + 0.2; unknown: mean weight 1
    assert w == pytest.approx([0.2, 0.8, 2.0, 1.0])
    assert sampling_weights([0.0, 0.0]) == pytest.approx([1.0, 1.0])
    assert sampling_weights([None, None]) == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="floor"):
        sampling_weights([1.0], floor=0)
    with pytest.raises(ValueError, match="negative"):
        sampling_weights([-1.0])


def test_probabilities_of_the_labelled_prefix():
    w = [1.0, 2.0, 1.0, 4.0]
    q = priorities(w, [0.5, 0.5, 0.25, 1.0])  # 2, 4, 4, 4
    # order by priority (stable): items 1, 2, 3, then 0; humans labelled 1, 2 and 0 (out of turn)
    sample = inclusion_probabilities(w, q, [True, True, True, False])
    assert sample.threshold == 4.0
    assert sample.used.tolist() == [False, True, True, False]
    assert sample.out_of_turn == 1
    assert sample.probabilities == pytest.approx([0.25, 0.5, 0.25, 1.0])
    every = inclusion_probabilities(w, q, [True] * 4)
    assert every.threshold == 0 and every.probabilities == pytest.approx([1.0] * 4)


def test_with_every_probability_one_it_is_the_mean_of_the_labels():
    est = active_estimate([0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1, 1, 1], [3.0, 2.0, 1.0])
    assert est.estimate == pytest.approx(2 / 3)
    assert est.labels == 3


def _population(rng: np.random.Generator, size: int):
    """A judge sure of most items and unsure of some: its probability p is also the truth's."""
    sure = rng.random(size) < 0.7
    p = np.where(sure, rng.choice([0.02, 0.98], size), rng.uniform(0.3, 0.7, size))
    y = (rng.random(size) < p).astype(float)
    return p, y


def _draws(p, y, weights, labels_n, draws, rng):
    estimates, widths = [], []
    for _ in range(draws):
        q = priorities(weights, 1 - rng.random(p.size))
        top = np.argsort(-q)[:labels_n]
        labels = [None] * p.size
        for i in top:
            labels[i] = float(y[i])
        est = active_estimate(p.tolist(), labels, weights, q.tolist())
        assert est.labels == labels_n
        estimates.append(est.estimate)
        widths.append(est.width)
    return np.array(estimates), np.array(widths)


def test_simulation_unbiased_and_narrower_than_uniform_at_equal_labels():
    rng = np.random.default_rng(27)
    p, y = _population(rng, 1000)
    truth = y.mean()
    uncertainty = np.sqrt(p * (1 - p))  # the judge's own: what an NLI probability gives
    active_w = sampling_weights(uncertainty.tolist(), floor=0.1)  # u is already the residual's sd
    uniform_w = np.ones(p.size)
    draws, n = 2000, 100
    active, active_width = _draws(p, y, active_w, n, draws, rng)
    uniform, uniform_width = _draws(p, y, uniform_w, n, draws, rng)
    for estimates in (active, uniform):
        mc_error = estimates.std(ddof=1) / np.sqrt(draws)
        assert abs(estimates.mean() - truth) <= 3 * mc_error, (estimates.mean(), truth, mc_error)
    # Same number of human labels, narrower intervals and a smaller spread with active sampling.
    assert active_width.mean() < 0.95 * uniform_width.mean(), (
        active_width.mean(),
        uniform_width.mean(),
    )
    assert active.std() < uniform.std()


def test_an_uninformative_uncertainty_is_still_unbiased():
    """Weights unrelated to the judge's errors cost precision, never validity."""
    rng = np.random.default_rng(3)
    p, y = _population(rng, 600)
    weights = sampling_weights(rng.random(p.size).tolist(), floor=0.2)
    estimates, _ = _draws(p, y, weights, 80, 1500, rng)
    mc_error = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - y.mean()) <= 3 * mc_error


def test_width_as_answers_arrive_narrows():
    rng = np.random.default_rng(5)
    p, y = _population(rng, 500)
    weights = sampling_weights(np.sqrt(p * (1 - p)).tolist())
    q = priorities(weights, 1 - rng.random(p.size))
    labels = [None] * p.size
    for i in np.argsort(-q)[:200]:
        labels[i] = float(y[i])
    rows = width_as_answers_arrive(
        p.tolist(), labels, weights.tolist(), q.tolist(), steps=[1, 25, 50, 100, 200, 400]
    )
    assert [r[0] for r in rows] == [25, 50, 100, 200]
    widths = [r[2] for r in rows]
    assert widths[-1] < widths[0]


def test_active_mean_is_the_estimator_used():
    rng = np.random.default_rng(9)
    p, y = _population(rng, 50)
    weights = sampling_weights(np.sqrt(p * (1 - p)).tolist())
    q = priorities(weights, 1 - rng.random(p.size))
    labels = [None] * p.size
    for i in np.argsort(-q)[:10]:
        labels[i] = float(y[i])
    sample = inclusion_probabilities(weights, q, [v is not None for v in labels])
    direct = active_mean(p.tolist(), labels, sample.probabilities.tolist(), lam=1.0)
    assert active_estimate(p.tolist(), labels, weights, q).estimate == direct.estimate
