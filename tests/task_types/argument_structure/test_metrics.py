"""Argument-structure metrics (CheckWhy §5.1, App. B): Exact Match and Structure Similarity over
edges read as text and aligned one-to-one, Leaves, Steps and Intermediates F1 with AllCorrect."""

import itertools
import random
import subprocess
import sys

import pytest

from metrics.argument_structure import (
    alignment_scores,
    edge_sentences,
    optimal_alignment,
    structure_metrics,
)
from task_types.argument_structure.graph import parse_compact
from tests.conftest import REPO

REFERENCE = parse_compact("(E1, E2) -> E3 -> E6; (E5, E6) -> claim")


def test_identical_structures_score_one_everywhere():
    metrics = structure_metrics(REFERENCE, REFERENCE)
    assert metrics["exact_match_similarity"] == 1.0
    assert metrics["leaf_f1"] == metrics["step_f1"] == metrics["intermediate_f1"] == 1.0
    assert metrics["leaf_all_correct"] is metrics["step_all_correct"] is True
    assert metrics["intermediate_all_correct"] is True
    assert metrics["structure_similarity"] is None  # no scorer given


def test_premise_order_and_step_order_do_not_matter():
    shuffled = parse_compact("(E6, E5) -> claim; (E2, E1) -> E3 -> E6")
    metrics = structure_metrics(shuffled, REFERENCE)
    assert metrics["step_all_correct"] is True and metrics["exact_match_similarity"] == 1.0


# --- edges as text -------------------------------------------------------------------------------

GOLD_TEXTS = {"E1": "Rust was found.", "E2": "Rust weakens steel.", "E3": "The cables failed."}
GOLD = parse_compact("(E1, E2) -> E3 -> claim")


def test_an_edge_is_a_sentence_of_its_premise_texts_and_its_conclusion_text():
    assert edge_sentences(GOLD, GOLD_TEXTS) == [
        "Rust was found. & Rust weakens steel. → The cables failed.",
        "The cables failed. → claim",
    ]


def test_edges_differing_only_in_node_ids_score_one():
    # Same texts under other ids (and premises in another order): the same argument.
    predicted = parse_compact("(N7, N2) -> N9 -> claim")
    texts = {"N2": "Rust was found.", "N7": "Rust  weakens steel.", "N9": "The cables failed."}
    metrics = structure_metrics(predicted, GOLD, predicted_texts=texts, reference_texts=GOLD_TEXTS)
    assert metrics["exact_match_similarity"] == 1.0
    assert metrics["leaf_all_correct"] and metrics["step_all_correct"]
    assert metrics["intermediate_all_correct"]


def test_same_ids_with_other_texts_do_not_match():
    texts = {**GOLD_TEXTS, "E3": "The bridge closed."}
    metrics = structure_metrics(GOLD, GOLD, predicted_texts=texts, reference_texts=GOLD_TEXTS)
    # Neither edge reads the same: "… → The bridge closed." and "The bridge closed. → claim".
    assert metrics["exact_match_similarity"] == 0.0


def test_exact_match_similarity_is_edge_f1_over_the_alignment_hand_computed():
    # Gold edges: "a & b → c", "c → claim".
    # Predicted: "a → c", "b → c", "c → claim" (the combined step split in two).
    # Exact matches: only "c → claim" → P = 1/3, R = 1/2, F1 = 2·(1/6)/(5/6) = 0.4.
    gold_texts = {"E1": "a", "E2": "b", "E3": "c"}
    predicted = parse_compact("X1 -> X3; X2 -> X3; X3 -> claim")
    predicted_texts = {"X1": "a", "X2": "b", "X3": "c"}
    metrics = structure_metrics(
        predicted, GOLD, predicted_texts=predicted_texts, reference_texts=gold_texts
    )
    assert metrics["exact_match_precision"] == pytest.approx(1 / 3)
    assert metrics["exact_match_recall"] == pytest.approx(1 / 2)
    assert metrics["exact_match_similarity"] == pytest.approx(0.4)


