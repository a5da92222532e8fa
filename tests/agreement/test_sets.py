"""Tests for metrics.sets (citation recovery, Xing et al.)."""

import math
import random

import pytest

from metrics.sets import (
    MeanSD,
    SetScores,
    aggregate_claims,
    breakdown_by_group,
    breakdown_values_by_group,
    judge_human_alpha,
    judge_human_reliability_data,
    mean_sd,
    merge_selections,
    set_scores,
    standardise_to_gold,
    summarise_scores,
    transparency_proportion,
)

# --- the paper's worked example (§4.1, footnote 11) ---------------------------------------------


def test_union_and_standardise_reproduces_the_papers_example():
    gold = {9}
    judge = {7, 9}
    humans = [{5, 9}]
    assert standardise_to_gold(judge, gold) == frozenset({-2, 9})
    assert standardise_to_gold(merge_selections(humans), gold) == frozenset({-2, 9})
    data = judge_human_reliability_data([("claim-1", gold, judge, humans)])
    assert data == {"claim-1": {"judge": frozenset({-2, 9}), "humans": frozenset({-2, 9})}}


def test_humans_selections_are_merged_by_union_before_standardising():
    assert merge_selections([{5}, {9}, set()]) == frozenset({5, 9})
    assert merge_selections([]) == frozenset()
    data = judge_human_reliability_data([("c", {9, 3}, {3}, [{5}, {9}, {3, 4}])])
    assert data["c"] == {"judge": frozenset({3}), "humans": frozenset({-2, 3, 9})}


def test_standardising_keeps_gold_labels_and_collapses_everything_else():
    assert standardise_to_gold({1, 2, 3}, {3, 4}) == frozenset({-2, 3})
    assert standardise_to_gold(set(), {3}) == frozenset()
    assert standardise_to_gold({1}, set(), other="other") == frozenset({"other"})
    with pytest.raises(ValueError, match=r"the replacement label -2 is itself a gold label"):
        standardise_to_gold({1}, {-2, 1})


def test_reliability_data_leaves_out_missing_coders():
    data = judge_human_reliability_data(
        [("a", {1}, None, [{1}]), ("b", {1}, {1}, []), ("c", {1}, {2}, [{1}])]
    )
    assert data == {
        "a": {"humans": frozenset({1})},
        "b": {"judge": frozenset({1})},
        "c": {"judge": frozenset({-2}), "humans": frozenset({1})},
    }


def test_reliability_data_accepts_a_mapping_of_items():
    data = judge_human_reliability_data({"x": ({9}, {7, 9}, [{5, 9}])})
    assert data == {"x": {"judge": frozenset({-2, 9}), "humans": frozenset({-2, 9})}}


def test_judge_human_alpha_on_a_small_hand_computed_case():
    # After standardising: unit 1 judge {-2, 9} vs humans {-2, 9} (d = 0), unit 2 {1} vs {1, 2}
    # (d = 1/2), unit 3 {3} vs {4} (d = 1). Two coders, n = 6 pairable values:
    # D_o = (2 * (0 + 1/2 + 1)) / 6 = 1/2; D_e = 27 / 30 (sum of d over the 30 ordered pairs of
    # values) → alpha = 1 - (1/2) / (9/10) = 4/9.
    items = [
        ("u1", {9}, {7, 9}, [{5, 9}]),
        ("u2", {1, 2}, {1}, [{1}, {2}]),
        ("u3", {3, 4}, {3}, [{4}]),
    ]
    assert judge_human_alpha(items) == pytest.approx(4 / 9, abs=1e-12)


def test_judge_human_alpha_matches_nltk_on_random_items():
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import jaccard_distance

    rng = random.Random(3)
    items = []
    for u in range(40):
        gold = set(rng.sample(range(8), rng.randint(1, 3)))
        judge = set(rng.sample(range(8), rng.randint(1, 3)))
        humans = [set(rng.sample(range(8), rng.randint(1, 2))) for _ in range(3)]
        items.append((f"u{u}", gold, judge, humans))
    data = judge_human_reliability_data(items)
    triples = [(coder, unit, value) for unit, row in data.items() for coder, value in row.items()]
    expected = AnnotationTask(data=triples, distance=jaccard_distance).alpha()
    assert judge_human_alpha(items) == pytest.approx(expected, abs=1e-9)


