"""Text utilities for the citation-recovery task: sentence splitting and citation markers.

Pure Python plus spaCy (no Django), so the importer, the LLM judges and the benchmarks can all
use them. See `annotation.text.sentences` and `annotation.text.citations` for the rules.
"""

from .citations import parse_citations, remove_all_citations, remove_citation
from .sentences import split_sentences, split_sentences_many

__all__ = [
    "parse_citations",
    "remove_all_citations",
    "remove_citation",
    "split_sentences",
    "split_sentences_many",
]