def test_the_alignment_is_optimal_one_to_one_not_greedy():
    # Scores: p1–g1 0.9, p1–g2 0.8, p2–g1 0.7, p2–g2 0.1. Greedy takes p1–g1 then p2–g2 (1.0);
    # the optimal one-to-one alignment is p1–g2 + p2–g1 = 1.5 → P = R = F1 = 1.5 / 2 = 0.75.
    table = {("p1", "g1"): 0.9, ("p1", "g2"): 0.8, ("p2", "g1"): 0.7, ("p2", "g2"): 0.1}

    def scorer(predicted, gold):
        return [[table[(p, g)] for g in gold] for p in predicted]

    scores = alignment_scores(["p1", "p2"], ["g1", "g2"], scorer)
    assert scores.pairs == ((0, 1), (1, 0))
    assert scores.precision == scores.recall == scores.f1 == pytest.approx(0.75)


def test_an_unequal_alignment_divides_by_each_side():
    # 3 predicted, 1 gold scoring 0.6 with the second: P = 0.6 / 3, R = 0.6 / 1.
    def scorer(predicted, gold):
        return [[0.6 if p == "b" else 0.2 for _ in gold] for p in predicted]

    scores = alignment_scores(["a", "b", "c"], ["g"], scorer)
    assert scores.pairs == ((1, 0),)
    assert scores.precision == pytest.approx(0.2) and scores.recall == pytest.approx(0.6)
    assert scores.f1 == pytest.approx(2 * 0.2 * 0.6 / 0.8)


def test_the_optimal_alignment_equals_brute_force_on_random_matrices():
    rng = random.Random(7)
    for _ in range(200):
        rows, cols = rng.randint(1, 5), rng.randint(1, 5)
        matrix = [[rng.choice([0.0, 0.1, 0.5, 0.9, 1.0]) for _ in range(cols)] for _ in range(rows)]
        pairs = optimal_alignment(matrix)
        assert len(pairs) == min(rows, cols)
        assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
        best = _brute(matrix)
        assert sum(matrix[i][j] for i, j in pairs) == pytest.approx(best)


def _brute(matrix):
    rows, cols = len(matrix), len(matrix[0])
    if rows <= cols:
        return max(
            sum(matrix[i][j] for i, j in enumerate(perm))
            for perm in itertools.permutations(range(cols), rows)
        )
    return max(
        sum(matrix[i][j] for j, i in enumerate(perm))
        for perm in itertools.permutations(range(rows), cols)
    )


def test_structure_similarity_uses_the_given_scorer_and_says_which():
    def overlap(predicted, gold):  # token Jaccard, a stand-in for an embedding scorer
        def jac(a, b):
            a, b = set(a.split()), set(b.split())
            return len(a & b) / len(a | b)

        return [[jac(p, g) for g in gold] for p in predicted]

    overlap.name = "token-overlap"
    gold_texts = {"E1": "a", "E2": "b", "E3": "c"}
    predicted = parse_compact("X1 -> X3 -> claim")
    metrics = structure_metrics(
        predicted,
        GOLD,
        predicted_texts={"X1": "a", "X3": "c"},
        reference_texts=gold_texts,
        scorer=overlap,
    )
    # Pred "a → c", "c → claim"; gold "a & b → c", "c → claim". Aligned: "a → c"–"a & b → c"
    # (tokens {a,→,c} vs {a,&,b,→,c}: 3/5) and "c → claim"–"c → claim" (1) → P = R = 1.6 / 2.
    assert metrics["structure_similarity"] == pytest.approx(0.8)
    assert metrics["structure_scorer"] == "token-overlap"
    assert metrics["exact_match_similarity"] == pytest.approx(0.5)


# --- leaves, steps, intermediates ----------------------------------------------------------------


def test_a_structure_missing_one_premise_of_a_combined_step():
    # (E1) -> E3 instead of (E1, E2) -> E3: leaves {E1, E5} vs {E1, E2, E5}; 2 of 3 steps match.
    predicted = parse_compact("E1 -> E3 -> E6; (E5, E6) -> claim")
    metrics = structure_metrics(predicted, REFERENCE)
    assert metrics["leaf_precision"] == 1.0
    assert metrics["leaf_recall"] == pytest.approx(2 / 3)
    assert metrics["leaf_f1"] == pytest.approx(0.8)
    assert metrics["leaf_all_correct"] is False
    assert metrics["step_precision"] == metrics["step_recall"] == pytest.approx(2 / 3)
    assert metrics["step_f1"] == pytest.approx(2 / 3)
    assert metrics["step_all_correct"] is False
    # Edges (one per step) "E1 → E3" ≠ "E1 & E2 → E3"; the other two match: F1 = 2 / 3.
    assert metrics["exact_match_similarity"] == pytest.approx(2 / 3)


