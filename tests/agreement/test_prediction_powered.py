"""Prediction-powered and active estimates of a mean (metrics.prediction_powered): closed forms
on small data, and their statistical guarantees by simulation with a biased judge."""

import math

import numpy as np
import pytest

from metrics.prediction_powered import (
    active_mean,
    classical_mean,
    judge_only_mean,
    prediction_powered_mean,
)


def test_closed_forms_on_a_small_example():
    y = [1, 0, 1, 1]
    f = [1, 0, 0, 1]
    f_u = [1, 1, 0, 1, 0, 1]
    # lam = 0 is the classical mean; lam = 1 is plain PPI: mean(f_u) + mean(y - f).
    assert prediction_powered_mean(y, f, f_u, lam=0).estimate == pytest.approx(0.75)
    plain = prediction_powered_mean(y, f, f_u, lam=1)
    assert plain.estimate == pytest.approx(4 / 6 + 1 / 4)
    var = np.var([0, 0, 1, 0], ddof=1) / 4 + np.var(f_u, ddof=1) / 6
    assert plain.standard_error == pytest.approx(math.sqrt(var))
    # The tuned lam, by hand: Cov(y, f) / (Var f + n/N Var f_u).
    cov = np.cov(y, f, ddof=1)[0, 1]
    lam = cov / (np.var(f, ddof=1) + 4 / 6 * np.var(f_u, ddof=1))
    tuned = prediction_powered_mean(y, f, f_u)
    assert tuned.lam == pytest.approx(lam)
    assert tuned.estimate == pytest.approx(
        lam * np.mean(f_u) + np.mean(np.array(y) - lam * np.array(f))
    )
    classical = classical_mean(y)
    assert classical.estimate == 0.75
    assert classical.standard_error == pytest.approx(math.sqrt(np.var(y, ddof=1) / 4))
    assert classical.high - classical.estimate == pytest.approx(
        1.959963984540054 * classical.standard_error
    )
    assert judge_only_mean(f + f_u).labels == 0


def test_a_useless_judge_gets_no_weight_and_the_classical_interval():
    rng = np.random.default_rng(1)
    y = rng.normal(size=200)
    f = np.zeros(200)
    f_u = np.zeros(1000)
    estimate = prediction_powered_mean(y, f, f_u)
    assert estimate.lam == 0
    assert estimate.width == pytest.approx(classical_mean(y).width)
    assert estimate.effective_labels == pytest.approx(200)


def test_bad_input_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="2 labels but 3 predictions"):
        prediction_powered_mean([1, 0], [1, 0, 1], [1, 1])
    with pytest.raises(ValueError, match="finite"):
        classical_mean([1, float("nan")])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        active_mean([1, 0], [1, None], [0.5, 0])
    with pytest.raises(ValueError, match="confidence"):
        classical_mean([1, 0], confidence=1.5)


def simulate(rng, n_items, n_labelled):
    """Items with a true 0/1 label; a judge right 80 % of the time on positives and 70 % on
    negatives, so its mean is biased."""
    truth = rng.random(n_items) < 0.3
    judge = np.where(truth, rng.random(n_items) < 0.8, rng.random(n_items) < 0.3).astype(float)
    labelled = rng.choice(n_items, size=n_labelled, replace=False)
    mask = np.zeros(n_items, dtype=bool)
    mask[labelled] = True
    return truth.astype(float), judge, mask


def test_prediction_powered_intervals_cover_the_truth_and_are_never_wider():
    """2,000 draws: 95 % intervals cover the population mean in at least 94 % of draws (a
    binomial lower bound for 95 % with 2,000 draws is about 94.0 %), and none is wider than the
    humans-alone interval. The judge alone is biased: its intervals mostly miss."""
    rng = np.random.default_rng(20240501)
    population = 2000
    truth, judge, _ = simulate(rng, population, 1)
    target = truth.mean()
    covered = judge_covered = 0
    for _ in range(2000):
        labelled = rng.choice(population, size=150, replace=False)
        mask = np.zeros(population, dtype=bool)
        mask[labelled] = True
        estimate = prediction_powered_mean(truth[mask], judge[mask], judge[~mask])
        classical = classical_mean(truth[mask])
        assert estimate.width <= classical.width + 1e-12
        covered += estimate.low <= target <= estimate.high
        alone = judge_only_mean(judge)
        judge_covered += alone.low <= target <= alone.high
    assert covered / 2000 >= 0.94
    assert judge_covered == 0  # the judge's 0.45 against the truth's 0.30


def test_active_sampling_is_unbiased_and_narrower_than_uniform_sampling():
    """Items sent to humans with probability proportional to the judge's uncertainty: the
    estimate's mean error is within its Monte Carlo error, and at the same expected number of
    human labels its intervals are narrower than uniform sampling's."""
    rng = np.random.default_rng(7)
    items = 3000
    truth_p = rng.beta(0.5, 0.5, size=items)  # how sure the judge could be
    truth = (rng.random(items) < truth_p).astype(float)
    judge = truth_p  # a calibrated probability
    uncertainty = np.sqrt(judge * (1 - judge)) + 0.02
    budget = 300
    active_p = np.clip(uncertainty / uncertainty.sum() * budget, 1e-3, 1.0)
    uniform_p = np.full(items, budget / items)
    target = truth.mean()
    errors, active_widths, uniform_widths = [], [], []
    for _ in range(1000):
        for probabilities, widths in ((active_p, active_widths), (uniform_p, uniform_widths)):
            sent = rng.random(items) < probabilities
            labels = [float(t) if s else None for t, s in zip(truth, sent, strict=True)]
            estimate = active_mean(judge, labels, probabilities)
            widths.append(estimate.width)
            if probabilities is active_p:
                errors.append(estimate.estimate - target)
    errors = np.array(errors)
    mc_error = errors.std(ddof=1) / math.sqrt(errors.size)
    assert abs(errors.mean()) <= 3 * mc_error
    assert np.mean(active_widths) < np.mean(uniform_widths)


def test_the_prediction_powered_mean_agrees_with_ppi_python_at_a_given_weight():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(5)
    y = rng.binomial(1, 0.6, 80).astype(float)
    f = np.where(rng.random(80) < 0.85, y, 1 - y)
    f_u = rng.binomial(1, 0.62, 900).astype(float)
    for lam in (0.0, 0.4, 1.0):
        ours = prediction_powered_mean(y, f, f_u, lam=lam)
        theirs = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=lam)))
        assert ours.estimate == pytest.approx(theirs)
        low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05, lam=lam)
        # ppi-python divides the variances by n, not n - 1: the widths differ by that much only.
        assert ours.width == pytest.approx(float(high[0] - low[0]), rel=0.02)
