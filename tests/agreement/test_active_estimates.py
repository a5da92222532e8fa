"""Issue 27 item 3 on the dashboard: where a project deals its items actively, the estimates
table uses the active estimate with the probabilities recorded on the items (and says so), and a
table shows the interval narrowing as human answers arrived; the report input carries each
item's recorded weight and priority."""

import numpy as np
import pytest

from agreement.reports import estimates
from agreement.reports.gather import gather
from agreement.reports.inputs import JUDGE, CoderInfo, ItemInfo, ReportInput
from agreement.reports.sections import Estimand
from llm_judges.services import sampling_weights_compute
from metrics.active_sampling import inclusion_probabilities, priorities, sampling_weights
from metrics.prediction_powered import active_mean
from tests import factories
from tests.agreement.test_active_sampling import _population


def _active_case(size=300, labelled=60, seed=11):
    rng = np.random.default_rng(seed)
    p, y = _population(rng, size)
    weights = sampling_weights(np.sqrt(p * (1 - p)).tolist(), floor=0.1)
    q = priorities(weights, 1 - rng.random(size))
    keys = [f"item-{i}" for i in range(size)]
    top = set(np.argsort(-q)[:labelled].tolist())
    items = {
        k: ItemInfo(key=k, sampling=(float(weights[i]), float(q[i]))) for i, k in enumerate(keys)
    }
    estimand = Estimand(
        figure="Share true",
        humans={keys[i]: float(y[i]) for i in top},
        judges={"nli": {k: float(p[i]) for i, k in enumerate(keys)}},
        bounds=(0.0, 1.0),
    )
    return estimand, items, weights, q, p, y, top


def test_the_row_uses_the_recorded_probabilities_when_dealt_actively():
    estimand, items, weights, q, p, y, top = _active_case()
    row = estimates.estimate_row(estimand, "nli", 0.95, items)
    assert row["method"] == estimates.ACTIVE
    assert row["ppi_labelled"] == 60 and row["ppi_n"] == 300
    # Independently: π = min(1, w / τ), τ the priority of the first unlabelled item.
    tau = max(q[i] for i in range(len(q)) if i not in top)
    pi = np.minimum(1.0, weights / tau)
    labels = [float(y[i]) if i in top else None for i in range(len(q))]
    direct = active_mean(p.tolist(), labels, pi.tolist(), lam=1.0)
    assert row["ppi"] == pytest.approx(direct.estimate)
    assert inclusion_probabilities(weights, q, [v is not None for v in labels]).threshold == tau
    # Not dealt actively: PPI++ with its uniform assumption named.
    assert estimates.estimate_row(estimand, "nli", 0.95)["method"] == estimates.PPI


def test_units_that_are_not_weighed_items_get_no_estimate_and_say_so():
    estimand, items, *_ = _active_case()
    unweighed = {k: ItemInfo(key=k) for k in items}
    row = estimates.estimate_row(estimand, "nli", 0.95, unweighed)
    assert row["method"] == estimates.NOT_WEIGHED and row["ppi"] is None
    assert row["human"] is not None and row["judge_only"] is not None


def test_the_interval_narrows_as_answers_arrive(monkeypatch):
    estimand, items, *_ = _active_case(size=400, labelled=120)
    monkeypatch.setattr(estimates, "estimands_for", lambda task_type: lambda inp: [estimand])
    inp = ReportInput(
        task_type="any",
        measures={},
        items=items,
        coders=[CoderInfo(id="judge:nli", kind=JUDGE, label="nli")],
        answers={},
        active_sampling=True,
    )
    ci = estimates.active_ci_table(inp)
    assert ci is not None
    labels = [row["labels"] for row in ci["rows"]]
    assert labels == [5, 10, 20, 50, 100, 120]
    widths = [row["width"] for row in ci["rows"]]
    assert widths[-1] < widths[2] < widths[0]
    table = estimates.estimates_table(inp)
    assert table is not None and table["rows"][0]["method"] == estimates.ACTIVE
    assert "recorded probability" in table["note"]
    # A project that does not deal actively has no such table.
    monkeypatch.setattr(inp, "active_sampling", False)
    assert estimates.active_ci_table(inp) is None


def test_the_report_input_carries_the_recorded_sampling(db):
    project = factories.ProjectFactory(crowd={"assignment_strategy": "active"})
    items = factories.make_items(project, 5)
    assert not gather(project=project).items[items[0].external_id].sampling  # not weighed yet
    sampling_weights_compute(project_id=project.pk)
    inp = gather(project=project)
    assert inp.active_sampling
    info = inp.items[items[0].external_id]
    items[0].refresh_from_db()
    assert info.sampling == (items[0].sampling_weight, items[0].sampling_priority)
    assert info.sampling[0] == 1.0  # no judge results: every weight 1 (uniform)
    plain = factories.ProjectFactory()
    assert not gather(project=plain).active_sampling
