"""How many human labels a figure needs (metrics.projection, issue 27 item 4): closed forms on
small data, refusals on tiny pilots, and by simulation that a pilot's projection is close to the
width realised when the labels are added."""

import math

import numpy as np
import pytest

from metrics.prediction_powered import classical_mean, prediction_powered_mean
from metrics.projection import (
    TooLittleData,
    label_grid,
    labels_needed,
    pilot,
    projected_widths,
)

Z = 1.959963984540054


def a_study(rng, items=3000, labelled=100, right=0.85):
    """0/1 truth on ``items`` items; a judge right ``right`` of the time on positives and
    biased towards 1 on negatives; ``labelled`` items drawn uniformly for the humans."""
    truth = (rng.random(items) < 0.35).astype(float)
    judge = np.where(truth == 1, rng.random(items) < right, rng.random(items) < 0.2)
    order = rng.permutation(items)
    return truth, judge.astype(float), order


def split(truth, judge, order, n):
    mask = np.zeros(truth.size, dtype=bool)
    mask[order[:n]] = True
    return truth[mask], judge[mask], judge[~mask]


def small():
    y = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1]
    f = [1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1]
    f_u = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1]
    return y, f, f_u


def test_humans_alone_is_the_closed_form():
    y, f, f_u = small()
    p = pilot(y, f, f_u)
    var = np.var(y, ddof=1)
    widths = projected_widths(p, [12, 50, 400])
    for n, width in zip([12, 50, 400], widths["humans_alone"], strict=True):
        assert width == pytest.approx(2 * Z * math.sqrt(var / n))
    # At the pilot's own n it is the classical interval's width.
    assert widths["humans_alone"][0] == pytest.approx(classical_mean(y).width)
    need = labels_needed(p, 0.1)
    assert need.humans_alone == math.ceil(var * (2 * Z / 0.1) ** 2)  # 408 for var 0.2652
    assert need.humans_alone_beyond_items  # 32 items: new items would be needed


def test_with_the_judge_at_the_pilots_n_is_the_prediction_powered_width():
    y, f, f_u = small()
    p = pilot(y, f, f_u)
    projected = projected_widths(p, [len(y)])
    estimate = prediction_powered_mean(y, f, f_u)
    assert projected["with_judge"][0] == pytest.approx(estimate.width)
    assert projected["lam"][0] == pytest.approx(estimate.lam)


def test_with_the_judge_by_hand_at_another_n():
    """20 labels of the 32 items: 12 left to the judge; λ tuned for that split."""
    y, f, f_u = small()
    p = pilot(y, f, f_u)
    cov = np.cov(y, f, ddof=1)[0, 1]
    var_f, var_u, var_y = np.var(f, ddof=1), np.var(f_u, ddof=1), np.var(y, ddof=1)
    lam = min(1.0, max(0.0, cov / (var_f + 20 / 12 * var_u)))
    variance = (var_y - 2 * lam * cov + lam**2 * var_f) / 20 + lam**2 * var_u / 12
    projected = projected_widths(p, [20, 32, 40])
    assert projected["lam"][0] == pytest.approx(lam)
    assert projected["with_judge"][0] == pytest.approx(2 * Z * math.sqrt(variance))
    # Every item labelled (32) or more: nothing left to the judge, humans alone.
    assert list(projected["lam"][1:]) == [0.0, 0.0]
    assert list(projected["with_judge"][1:]) == pytest.approx(list(projected["humans_alone"][1:]))


def test_the_labels_needed_are_the_first_to_reach_the_target():
    rng = np.random.default_rng(11)
    truth, judge, order = a_study(rng)
    p = pilot(*split(truth, judge, order, 100))
    need = labels_needed(p, 0.05)
    assert need.with_judge < need.humans_alone
    widths = projected_widths(p, [need.with_judge - 1, need.with_judge])["with_judge"]
    assert widths[0] > 0.05 >= widths[1]
    alone = projected_widths(p, [need.humans_alone - 1, need.humans_alone])["humans_alone"]
    assert alone[0] > 0.05 >= alone[1]
    assert 0 < need.lam <= 1
    assert not need.with_judge_beyond_items


