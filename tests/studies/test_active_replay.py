"""Issue 27 item 3, replayed end to end: a questionnaire study whose two LLM judges disagree on
the hard items deals actively (weights from the judges' disagreement), simulated annotators
answer through the dealing service, and the dashboard's active estimate matches an independent
computation from the stored weights and priorities. Then, on the replay's population (the truth,
the judge and the stored weights), 1,500 re-draws of the order: the active estimate is unbiased
within its Monte Carlo error and its interval narrower than uniform sampling at the same number
of human answers."""

import numpy as np
import pytest

from agreement.reports import estimates
from agreement.reports.gather import gather
from agreement.reports.inputs import AnnotatorFilter
from annotation import services, task_types
from annotation.models import Item
from llm_judges.models import Judge, JudgeResult
from llm_judges.services import sampling_weights_compute
from metrics.active_sampling import active_estimate, priorities
from metrics.prediction_powered import active_mean
from tests import factories
from tests.annotation.test_item_order_and_sides import annotator

CONFIG = {
    "fields": [{"name": "prompt", "label": "Prompt"}],
    "questions": [{"id": "ok", "kind": "single", "prompt": "Correct?", "options": ["yes", "no"]}],
}
ITEMS, ANSWERS = 240, 60


def _population(seed=27):
    """Truth and two judges: on easy items (70 %) both say the truth 97 % of the time; on hard
    ones judge A is right 60 % of the time and judge B says the opposite of A."""
    rng = np.random.default_rng(seed)
    truth = rng.random(ITEMS) < 0.5
    hard = rng.random(ITEMS) < 0.3
    right = np.where(hard, rng.random(ITEMS) < 0.6, rng.random(ITEMS) < 0.97)
    a = np.where(right, truth, ~truth)
    b = np.where(hard, ~a, a)
    return truth, a, b


def _word(value) -> str:
    return "yes" if value else "no"


@pytest.fixture
def replayed(db):
    truth, a, b = _population()
    project = factories.ProjectFactory(
        task_type="questionnaire",
        config=CONFIG,
        annotators_per_item=1,
        crowd={"assignment_strategy": "active"},
    )
    task = task_types.get("questionnaire")
    config = task.validate_config(CONFIG)
    rows = []
    for n in range(ITEMS):
        payload = task.validate_payload({"id": f"q{n}", "prompt": f"Claim {n}?"})
        (prepared,) = task.prepare(dict(payload), config=config)
        rows.append(
            Item(
                project=project,
                external_id=prepared.external_id,
                payload=prepared.payload,
                prepared=prepared.prepared,
                position=n + 1,
            )
        )
    items = Item.objects.bulk_create(rows)
    for name, says in (("judge-a", a), ("judge-b", b)):
        judge = Judge.objects.create(project=project, name=name, kind="llm", model="m")
        JudgeResult.objects.bulk_create(
            JudgeResult(
                item=item,
                judge=judge,
                prompt_version=judge.prompt_version,
                status="ok",
                answer={"ok": _word(says[n])},
            )
            for n, item in enumerate(items)
        )
    keys = np.random.default_rng(87).integers(0, 2**31, ITEMS)  # reproducible draws of U
    for item, key in zip(items, keys, strict=True):
        item.shuffle_key = int(key)
    Item.objects.bulk_update(items, ["shuffle_key"])
    sampling_weights_compute(project_id=project.pk)  # the default floor, 0.5
    index = {item.pk: n for n, item in enumerate(items)}
    people = [annotator(project) for _ in range(3)]
    answered = 0
    while answered < ANSWERS:  # three annotators take turns until 60 human answers
        person = people[answered % 3]
        assignment = services.assignment_next(project=project, annotator=person)
        answer = {"ok": _word(truth[index[assignment.item_id]])}
        services.annotation_submit(assignment=assignment, answer=answer)
        answered += 1
    return project, items, truth, a


def _stored(project):
    rows = Item.objects.filter(project=project).order_by("position")
    return (
        np.array([w for w in rows.values_list("sampling_weight", flat=True)]),
        np.array([q for q in rows.values_list("sampling_priority", flat=True)]),
        [bool(s) for s in rows.values_list("submitted_count", flat=True)],
    )


