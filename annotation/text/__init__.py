"""Text utilities: sentence splitting that keeps inline citation markers with their sentence
(:mod:`annotation.text.sentences`, the marker shape in :mod:`annotation.text.markers`) and the
bundled MiniLM sentence embeddings (:mod:`annotation.text.embeddings`, imported on its own).

Pure Python plus spaCy (no Django), so the importer, the LLM judges and the benchmarks can all
use them. Importing this package loads spaCy: code that runs at Django start-up imports it lazily.
"""

from .sentences import split_sentences, split_sentences_many

__all__ = [
    "split_sentences",
    "split_sentences_many",
]