def test_a_useless_judge_needs_as_many_labels_as_humans_alone():
    rng = np.random.default_rng(2)
    y = (rng.random(200) < 0.4).astype(float)
    f = np.ones(200)  # says 1 everywhere: no covariance, λ = 0
    f_u = np.ones(2000)
    p = pilot(y, f, f_u)
    need = labels_needed(p, 0.08)
    assert need.with_judge == need.humans_alone
    assert need.lam == 0
    # A judge without spread, up to and past the 2,200 items: no 0 · ∞ on the way.
    with np.errstate(all="raise"):
        widths = projected_widths(p, [100, 2199, 2200, 5000])
    assert list(widths["with_judge"]) == pytest.approx(list(widths["humans_alone"]))


def test_the_projected_width_with_the_judge_never_grows_with_labels():
    """What the bisection beyond a million labels relies on, on pilots of several judges."""
    for seed, right in [(1, 0.95), (2, 0.85), (3, 0.6), (4, 0.4)]:
        rng = np.random.default_rng(seed)
        truth, judge, order = a_study(rng, items=2000, right=right)
        p = pilot(*split(truth, judge, order, 60))
        widths = projected_widths(p, list(range(2, 2500)))
        assert np.all(np.diff(widths["with_judge"]) <= 1e-12)
        assert np.all(widths["with_judge"] <= widths["humans_alone"] + 1e-12)


def test_a_tiny_pilot_is_refused_with_a_reason():
    with pytest.raises(TooLittleData, match="only 9 items are labelled by both"):
        pilot([0, 1] * 4 + [1], [0, 1] * 4 + [1], [1, 0, 1])
    with pytest.raises(TooLittleData, match="same value on all 12 items"):
        pilot([1] * 12, [1, 0] * 6, [1, 0])
    p = pilot(*small())
    for bad in (0, -0.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="positive number"):
            labels_needed(p, bad)
    for tiny in (1e-6, 1e-150, 1e-300, 5e-324):  # 1e-300's variance underflows (a probe's 500)
        with pytest.raises(TooLittleData, match="more than"):
            labels_needed(p, tiny)
    with pytest.raises(ValueError, match="at least 2"):
        projected_widths(p, [1, 5])


def test_the_grid_reaches_past_the_labels_needed_and_holds_the_marks():
    p = pilot(*small())
    need = labels_needed(p, 0.2)
    grid = label_grid(p, need)
    assert grid[0] == 2
    assert grid[-1] >= need.humans_alone
    assert {p.n, need.humans_alone, need.with_judge} <= set(grid)
    assert grid == sorted(set(grid))
    assert len(grid) <= 45


def test_a_pilots_projection_is_close_to_the_width_realised():
    """Seeded and loose: 200 studies of 3,000 items; a uniform pilot of 100 labels projects the
    width at 400 labels (the pilot plus 300 more, as a study grows); the realised PPI++ and
    humans-alone widths at 400 are within 5 % on average and within 20 % in 90 % of studies."""
    rng = np.random.default_rng(20261129)
    ratios = {"with_judge": [], "humans_alone": []}
    for _ in range(200):
        truth, judge, order = a_study(rng)
        projected = projected_widths(pilot(*split(truth, judge, order, 100)), [400])
        y, f, f_u = split(truth, judge, order, 400)
        realised = {
            "with_judge": prediction_powered_mean(y, f, f_u).width,
            "humans_alone": classical_mean(y).width,
        }
        for key, values in ratios.items():
            values.append(projected[key][0] / realised[key])
    for values in ratios.values():
        values = np.array(values)
        assert abs(values.mean() - 1) < 0.05
        assert np.mean(np.abs(values - 1) < 0.2) >= 0.9
