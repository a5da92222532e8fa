"""Issue 27: figures whose units are made of several items (citation recovery's explanations,
stance's (model, claim) pairs) get the active estimate in a project that deals actively: a
unit is labelled when all its items are, and its probability is the product of its items'."""

import numpy as np
import pytest

from agreement.reports import estimates
from agreement.reports.inputs import ItemInfo
from agreement.reports.sections import Estimand
from metrics.active_sampling import (
    active_estimate,
    grouped_active_estimate,
    inclusion_probabilities,
    priorities,
    sampling_weights,
)
from metrics.prediction_powered import active_mean


def _pairs(rng, units=150):
    """Units of two items each; the unit's truth and the judge's value in [0, 1]."""
    p = rng.uniform(0.05, 0.95, units)
    y = (rng.random(units) < p).astype(float)
    u = np.repeat(np.sqrt(p * (1 - p)), 2)  # each item: its unit's uncertainty
    weights = sampling_weights(u.tolist(), floor=0.3)
    groups = [[2 * i, 2 * i + 1] for i in range(units)]
    return p, y, weights, groups


def _labelled_prefix(q, groups, items_labelled):
    """Humans answered the first ``items_labelled`` items of the order: which items, and the
    units whose items are all among them."""
    top = set(np.argsort(-q)[:items_labelled].tolist())
    answered = [i in top for i in range(q.size)]
    return answered, [all(i in top for i in g) for g in groups]


def test_units_of_one_item_give_the_items_estimate():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.1, 0.9, 200)
    y = (rng.random(200) < p).astype(float)
    w = sampling_weights(np.sqrt(p * (1 - p)).tolist(), floor=0.3)
    q = priorities(w, 1 - rng.random(200))
    top = set(np.argsort(-q)[:50].tolist())
    labels = [float(y[i]) if i in top else None for i in range(200)]
    one = active_estimate(p.tolist(), labels, w, q)
    grouped = grouped_active_estimate(p.tolist(), labels, [[i] for i in range(200)], w, q)
    assert (grouped.estimate, grouped.width, grouped.labels) == pytest.approx(
        (one.estimate, one.width, one.labels)
    )


def test_a_units_probability_is_the_product_of_its_items():
    rng = np.random.default_rng(5)
    p, y, w, groups = _pairs(rng)
    q = priorities(w, 1 - rng.random(w.size))
    answered, done = _labelled_prefix(q, groups, 80)
    labels = [float(y[u]) if d else None for u, d in enumerate(done)]
    got = grouped_active_estimate(p.tolist(), labels, groups, w, q, item_labelled=answered)
    sample = inclusion_probabilities(w, q, answered)
    pi = [sample.probabilities[g[0]] * sample.probabilities[g[1]] for g in groups]
    direct = active_mean(p.tolist(), labels, pi, lam=1.0)
    assert got.estimate == pytest.approx(direct.estimate)
    assert got.labels == sum(done) >= 2


def test_the_grouped_estimate_is_unbiased_over_redraws_of_the_order():
    rng = np.random.default_rng(7)
    p, y, w, groups = _pairs(rng, units=120)
    truth = float(y.mean())
    draws = []
    for _ in range(1500):
        q = priorities(w, 1 - rng.random(w.size))
        answered, done = _labelled_prefix(q, groups, 70)
        labels = [float(y[u]) if d else None for u, d in enumerate(done)]
        if sum(done) >= 2:
            est = grouped_active_estimate(p.tolist(), labels, groups, w, q, item_labelled=answered)
            draws.append(est.estimate)
    draws_ = np.array(draws)
    error = draws_.std(ddof=1) / np.sqrt(draws_.size)
    assert abs(draws_.mean() - truth) < 4 * error, (draws_.mean(), truth, error)


def _claims_case():
    rng = np.random.default_rng(11)
    p, y, w, groups = _pairs(rng, units=100)
    q = priorities(w, 1 - rng.random(w.size))
    answered, done = _labelled_prefix(q, groups, 60)
    items = {
        f"i{k}": ItemInfo(key=f"i{k}", sampling=(float(w[k]), float(q[k]))) for k in range(200)
    }
    estimand = Estimand(
        figure="Mean F1, all groups",
        humans={f"c{u}": float(y[u]) for u in range(100) if done[u]},
        judges={"nli": {f"c{u}": float(p[u]) for u in range(100)}},
        unit="explanations",
        bounds=(0.0, 1.0),
        items_of={f"c{u}": (f"i{2 * u}", f"i{2 * u + 1}") for u in range(100)},
        labelled_items=frozenset(f"i{k}" for k in range(200) if answered[k]),
    )
    labels = [float(y[u]) if done[u] else None for u in range(100)]
    expected = grouped_active_estimate(p.tolist(), labels, groups, w, q, item_labelled=answered)
    return estimand, items, expected


def test_the_estimates_table_gives_claim_units_the_active_estimate():
    estimand, items, expected = _claims_case()
    row = estimates.estimate_row(estimand, "nli", 0.95, items)
    assert row["method"] == estimates.ACTIVE_GROUPED
    assert row["ppi"] == pytest.approx(expected.estimate)
    assert row["ppi_labelled"] == expected.labels and row["ppi_n"] == 100
    # An item without a recorded weight: the unit's probability is unknown, and it says so.
    items["i0"] = ItemInfo(key="i0")
    assert estimates.estimate_row(estimand, "nli", 0.95, items)["method"] == estimates.NOT_WEIGHED


@pytest.mark.django_db
def test_stances_consistency_pairs_get_the_active_estimate_on_the_dashboard():
    from agreement.reports.build import build_report
    from agreement.reports.gather import gather
    from agreement.reports.inputs import AnnotatorFilter
    from tests.agreement.test_active_ci_plot import active_need_study

    project = active_need_study()
    report = build_report(
        gather(project=project, annotator_filter=AnnotatorFilter(judges=("gpt",)))
    )
    rows = {row["figure"]: row for row in report["tables"][estimates.ESTIMATES_TABLE]["rows"]}
    assert rows["Factual accuracy, level 0"]["method"] == estimates.ACTIVE  # items
    pairs = rows["Consistency with level 0, level 0"]
    assert pairs["method"] == estimates.ACTIVE_GROUPED  # (model, claim) pairs of items
    assert pairs["ppi"] is not None and pairs["ppi_labelled"] == 20
