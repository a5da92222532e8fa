"""Inline citation markers in generated explanations: parse them and remove them.

An explanation sentence cites evidence passages with bracketed numeric markers placed where the
claim is made, usually just before or just after the closing period::

    ... may receive [9].          one id
    ... was found[25][26].        adjacent markers, one id each
    ... was found [1, 2].         one marker listing several ids

Accepted marker shapes: a ``[`` followed by one or more decimal ids separated by commas and
closed by ``]``, with optional spaces anywhere inside (``[1,2]``, ``[1, 2]``, ``[ 3 ]``).
Deliberately *not* markers: ranges (``[1-31]``), words (``[verbatim]``, ``[his]``, ``[x]``),
labelled lists (``[Works Cited: 24, 25]``) and unclosed brackets. In the Transparent-FCExp data
those shapes are either not citations at all (editorial brackets inside quotations) or model
noise that the dataset's own citation lists (``gen_cit``) do not count either.

Removal works on *clusters*: runs of markers separated only by whitespace (``[25][26]``,
``[1] [2] [3]``). Removing an id rewrites the cluster with the remaining markers in their
original spelling and spacing, and when nothing is left removes the cluster together with the
whitespace that attached it to the text, so ``"may receive [9]."`` becomes ``"may receive."``.

Pure Python, used by the importer, the LLM judges and the crowd-pilot demo alike. The marker
shape is :data:`annotation.text.markers.MARKER_PATTERN`, shared with the sentence splitter;
importing it loads spaCy (``annotation.text``), so code that runs at start-up imports this module
lazily.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from annotation.text.markers import MARKER_PATTERN

__all__ = ["MARKER_PATTERN", "parse_citations", "remove_all_citations", "remove_citation"]

_MARKER_RE = re.compile(MARKER_PATTERN)
_ID_RE = re.compile(r"\d+")
# A cluster is one or more markers separated by nothing but horizontal whitespace.
_CLUSTER_RE = re.compile(
    rf"(?P<lead>[ \t]*)(?P<cluster>{MARKER_PATTERN}(?:[ \t]*{MARKER_PATTERN})*)(?P<trail>\s*)"
)
# Characters that a removed cluster must not leave a space in front of.
_CLOSING_PUNCT = ".,;:!?)]}\"”’'…"


def parse_citations(sentence: str) -> list[int]:
    """Evidence ids cited in a sentence, in order of first appearance, without duplicates.

    ``'[9]'`` -> ``[9]``; ``'[1, 2]'`` -> ``[1, 2]``; ``'[25][26]'`` -> ``[25, 26]``;
    ``'[8][15]'`` -> ``[8, 15]``. Brackets that are not markers (see the module docstring) are
    ignored. An id cited twice in the sentence is reported once, at its first position.
    """
    if "[" not in sentence:  # most sentences of a long explanation cite nothing
        return []
    ids: dict[int, None] = {}
    for marker in _MARKER_RE.findall(sentence):
        for number in _ID_RE.findall(marker):
            ids.setdefault(int(number), None)
    return list(ids)


def remove_citation(sentence: str, evidence_id: int) -> str:
    """Remove every marker of one evidence id from a sentence and keep the other markers.

    ``'[25][26]'`` minus 26 -> ``'[25]'``; ``'[1, 2]'`` minus 1 -> ``'[2]'``;
    ``'may receive [9].'`` minus 9 -> ``'may receive.'``; ``'x.[9] Such'`` minus 9 ->
    ``'x. Such'``. A sentence whose only content was the marker becomes ``''``. The text
    around untouched markers is returned unchanged.
    """
    return _rewrite_clusters(sentence, lambda number: number == evidence_id)


def remove_all_citations(sentence: str) -> str:
    """Strip every citation marker from a sentence, tidying whitespace as `remove_citation` does.

    Used when a project chooses not to show the other (unmasked) markers to annotators.
    """
    return _rewrite_clusters(sentence, lambda number: True)


def _rewrite_clusters(sentence: str, drop: Callable[[int], bool]) -> str:
    """Rewrite each marker cluster without the ids for which ``drop`` is true."""

    def rewrite(match: re.Match[str]) -> str:
        lead, cluster, trail = match.group("lead", "cluster", "trail")
        if not any(drop(int(number)) for number in _ID_RE.findall(cluster)):
            return match.group()  # nothing to drop: the cluster stays as it was
        kept = _kept_cluster_text(cluster, drop)
        if kept:
            return lead + kept + trail
        start, end = match.span()
        next_char = sentence[end : end + 1]
        if start == 0 or sentence[start - 1] == "\n" or not next_char:
            # Cluster opens (or closes) the sentence or a line: its spacing goes with it.
            return ""
        if "\n" in trail:
            # 'word [9]\nNext' -> 'word\nNext': the line break stays.
            return trail.lstrip(" \t")
        if next_char in _CLOSING_PUNCT:
            # 'receive [9].' -> 'receive.': no space may be left before the punctuation.
            return ""
        if lead or trail:
            # 'to [32] emails' -> 'to emails', 'x.[9] Such' -> 'x. Such'.
            return " "
        # 'word[9]word': glued on both sides; keep two words apart, otherwise just cut.
        return " " if sentence[start - 1].isalnum() and next_char.isalnum() else ""

    return _CLUSTER_RE.sub(rewrite, sentence)


def _kept_cluster_text(cluster: str, drop: Callable[[int], bool]) -> str:
    """The cluster rewritten without dropped ids, preserving the spelling of what remains.

    Each kept marker keeps the whitespace that separated it from the previous kept marker;
    a multi-id marker keeps its own separator style (``', '`` or ``','``).
    """
    kept: list[str] = []
    position = 0
    for marker in _MARKER_RE.finditer(cluster):
        separator = cluster[position : marker.start()]
        position = marker.end()
        text = marker.group()
        numbers = _ID_RE.findall(text)
        remaining = [n for n in numbers if not drop(int(n))]
        if not remaining:
            continue
        if len(remaining) != len(numbers):
            comma = ", " if ", " in text else ","
            text = "[" + comma.join(remaining) + "]"
        kept.append((separator if kept else "") + text)
    return "".join(kept)
