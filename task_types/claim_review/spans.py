"""Source highlighting (best effort): which sentence of the response a claim most likely comes
from. Plain Python, no Django."""

from __future__ import annotations

import math
import re

_STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its "
    "this that these those there their they them he she his her we our you your i not no so than "
    "then which who whom whose what when where while into onto over under about also more most "
    "such can could would should may might will has have had do does did".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=\S)")


def _words(text: str) -> set[str]:
    words = set()
    for word in re.findall(r"\w+", text.lower()):
        if word in _STOPWORDS or len(word) < 2:
            continue
        # A crude plural fold so "planets" finds "planet"; enough for a highlight.
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def response_segments(response: str) -> list[tuple[int, int]]:
    """Character spans of the response's sentences (split at line breaks and sentence ends)."""
    spans = []
    offset = 0
    for line in response.splitlines(keepends=True):
        starts = [0] + [m.end() for m in _SENTENCE_END.finditer(line)]
        ends = [m.start() for m in _SENTENCE_END.finditer(line)] + [len(line.rstrip())]
        for start, end in zip(starts, ends, strict=True):
            piece = line[start:end]
            lead = len(piece) - len(piece.lstrip())
            if piece.strip():
                spans.append((offset + start + lead, offset + end))
        offset += len(line)
    return spans


def source_span(
    claim: str, response: str, segments: list[tuple[int, int]] | None = None
) -> list[int] | None:
    """Best-effort [start, end) of the response sentence a claim was extracted from: the sentence
    covering the largest share of the claim's content words, each word weighted by how rare it is
    in the response (so "planet" in an answer about planets counts little); ties go to the earliest
    sentence. None when no sentence covers a third. Claims are paraphrases: this is a pointer for
    the annotator, not an alignment."""
    wanted = _words(claim)
    segments = segments if segments is not None else response_segments(response)
    if not wanted or not segments:
        return None
    words = [_words(response[start:end]) for start, end in segments]
    total = len(segments)

    def weight(word: str) -> float:
        return math.log(1 + total / (1 + sum(word in w for w in words)))

    weights = {word: weight(word) for word in wanted}
    norm = sum(weights.values())
    best, best_score = None, 0.0
    for (start, end), present in zip(segments, words, strict=True):
        score = sum(weights[w] for w in wanted & present) / norm
        if score > best_score:
            best, best_score = [start, end], score
    return best if best_score >= 1 / 3 else None