# --- per-item scores ---------------------------------------------------------------------------


def test_set_scores_follow_the_papers_definitions():
    # X_pred = {1, 2, 3}, X_gold = {2, 3, 4, 5}: P = 2/3, R = 2/4, F1 = 2PR/(P+R) = 4/7
    scores = set_scores({1, 2, 3}, {2, 3, 4, 5})
    assert scores == SetScores(
        precision=pytest.approx(2 / 3), recall=pytest.approx(0.5), f1=pytest.approx(4 / 7)
    )


def test_set_scores_empty_cases():
    # gold empty: "none" is the right answer
    assert set_scores(set(), set()) == SetScores(1.0, 1.0, 1.0)
    assert set_scores({1}, set()) == SetScores(0.0, 0.0, 0.0)
    # predicted empty against a non-empty gold: precision 0 (not undefined), recall 0
    assert set_scores(set(), {1}) == SetScores(0.0, 0.0, 0.0)
    # disjoint
    assert set_scores({1}, {2}) == SetScores(0.0, 0.0, 0.0)


def test_set_scores_accept_lists_with_duplicates():
    assert set_scores([1, 1, 2], [2, 2]) == SetScores(0.5, 1.0, pytest.approx(2 / 3))


# --- aggregation -------------------------------------------------------------------------------


def test_mean_sd_uses_the_population_sd_by_default():
    result = mean_sd([0.0, 1.0])
    assert result == MeanSD(0.5, 0.5, 2)
    assert mean_sd([0.0, 1.0], ddof=1).sd == pytest.approx(math.sqrt(0.5))
    assert str(MeanSD(0.6234, 0.2871, 120)) == "0.62 ± 0.29"
    empty = mean_sd([])
    assert empty.n == 0 and math.isnan(empty.mean) and math.isnan(empty.sd)
    assert math.isnan(mean_sd([1.0], ddof=1).sd)


def test_summarise_scores_gives_mean_and_sd_of_each_measure():
    summary = summarise_scores([SetScores(1.0, 0.5, 2 / 3), SetScores(0.0, 0.5, 0.0)])
    assert summary.n == 2
    assert summary.precision == MeanSD(0.5, 0.5, 2)
    assert summary.recall == MeanSD(0.5, 0.0, 2)
    assert summary.f1.mean == pytest.approx(1 / 3)


def test_full_setting_averages_per_claim_first_and_sample_setting_does_not():
    rows = [
        ("c1", SetScores(1.0, 1.0, 1.0)),
        ("c1", SetScores(0.0, 0.0, 0.0)),
        ("c1", SetScores(0.0, 0.0, 0.0)),
        ("c2", SetScores(1.0, 1.0, 1.0)),
    ]
    full = aggregate_claims(rows, setting="full")
    assert full.n == 2
    assert full.f1.mean == pytest.approx((1 / 3 + 1) / 2)
    sample = aggregate_claims(rows, setting="sample")
    assert sample.n == 4
    assert sample.f1.mean == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"unknown setting 'everything'"):
        aggregate_claims(rows, setting="everything")


def test_transparency_proportion_needs_every_evidence_of_an_explanation_over_the_threshold():
    f1s = {
        "e1": [0.6, 0.9],  # transparent (threshold inclusive)
        "e2": [1.0, 0.59],  # one evidence misses
        "e3": [0.7],  # sample setting: one evidence
        "e4": [],  # nothing scored: left out
    }
    assert transparency_proportion(f1s) == pytest.approx(2 / 3)
    assert transparency_proportion(f1s.values(), threshold=0.95) == 0.0
    assert transparency_proportion(f1s, threshold=0.5) == 1.0
    assert math.isnan(transparency_proportion({}))