def test_same_premises_grouped_differently_are_not_the_same_steps():
    # E1 -> E3 and E2 -> E3 as two steps is not the reference's combined step.
    predicted = parse_compact("E1 -> E3; E2 -> E3; E3 -> E6; (E5, E6) -> claim")
    metrics = structure_metrics(predicted, REFERENCE)
    assert metrics["leaf_all_correct"] is True
    assert metrics["step_all_correct"] is False
    assert metrics["step_precision"] == pytest.approx(2 / 4)
    assert metrics["step_recall"] == pytest.approx(2 / 3)
    assert metrics["exact_match_similarity"] == pytest.approx(2 * 2 / (4 + 3))


def test_intermediates_f1_counts_aligned_intermediate_conclusions_with_the_gold_text():
    # Gold: (a, b) -> c; (c, d) -> e; e -> claim. Intermediates c (leaves {a,b}), e ({a,b,d}).
    gold = parse_compact("(E1, E2) -> E3; (E3, E4) -> E5 -> claim")
    gold_texts = {"E1": "a", "E2": "b", "E3": "c", "E4": "d", "E5": "e"}
    # Predicted: the first intermediate is worded differently ("c2"), the second is right.
    predicted = parse_compact("(X1, X2) -> X3; (X3, X4) -> X5 -> claim")
    predicted_texts = {"X1": "a", "X2": "b", "X3": "c2", "X4": "d", "X5": "e"}
    metrics = structure_metrics(
        predicted, gold, predicted_texts=predicted_texts, reference_texts=gold_texts
    )
    # X3 aligns with E3 (same leaves) but its text differs; X5 aligns with E5 and matches.
    assert metrics["intermediate_precision"] == pytest.approx(1 / 2)
    assert metrics["intermediate_recall"] == pytest.approx(1 / 2)
    assert metrics["intermediate_f1"] == pytest.approx(1 / 2)
    assert metrics["intermediate_all_correct"] is False
    assert metrics["leaf_all_correct"] is True


def test_an_extra_intermediate_lowers_precision_only():
    # Gold a -> c -> claim (1 intermediate); predicted a -> c -> f -> claim (2): the extra f
    # aligns with nothing (one-to-one) → P = 1/2, R = 1, F1 = 2/3.
    gold = parse_compact("E1 -> E3 -> claim")
    predicted = parse_compact("E1 -> E3 -> E7 -> claim")
    metrics = structure_metrics(predicted, gold)
    assert metrics["intermediate_precision"] == pytest.approx(1 / 2)
    assert metrics["intermediate_recall"] == 1.0
    assert metrics["intermediate_f1"] == pytest.approx(2 / 3)


def test_an_empty_prediction_scores_zero_against_a_reference():
    metrics = structure_metrics([], REFERENCE)
    assert metrics["leaf_f1"] == metrics["step_f1"] == metrics["exact_match_similarity"] == 0.0
    assert metrics["intermediate_f1"] == 0.0


def test_the_metrics_module_loads_without_django():
    code = (
        "import sys; import metrics.argument_structure as m; "
        "assert 'django' not in sys.modules, sorted(k for k in sys.modules if k.startswith('django'))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_the_exact_match_shortcut_gives_the_hungarian_figures_to_the_bit():
    """Exact Match Similarity pairs shared sentences without the Hungarian method (issue 34)."""
    import random

    from metrics.argument_structure import (
        _exact_alignment,
        alignment_scores,
        exact_match_scorer,
    )

    rng = random.Random(7)
    words = [f"s{i}" for i in range(8)]
    for _ in range(300):
        predicted = list(dict.fromkeys(rng.choices(words, k=rng.randint(0, 6))))
        gold = list(dict.fromkeys(rng.choices(words, k=rng.randint(0, 6))))
        fast = _exact_alignment(predicted, gold)
        slow = alignment_scores(predicted, gold, exact_match_scorer)
        assert (fast.precision, fast.recall, fast.f1) == (slow.precision, slow.recall, slow.f1)
        assert fast.pairs == slow.pairs
