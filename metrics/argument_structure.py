"""Argument-structure metrics (CheckWhy, Si et al. 2024, §5.1 and App. B): a structure against a
reference structure.

Plain functions over plain data (no Django). A structure is a list of steps
``{"premises": [ids], "conclusion": id or "claim"}`` (the premises jointly support the conclusion)
with, optionally, the text of each node (``texts``: id -> text). Structures are compared **as
text**: two structures that name the same statements under other ids are the same argument. A node
without a text reads as its id (so id-only structures over one item's evidence still compare), and
the claim always reads as ``claim`` (both structures argue for the same claim, whose wording an
annotator may have revised). Texts are compared after collapsing whitespace.

* **Edges.** An edge is a step (a many-to-one link is one link of the argument, as in the paper)
  read as a sentence: its premises' texts in sorted order joined by `` & ``, then `` → `` and the
  conclusion's text (:func:`edge_sentences`).
* **Alignment** (after Saha et al. 2021, ExplaGraphs, whose code CheckWhy follows): predicted edges
  are aligned one-to-one with gold edges so that the summed pair score is largest
  (:func:`optimal_alignment`, the Hungarian method); then P = Σ matched scores / |predicted|,
  R = Σ matched scores / |gold|, F1 = 2PR / (P + R) (:func:`alignment_scores`).
* **Exact Match Similarity**: the alignment F1 with pair score 1 when the two edge sentences are
  identical and 0 otherwise. **Structure Similarity**: the same alignment with a semantic pair
  scorer (BERTScore with DeBERTa-large in the paper; here any :class:`EdgeScorer` — the task type
  passes a local sentence-embedding scorer). The scorer's ``name`` is reported beside the figure.
* **Leaves** (P/R/F1, AllCorrect): leaf statements (premises no step concludes), by text.
* **Steps** (P/R/F1, AllCorrect): a step is correct when its premise texts (as a set) and its
  conclusion text equal a gold step's.
* **Intermediates** (P/R/F1, AllCorrect when F1 = 1): intermediate conclusions (conclusions other
  than the claim). As in EntailmentBank (Dalvi et al. 2021), each predicted intermediate is aligned
  with the gold intermediate whose leaf descendants overlap most (Jaccard over leaf texts; one-to-one
  and optimal here, ties going to the pair with the same text; pairs with no shared leaf are not
  aligned); an aligned intermediate is correct when its text equals the gold one.

Set precision / recall / F1 is :func:`metrics.sets.set_scores` (one definition for every task;
both empty scores 1, one side empty scores 0). The compact text form and the well-formedness check
live with the task type (``task_types/argument_structure/graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .sets import set_scores

CLAIM = "claim"
EDGE_ARROW = " → "
PREMISE_JOIN = " & "
EXACT_MATCH = "exact match"


class EdgeScorer(Protocol):
    """A pair scorer for Structure Similarity: a matrix of similarities (0..1) of every predicted
    edge sentence with every gold edge sentence; ``name`` says which scorer it is."""

    name: str

    def __call__(
        self, predicted: Sequence[str], gold: Sequence[str]
    ) -> Sequence[Sequence[float]]: ...


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
    """Support edges ``(premise, conclusion)`` by id (what annotators agree on in edit mode)."""
    return {(p, s["conclusion"]) for s in steps for p in s["premises"]}


def leaves(steps: Iterable[Mapping]) -> set[str]:
    """Leaf statements: premises that no step concludes."""
    steps = list(steps)
    concluded = {s["conclusion"] for s in steps}
    return {p for s in steps for p in s["premises"] if p not in concluded}


def step_keys(steps: Iterable[Mapping]) -> set[tuple[frozenset[str], str]]:
    """Steps as comparable keys: premises as a set (their order does not matter)."""
    return {(frozenset(s["premises"]), s["conclusion"]) for s in steps}


# --- structures as text --------------------------------------------------------------------------


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def node_text(node: str, texts: Mapping[str, str] | None) -> str:
    """The text a node reads as: ``claim`` for the claim, else its text, else its id."""
    if node == CLAIM:
        return CLAIM
    return _clean((texts or {}).get(node) or node)


def as_text(steps: Iterable[Mapping], texts: Mapping[str, str] | None = None) -> list[dict]:
    """The steps with every node replaced by its text (see :func:`node_text`)."""
    return [
        {
            "premises": list(dict.fromkeys(node_text(p, texts) for p in s["premises"])),
            "conclusion": node_text(s["conclusion"], texts),
        }
        for s in normalise_steps(steps)
    ]


def _edge_sentence(step: Mapping) -> str:
    return PREMISE_JOIN.join(sorted(step["premises"])) + EDGE_ARROW + step["conclusion"]


def edge_sentences(steps: Iterable[Mapping], texts: Mapping[str, str] | None = None) -> list[str]:
    """Each step as one sentence ``premise & premise → conclusion`` over node texts, in step
    order, each distinct sentence once."""
    return list(dict.fromkeys(_edge_sentence(s) for s in as_text(steps, texts)))


# --- alignment -----------------------------------------------------------------------------------


def optimal_alignment(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """A one-to-one assignment of rows to columns with the largest summed weight (Hungarian
    method, O(n²m)); ``min(rows, columns)`` pairs ``(row, column)`` sorted by row."""
    rows = len(weights)
    cols = len(weights[0]) if rows else 0
    if not rows or not cols:
        return []
    if rows > cols:
        transposed = [[weights[i][j] for i in range(rows)] for j in range(cols)]
        return sorted((i, j) for j, i in optimal_alignment(transposed))
    top = max(max(row) for row in weights)
    cost = [[top - w for w in row] for row in weights]  # maximise weight = minimise cost
    # Potentials u (rows, 1-based), v (columns); way/match over columns 0..cols (0 is virtual).
    u = [0.0] * (rows + 1)
    v = [0.0] * (cols + 1)
    match = [0] * (cols + 1)
    way = [0] * (cols + 1)
    for i in range(1, rows + 1):
        _assign_row(i, cost, u, v, match, way)
    return sorted((match[j] - 1, j - 1) for j in range(1, cols + 1) if match[j])


def _assign_row(
    i: int,
    cost: list[list[float]],
    u: list[float],
    v: list[float],
    match: list[int],
    way: list[int],
) -> None:
    """One step of the Hungarian method: assign row ``i`` along a shortest augmenting path,
    updating the potentials ``u``, ``v`` and the column assignment ``match`` in place."""
    cols = len(match) - 1
    inf = float("inf")
    match[0] = i
    column = 0
    least = [inf] * (cols + 1)
    used = [False] * (cols + 1)
    while True:
        used[column] = True
        row = match[column]
        delta, next_column = inf, 0
        for j in range(1, cols + 1):
            if used[j]:
                continue
            reduced = cost[row - 1][j - 1] - u[row] - v[j]
            if reduced < least[j]:
                least[j], way[j] = reduced, column
            if least[j] < delta:
                delta, next_column = least[j], j
        for j in range(cols + 1):
            if used[j]:
                u[match[j]] += delta
                v[j] -= delta
            else:
                least[j] -= delta
        column = next_column
        if match[column] == 0:
            break
    while column:
        previous = way[column]
        match[column] = match[previous]
        column = previous


@dataclass(frozen=True)
class AlignmentScores:
    """Edge precision, recall and F1 over the optimal alignment, and the aligned pairs
    ``(predicted index, gold index)`` with a score above 0."""

    precision: float
    recall: float
    f1: float
    pairs: tuple[tuple[int, int], ...]


def alignment_scores(
    predicted: Sequence[str],
    gold: Sequence[str],
    scorer: Callable[[Sequence[str], Sequence[str]], Sequence[Sequence[float]]],
) -> AlignmentScores:
    """P = Σ aligned scores / |predicted|, R = Σ aligned scores / |gold|, F1 = 2PR / (P + R);
    both empty scores 1, one side empty scores 0."""
    if not predicted or not gold:
        same = not predicted and not gold
        return AlignmentScores(float(same), float(same), float(same), ())
    matrix = [[float(x) for x in row] for row in scorer(predicted, gold)]
    pairs = tuple((i, j) for i, j in optimal_alignment(matrix) if matrix[i][j] > 0)
    total = sum(matrix[i][j] for i, j in pairs)
    precision, recall = total / len(predicted), total / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if total else 0.0
    return AlignmentScores(precision, recall, f1, pairs)


def _exact_alignment(predicted: Sequence[str], gold: Sequence[str]) -> AlignmentScores:
    """:func:`alignment_scores` with :func:`exact_match_scorer` for edge lists without repeats,
    without the Hungarian method: each sentence matches at most one identical one, so the best
    alignment pairs every shared sentence (the same figures, to the bit)."""
    if not predicted or not gold:
        return alignment_scores(predicted, gold, exact_match_scorer)
    where = {sentence: j for j, sentence in enumerate(gold)}
    pairs = tuple((i, where[p]) for i, p in enumerate(predicted) if p in where)
    total = float(len(pairs))
    precision, recall = total / len(predicted), total / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if total else 0.0
    return AlignmentScores(precision, recall, f1, pairs)


def exact_match_scorer(predicted: Sequence[str], gold: Sequence[str]) -> list[list[float]]:
    """1 for identical edge sentences, else 0."""
    return [[1.0 if p == g else 0.0 for g in gold] for p in predicted]


exact_match_scorer.name = EXACT_MATCH  # type: ignore[attr-defined]


def scorer_name(scorer: object) -> str:
    return str(getattr(scorer, "name", None) or getattr(scorer, "__name__", None) or scorer)


# --- intermediates -------------------------------------------------------------------------------


def _leaf_descendants(steps: Sequence[Mapping]) -> dict[str, frozenset[str]]:
    """For every conclusion, the leaf statements it rests on (through any number of steps)."""
    premises_of: dict[str, set[str]] = {}
    for step in steps:
        premises_of.setdefault(step["conclusion"], set()).update(step["premises"])
    found: dict[str, frozenset[str]] = {}

    def resolve(node: str, seen: frozenset[str]) -> frozenset[str]:
        if node not in premises_of:
            return frozenset({node})
        if node in found:
            return found[node]
        if node in seen:  # a cycle (refused elsewhere): stop here
            return frozenset()
        result = frozenset().union(*(resolve(p, seen | {node}) for p in premises_of[node]))
        found[node] = result
        return result

    for node in premises_of:
        resolve(node, frozenset())
    return found


def intermediate_scores(
    predicted: Sequence[Mapping], gold: Sequence[Mapping]
) -> tuple[float, float, float]:
    """Intermediates P/R/F1 of text steps (see the module docstring)."""
    predicted_leaves = _leaf_descendants(predicted)
    gold_leaves = _leaf_descendants(gold)
    predicted_nodes = sorted(n for n in predicted_leaves if n != CLAIM)
    gold_nodes = sorted(n for n in gold_leaves if n != CLAIM)
    if not predicted_nodes or not gold_nodes:
        same = not predicted_nodes and not gold_nodes
        return float(same), float(same), float(same)

    def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
        return len(a & b) / len(a | b) if a | b else 0.0

    overlap = [
        [jaccard(predicted_leaves[p], gold_leaves[g]) for g in gold_nodes] for p in predicted_nodes
    ]
    # Leaf overlap first; among equal overlaps the pair with the same text (exact integers).
    weights = [
        [round(overlap[i][j] * 10**6) * 2 + (p == g) for j, g in enumerate(gold_nodes)]
        for i, p in enumerate(predicted_nodes)
    ]
    correct = sum(
        1
        for i, j in optimal_alignment(weights)
        if overlap[i][j] > 0 and predicted_nodes[i] == gold_nodes[j]
    )
    precision, recall = correct / len(predicted_nodes), correct / len(gold_nodes)
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    return precision, recall, f1


# --- everything ----------------------------------------------------------------------------------


def structure_metrics(
    predicted: Sequence[Mapping],
    reference: Sequence[Mapping],
    *,
    predicted_texts: Mapping[str, str] | None = None,
    reference_texts: Mapping[str, str] | None = None,
    scorer: EdgeScorer | None = None,
) -> dict:
    """Compare a structure with a reference (CheckWhy's automatic metrics), nodes read as text:

    - ``exact_match_similarity`` (with ``exact_match_precision`` / ``_recall``): edge F1 over the
      optimal alignment, an edge pair scoring 1 when its sentences are identical;
    - ``structure_similarity`` (and ``structure_scorer``, the scorer's name): the same with
      ``scorer`` as pair score; None without a scorer;
    - ``leaf_precision`` / ``leaf_recall`` / ``leaf_f1`` / ``leaf_all_correct``;
    - ``step_precision`` / ``step_recall`` / ``step_f1`` / ``step_all_correct``;
    - ``intermediate_precision`` / ``intermediate_recall`` / ``intermediate_f1`` /
      ``intermediate_all_correct`` (F1 = 1).
    """
    predicted_text = as_text(predicted, predicted_texts)
    reference_text = as_text(reference, reference_texts)
    predicted_edges = list(dict.fromkeys(_edge_sentence(s) for s in predicted_text))
    reference_edges = list(dict.fromkeys(_edge_sentence(s) for s in reference_text))
    exact = _exact_alignment(predicted_edges, reference_edges)
    semantic = (
        alignment_scores(predicted_edges, reference_edges, scorer) if scorer is not None else None
    )
    predicted_leaves, reference_leaves = leaves(predicted_text), leaves(reference_text)
    predicted_steps, reference_steps = step_keys(predicted_text), step_keys(reference_text)
    leaf = set_scores(predicted_leaves, reference_leaves)
    step = set_scores(predicted_steps, reference_steps)
    intermediate = intermediate_scores(predicted_text, reference_text)
    return {
        "exact_match_similarity": exact.f1,
        "exact_match_precision": exact.precision,
        "exact_match_recall": exact.recall,
        "structure_similarity": semantic.f1 if semantic is not None else None,
        "structure_scorer": scorer_name(scorer) if scorer is not None else None,
        "leaf_precision": leaf.precision,
        "leaf_recall": leaf.recall,
        "leaf_f1": leaf.f1,
        "leaf_all_correct": predicted_leaves == reference_leaves,
        "step_precision": step.precision,
        "step_recall": step.recall,
        "step_f1": step.f1,
        "step_all_correct": predicted_steps == reference_steps,
        "intermediate_precision": intermediate[0],
        "intermediate_recall": intermediate[1],
        "intermediate_f1": intermediate[2],
        "intermediate_all_correct": intermediate[2] == 1.0,
    }


__all__ = [
    "CLAIM",
    "EXACT_MATCH",
    "AlignmentScores",
    "EdgeScorer",
    "alignment_scores",
    "as_text",
    "edge_sentences",
    "edges",
    "exact_match_scorer",
    "intermediate_scores",
    "leaves",
    "node_id",
    "node_text",
    "normalise_steps",
    "optimal_alignment",
    "scorer_name",
    "step_keys",
    "structure_metrics",
]