def test_breakdown_by_group_reports_mean_sd_and_n_per_group():
    rows = [
        ("gpt4", SetScores(1.0, 1.0, 1.0)),
        ("gpt4", SetScores(0.5, 0.5, 0.5)),
        ("llama", SetScores(0.0, 0.0, 0.0)),
    ]
    breakdown = breakdown_by_group(rows)
    assert list(breakdown) == ["gpt4", "llama"]
    assert breakdown["gpt4"].f1 == MeanSD(0.75, 0.25, 2)
    assert breakdown["llama"].n == 1
    values = breakdown_values_by_group([("true", 1.0), ("false", 0.0), ("true", 0.0)])
    assert values == {"true": MeanSD(0.5, 0.5, 2), "false": MeanSD(0.0, 0.0, 1)}


# --- "none" answers (paper §4.1: an LLM annotator answers -1 when no sentence should cite it) ---


def test_a_humans_none_answer_is_kept_in_the_union_and_standardised():
    # Humans ∅ ("none") and {3}: the union is {-1, 3}, not {3}; -1 lies outside gold {3}, so it
    # becomes the common label -2 like any other wrong sentence.
    data = judge_human_reliability_data([("u1", {3}, {3}, [set(), {3}])])
    assert data["u1"] == {"judge": frozenset({3}), "humans": frozenset({-2, 3})}


def test_a_judges_none_answer_is_the_common_wrong_label_when_gold_has_sentences():
    data = judge_human_reliability_data([("u2", {1}, set(), [{2}])])
    assert data["u2"] == {"judge": frozenset({-2}), "humans": frozenset({-2})}


def test_none_is_right_when_gold_is_empty():
    # gold ∅ means "none" is the right answer: "none" stays -1 and is not confused with a wrong
    # sentence (-2).
    data = judge_human_reliability_data([("n", set(), {3}, [set(), set()])])
    assert data["n"] == {"judge": frozenset({-2}), "humans": frozenset({-1})}


def test_judge_human_alpha_with_none_answers_by_hand():
    # After the rule: u1 judge {3} vs humans {-2, 3} (d = 1/2); u2 {-2} vs {-2} (d = 0);
    # u3 {2} vs {2} (d = 0). n = 6 values; D_o = 2 * (1/2) / 6 = 1/6.
    # Values A={3}, B={-2,3}, C={-2} x2, D={2} x2; unordered pair distances: A-B 1/2, A-C 2 x 1,
    # A-D 2 x 1, B-C 2 x 1/2, B-D 2 x 1, C-D 4 x 1, C-C 0, D-D 0 → 11.5, ordered 23;
    # D_e = 23 / 30 → alpha = 1 - (1/6) / (23/30) = 18/23.
    items = [
        ("u1", {3}, {3}, [set(), {3}]),
        ("u2", {1}, set(), [{2}]),
        ("u3", {2}, {2}, [{2}]),
    ]
    assert judge_human_alpha(items) == pytest.approx(18 / 23, abs=1e-12)


def test_a_mean_f1_of_exactly_the_threshold_passes_despite_rounding():
    # Issue 28: gold of three sentences, five annotators; the F1s are 1/2, 3/4, 3/4, 2/3 and
    # 1/3, whose mean is exactly 3/5, but in floating point it comes out one step below 0.6.
    from fractions import Fraction
    from statistics import fmean

    gold = {0, 1, 2}
    selections = [{0}, {0, 1, 2, 7, 8}, {0, 1, 2, 7, 8}, {0, 1, 7}, {0, 7, 8}]
    f1s = [set_scores(s, gold).f1 for s in selections]
    exact = sum(Fraction(2 * len(s & gold), len(s) + len(gold)) for s in selections) / 5
    assert exact == Fraction(3, 5) and fmean(f1s) < 0.6  # the float mean really is below
    assert transparency_proportion({"e": [fmean(f1s)]}) == 1.0
    assert transparency_proportion({"e": [fmean(f1s), 0.6, 0.9]}) == 1.0  # the full setting
    # A mean genuinely below the threshold still fails: the nearest F1 mean below 3/5 that five
    # annotators on short explanations can reach differs by far more than the rounding slack.
    assert transparency_proportion({"e": [float(Fraction(3, 5) - Fraction(1, 10_000))]}) == 0.0
    assert transparency_proportion({"e": [fmean(f1s)]}, threshold=0.6 + 1e-12) == 0.0