def test_the_dashboard_estimate_is_the_active_one_from_the_stored_probabilities(replayed):
    project, items, truth, a = replayed
    weights, priority, labelled = _stored(project)
    assert sum(labelled) == ANSWERS
    inp = gather(project=project, annotator_filter=AnnotatorFilter(judges=("judge-a",)))
    table = estimates.estimates_table(inp)
    row = next(r for r in table["rows"] if r["figure"].startswith("Share yes"))
    assert row["method"] == estimates.ACTIVE
    assert row["ppi_labelled"] == ANSWERS and row["ppi_n"] == ITEMS
    # Independently: π = min(1, w / τ) with τ the highest priority among unlabelled items.
    tau = max(q for q, done in zip(priority, labelled, strict=True) if not done)
    assert all(  # the humans' items are exactly the top of the order
        q > tau for q, done in zip(priority, labelled, strict=True) if done
    )
    pi = np.minimum(1.0, weights / tau)
    labels = [float(t) if done else None for t, done in zip(truth, labelled, strict=True)]
    direct = active_mean(a.astype(float).tolist(), labels, pi.tolist(), lam=1.0)
    assert row["ppi"] == pytest.approx(direct.estimate)
    assert (row["ppi_lower"], row["ppi_upper"]) == pytest.approx(
        (max(direct.low, 0.0), min(direct.high, 1.0))
    )
    ci = estimates.active_ci_table(inp)
    narrowing = [r for r in ci["rows"] if r["figure"] == row["figure"]]
    assert [r["labels"] for r in narrowing] == [5, 10, 20, 50, 60]
    assert (narrowing[-1]["estimate"], narrowing[-1]["width"]) == pytest.approx(
        (direct.estimate, direct.width)
    )
    # Had humans stopped after 20 answers: the first 20 labelled items of the order.
    first = set(np.argsort(-priority)[:20].tolist())
    tau_20 = max(q for i, q in enumerate(priority) if i not in first)
    early = active_mean(
        a.astype(float).tolist(),
        [float(t) if i in first else None for i, t in enumerate(truth)],
        np.minimum(1.0, weights / tau_20).tolist(),
        lam=1.0,
    )
    assert narrowing[2]["estimate"] == pytest.approx(early.estimate)
    assert narrowing[2]["width"] == pytest.approx(early.width)
    # The hard items (where the judges disagree) were dealt first far more often.
    hard_share = np.mean([w > 1 for w, done in zip(weights, labelled, strict=True) if done])
    assert hard_share > 0.5  # 30 % of the items


def test_replayed_with_active_sampling_unbiased_and_narrower_than_uniform(replayed):
    project, items, truth, a = replayed
    weights, *_ = _stored(project)
    rng = np.random.default_rng(3)
    y, f = truth.astype(float), a.astype(float).tolist()
    results = {}
    for name, w, lam in (
        ("active", weights, 1.0),  # the dashboard's active estimate
        ("uniform, same estimator", np.ones(ITEMS), 1.0),
        ("uniform, PPI++ tuned", np.ones(ITEMS), None),
    ):
        found, widths = [], []
        for _ in range(1500):
            q = priorities(w, 1 - rng.random(ITEMS))
            top = set(np.argsort(-q)[:ANSWERS].tolist())
            labels = [y[i] if i in top else None for i in range(ITEMS)]
            est = active_estimate(f, labels, w, q, lam=lam)
            assert est.labels == ANSWERS
            found.append(est.estimate)
            widths.append(est.width)
        found_ = np.array(found)
        mc_error = found_.std(ddof=1) / np.sqrt(found_.size)
        if lam is not None:  # a fixed λ: exactly unbiased
            assert abs(found_.mean() - y.mean()) <= 3 * mc_error, (name, found_.mean(), y.mean())
        results[name] = np.mean(widths)
    # Same number of human answers: the active interval is narrower than either uniform one.
    assert results["active"] < 0.95 * results["uniform, same estimator"], results
    assert results["active"] < 0.95 * results["uniform, PPI++ tuned"], results
