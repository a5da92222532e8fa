"""The UPHILL replay: generated items in the study's shape (real query templates), simulated
annotators through the API, and the paper's figures checked against an independent computation
from the stored answers."""

from collections import Counter, defaultdict
from itertools import combinations

import numpy as np
import pytest

from annotation.models import Annotation, Item
from studies.replays import replay_registry

CORRECT = {"true": "agree", "false": "disagree", "mixture": "neutral"}


@pytest.fixture
def replayed(db):
    result = replay_registry.get("uphill").run(scale=1, seed=87)
    answers = defaultdict(dict)
    for a in Annotation.objects.filter(item__project=result.project).select_related("item"):
        answers[a.item_id][a.annotator_id] = a.answer
    items = {i.id: i for i in Item.objects.filter(project=result.project)}
    return result, answers, items


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


def test_every_response_is_labelled_by_three_annotators_and_marked_generated(replayed):
    result, answers, items = replayed
    assert len(items) == 6 * 5 * 2
    assert {len(by) for by in answers.values()} == {3}
    assert all(i.payload["model"].startswith("simulated-") for i in items.values())
    levels = Counter(i.payload["level"] for i in items.values())
    assert levels == {level: 12 for level in range(5)}


def test_certain_only_response_agreement_matches_an_independent_count(replayed):
    result, answers, _ = replayed
    certain = [
        [a["label"] for a in by.values()]
        for by in answers.values()
        if not any(a["not_sure"] for a in by.values())
    ]
    left_out = len(answers) - len(certain)
    pairwise = sum(sum(x == y for x, y in combinations(labels, 2)) / 3 for labels in certain) / len(
        certain
    )
    all_agree = sum(len(set(labels)) == 1 for labels in certain) / len(certain)
    row = rows_by(result.tables["label_agreement"], "labels")["Response (all certain)"]
    assert row["units"] == len(certain) and row["left_out"] == left_out > 0
    assert row["pairwise"] == pytest.approx(pairwise)
    assert row["all_agree"] == pytest.approx(all_agree)
    assert 0.4 < pairwise < 0.98  # realistic disagreement


def test_factual_accuracy_per_level_uses_the_majority_stance(replayed):
    result, answers, items = replayed
    correct, total = Counter(), Counter()
    for item_id, by in answers.items():
        item = items[item_id]
        counts = Counter(a["label"] for a in by.values()).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            continue  # tie: no majority
        level = item.payload["level"]
        total[level] += 1
        correct[level] += counts[0][0] == CORRECT[item.payload["veracity"]]
    everyone = rows_by(result.tables["accuracy"], "model")["All models"]
    for level in range(5):
        assert everyone[f"level_{level}"] == pytest.approx(correct[level] / total[level])
    # The simulated models drift towards agreeing under presupposition: level 4 < level 0.
    assert everyone["level_4"] < everyone["level_0"]


def test_the_per_veracity_and_per_rank_tables_have_the_papers_breakdowns(replayed):
    result, _, _ = replayed
    veracity = {(r["model"], r["veracity"]) for r in result.tables["accuracy_veracity"]["rows"]}
    assert ("All models", "mixture") in veracity and ("simulated-model-a", "false") in veracity
    ranks = [r["rank"] for r in result.tables["sentence_ranks"]["rows"]]
    assert ranks[:5] == ["1", "2", "3", "4", "5"]  # every response has five sentences at least
    for item in Item.objects.filter(project=result.project):
        assert len(item.prepared["sentences"]) >= 5
    shares = result.tables["shares_veracity"]["rows"]
    assert len(shares) == 2 * 3 * 5  # model × veracity × level
    assert {r["level"] for r in result.tables["consistency_levels"]["rows"]} == set("01234")


