"""Argument-structure metrics (CheckWhy): edge/step similarity, leaf and step F1 and AllCorrect."""

import subprocess
import sys

import pytest

from metrics.argument_structure import structure_metrics
from task_types.argument_structure.graph import parse_compact
from tests.conftest import REPO

REFERENCE = parse_compact("(E1, E2) -> E3 -> E6; (E5, E6) -> claim")


def test_identical_structures_score_one_everywhere():
    metrics = structure_metrics(REFERENCE, REFERENCE)
    assert metrics["edge_similarity"] == metrics["step_similarity"] == 1.0
    assert metrics["leaf_f1"] == metrics["step_f1"] == 1.0
    assert metrics["leaf_all_correct"] is metrics["step_all_correct"] is True


def test_premise_order_and_step_order_do_not_matter():
    shuffled = parse_compact("(E6, E5) -> claim; (E2, E1) -> E3 -> E6")
    assert structure_metrics(shuffled, REFERENCE)["step_all_correct"] is True


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
    # edges: the prediction's 4 are all among the reference's 5 → 4 / 5
    assert metrics["edge_similarity"] == pytest.approx(4 / 5)
    # steps: 2 shared, 4 distinct in all
    assert metrics["step_similarity"] == pytest.approx(2 / 4)


def test_same_edges_grouped_differently_are_not_the_same_steps():
    # E1 -> E3 and E2 -> E3 as two steps has the reference's edges but not its combined step.
    predicted = parse_compact("E1 -> E3; E2 -> E3; E3 -> E6; (E5, E6) -> claim")
    metrics = structure_metrics(predicted, REFERENCE)
    assert metrics["edge_similarity"] == 1.0 and metrics["leaf_all_correct"] is True
    assert metrics["step_all_correct"] is False
    assert metrics["step_precision"] == pytest.approx(2 / 4) and metrics[
        "step_recall"
    ] == pytest.approx(2 / 3)


def test_an_empty_prediction_scores_zero_against_a_reference():
    metrics = structure_metrics([], REFERENCE)
    assert metrics["leaf_f1"] == metrics["step_f1"] == metrics["edge_similarity"] == 0.0


def test_the_metrics_module_loads_without_django():
    code = (
        "import sys; import metrics.argument_structure as m; "
        "assert 'django' not in sys.modules, sorted(k for k in sys.modules if k.startswith('django'))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
