"""Argument-structure metrics (CheckWhy): a structure against a reference structure.

Plain functions over plain data (no Django). A structure is a list of steps
``{"premises": [ids], "conclusion": id or "claim"}``: the premises jointly support the conclusion.

* :func:`structure_metrics` — everything below in one dict, as exports write it per item;
* edge similarity — exact-match similarity over support edges ``premise → conclusion``,
  |E ∩ E'| / |E ∪ E'|; step similarity — the same over whole steps;
* leaf P/R/F1 and AllCorrect — leaf evidence (premises that no step concludes) against the
  reference's leaves; AllCorrect is 1 only when the two leaf sets are equal;
* step P/R/F1 and AllCorrect — steps match when their premise sets and conclusions are equal.

Set precision / recall / F1 is :func:`metrics.sets.set_scores` (one definition for every task).
The compact text form and the well-formedness check live with the task type
(``task_types/argument_structure/graph.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .sets import set_scores

CLAIM = "claim"


def node_id(value: object) -> str:
    text = str(value).strip()
    return CLAIM if text.lower() == CLAIM else text


def normalise_steps(steps: Iterable[Mapping]) -> list[dict]:
    """Plain ``{"premises": [...], "conclusion": ...}`` steps with ids stripped, ``claim`` in lower
    case and repeated premises of one step dropped (first occurrence kept)."""
    result = []
    for step in steps:
        premises: list[str] = []
        for premise in step.get("premises") or []:
            node = node_id(premise)
            if node and node not in premises:
                premises.append(node)
        result.append({"premises": premises, "conclusion": node_id(step.get("conclusion") or "")})
    return result


def edges(steps: Iterable[Mapping]) -> set[tuple[str, str]]:
    """Support edges ``(premise, conclusion)``."""
    return {(p, s["conclusion"]) for s in steps for p in s["premises"]}


def leaves(steps: Iterable[Mapping]) -> set[str]:
    """Leaf statements: premises that no step concludes."""
    steps = list(steps)
    concluded = {s["conclusion"] for s in steps}
    return {p for s in steps for p in s["premises"] if p not in concluded}


def step_keys(steps: Iterable[Mapping]) -> set[tuple[frozenset[str], str]]:
    """Steps as comparable keys: premises as a set (their order does not matter)."""
    return {(frozenset(s["premises"]), s["conclusion"]) for s in steps}


def _jaccard(a: set, b: set) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def structure_metrics(predicted: Sequence[Mapping], reference: Sequence[Mapping]) -> dict:
    """Compare a structure with a reference (CheckWhy's automatic metrics).

    - ``edge_similarity``: exact-match similarity over support edges, |E ∩ E'| / |E ∪ E'|;
    - ``step_similarity``: the same over whole steps (premise set and conclusion must match);
    - ``leaf_precision`` / ``leaf_recall`` / ``leaf_f1`` and ``leaf_all_correct``: the leaf
      evidence (premises no step concludes) against the reference's leaves;
    - ``step_precision`` / ``step_recall`` / ``step_f1`` and ``step_all_correct``: steps matched
      exactly; all correct means the two structures have the same steps.
    """
    predicted = normalise_steps(predicted)
    reference = normalise_steps(reference)
    predicted_leaves, reference_leaves = leaves(predicted), leaves(reference)
    predicted_steps, reference_steps = step_keys(predicted), step_keys(reference)
    leaf = set_scores(predicted_leaves, reference_leaves)
    step = set_scores(predicted_steps, reference_steps)
    return {
        "edge_similarity": _jaccard(edges(predicted), edges(reference)),
        "step_similarity": _jaccard(predicted_steps, reference_steps),
        "leaf_precision": leaf.precision,
        "leaf_recall": leaf.recall,
        "leaf_f1": leaf.f1,
        "leaf_all_correct": predicted_leaves == reference_leaves,
        "step_precision": step.precision,
        "step_recall": step.recall,
        "step_f1": step.f1,
        "step_all_correct": predicted_steps == reference_steps,
    }


__all__ = [
    "CLAIM",
    "node_id",
    "edges",
    "leaves",
    "normalise_steps",
    "step_keys",
    "structure_metrics",
]