def test_the_judge_labelled_accuracy_is_computed_from_the_evaluators_stored_labels(replayed):
    from llm_judges.models import JudgeCall, JudgeResult, JudgeRun

    result, _, items = replayed
    run = JudgeRun.objects.get(project=result.project)
    assert run.status == JudgeRun.Status.DONE
    assert JudgeCall.objects.filter(run=run, http_status=200).count() == len(items)
    correct, total = Counter(), Counter()
    for judged in JudgeResult.objects.filter(run=run, status=JudgeResult.Status.OK):
        item = items[judged.item_id]
        level = item.payload["level"]
        total[level] += 1
        correct[level] += judged.answer["label"] == CORRECT[item.payload["veracity"]]
    assert sum(total.values()) == run.answered_count == len(items)
    everyone = rows_by(result.tables["accuracy_judge"], "model")["All models"]
    assert everyone["labeller"] == run.judge.name
    for level in range(5):
        assert everyone[f"level_{level}"] == pytest.approx(correct[level] / total[level])
    # Validated on the paper's subset: the responses all three annotators labelled alike.
    (validation,) = result.tables["judge_validation"]["rows"]
    assert validation["judge"] == run.judge.name
    judged = {
        r.item_id: r.answer["label"]
        for r in JudgeResult.objects.filter(run=run, status=JudgeResult.Status.OK)
    }
    _, answers, _ = replayed
    agreed = {
        item: labels.pop()
        for item, by_annotator in answers.items()
        if len(labels := {a["label"] for a in by_annotator.values()}) == 1
        and len(by_annotator) == 3
    }
    units = [item for item in agreed if item in judged]
    assert 0 < len(units) < len(items)
    assert validation["units"] == len(units)
    assert validation["not_in_subset"] == len(judged) - len(units)
    hits = sum(judged[item] == agreed[item] for item in units)
    assert validation["accuracy"] == pytest.approx(hits / len(units))


def ppi_closed_form(y, f, fu, z=1.959963984540054):
    """PPI++ mean with the power-tuned λ, written out (Angelopoulos, Duchi & Zrnic 2024)."""
    y, f, fu = (np.asarray(v, dtype=float) for v in (y, f, fu))
    n, big_n = len(y), len(fu)
    lam = np.cov(y, f)[0, 1] / (f.var(ddof=1) + n / big_n * fu.var(ddof=1))
    lam = min(1.0, max(0.0, lam))
    theta = lam * fu.mean() + (y - lam * f).mean()
    se = np.sqrt((y - lam * f).var(ddof=1) / n + lam**2 * fu.var(ddof=1) / big_n)
    return theta, theta - z * se, theta + z * se, lam


def test_prediction_powered_accuracy_per_level_matches_an_independent_computation(replayed):
    from llm_judges.models import JudgeResult
    from studies.replays import human_sample
    from task_types.stance.replay import JUDGE

    result, answers, items = replayed
    sample = human_sample([i.external_id for i in items.values()], share=0.4, seed=87)
    judge = {
        r.item_id: r.answer["label"].lower()
        for r in JudgeResult.objects.filter(
            item__project=result.project, judge__name=JUDGE, status="ok"
        )
    }
    rows = rows_by(result.tables["prediction_powered"], "figure")
    for level in range(5):
        human, judged = {}, {}
        for pk, item in items.items():
            if item.payload["level"] != level:
                continue
            correct = CORRECT[item.payload["veracity"]]
            if pk in judge:
                judged[pk] = float(judge[pk] == correct)
            if item.external_id in sample:
                (top, n), *rest = Counter(a["label"] for a in answers[pk].values()).most_common()
                if not rest or rest[0][1] < n:  # a tie has no majority
                    human[pk] = float(top == correct)
        row = rows[f"Factual accuracy, level {level}"]
        assert row["judge"] == JUDGE and row["human_n"] == len(human)
        assert row["human"] == pytest.approx(np.mean(list(human.values())))
        half = 1.959963984540054 * np.std(list(human.values()), ddof=1) / np.sqrt(len(human))
        # a share's interval is cut to [0, 1] (Estimand.bounds)
        assert row["human_upper"] == pytest.approx(min(row["human"] + half, 1.0))
        assert row["human_lower"] == pytest.approx(max(row["human"] - half, 0.0))
        assert row["judge_only"] == pytest.approx(np.mean(list(judged.values())))
        assert row["judge_n"] == len(judged)
        labelled = [pk for pk in human if pk in judged]
        rest = [judged[pk] for pk in judged if pk not in human]
        y, f = [human[pk] for pk in labelled], [judged[pk] for pk in labelled]
        theta, low, high, lam = ppi_closed_form(y, f, rest)
        assert (row["ppi"], row["ppi_lower"], row["ppi_upper"], row["lam"]) == pytest.approx(
            (theta, max(low, 0.0), min(high, 1.0), lam)
        )
        assert row["ppi_labelled"] == len(labelled) and row["ppi_n"] == len(judged)
        ppi_py = pytest.importorskip("ppi_py")
        assert row["ppi"] == pytest.approx(
            float(
                np.squeeze(
                    ppi_py.ppi_mean_pointestimate(np.array(y), np.array(f), np.array(rest), lam=lam)
                )
            )
        )
    consistency = rows["Consistency with level 0, level 2"]
    assert consistency["unit"] == "claims" and 2 <= consistency["ppi_n"] <= 12
