"""Sentence segmentation for generated fact-checking explanations with inline citation markers.

Pipeline (built once, lazily, shared by the whole process)::

    spacy.blank("en")            tokenizer only, no statistical model
      -> "sentencizer"           spaCy's rule-based splitter: a sentence ends after . ! ?
      -> "citation_sentence_rules"  this module's component, which corrects the proposals

The sentencizer proposes a boundary before the first non-punctuation token after a ``.``,
``!`` or ``?`` token. That is the right starting point but wrong in ways that matter for
citation recovery, so ``citation_sentence_rules`` (placed *after* it) re-decides every boundary
on the text itself, working with character offsets and small regular expressions around each
proposal rather than walking every token (the tokenizer already costs ~1 µs per token; the
rules add only a few regex probes per sentence). Its rules, in order:

1. **Opening punctuation starts the next sentence.** The sentencizer leaves everything after
   the period that is punctuation with the old sentence, including ``(`` and opening quotes:
   ``...[32]. (Barack) Obama`` and ``...[47]. "Comparing...``. The boundary moves back to them.
2. **Citation markers close the sentence before them.** ``may receive [9]. Such`` already ends
   after ``.``; in ``may receive.[9] Such`` and ``...bogus."[14] The`` the markers (and any
   closing quotes, brackets and periods between them) after the end punctuation move to the
   first sentence, whether glued to the period or separated by a space. Marker groups are
   never split (``[8][15]``, ``[1, 2]``). Exception: a marker that *opens a line* and is
   followed by text on it is a reference-list entry (``\\n[3] News article.``) and starts one.
3. **No boundary before a lowercase word.** Sentences here start with a capital, a digit, a
   quote or a marker; a lowercase continuation means the period (or ``?``/``!``) was not a
   sentence end: ``"...drafted?" is false``, ``etc. is not``, ``I-Vt., had stated``,
   ``this... then``.
4. **Abbreviations.** No boundary after a title or a reference abbreviation, whatever
   follows: ``Dr.``, ``Mr.``, ``Sen.``, ``Lt. Col.``, ``Fig.``, ``vs.``, ``e.g.``, ``i.e.``,
   ``et al.`` (see ``_ALWAYS_CONTINUE``); nor after a single capital initial (``J. K.
   Rowling``, ``George W. Bush``); nor after ``No.``/``Art.``/month abbreviations when a number
   follows (``No. 5``, ``Oct. 29``). Most of these are single tokens for spaCy's English
   tokenizer (``U.S.``, ``e.g.``, ``Dr.``, ``D.C.``), so the sentencizer never proposes a
   boundary there in the first place, and decimals (``3.5 percent``, ``$1.2 million``) are
   single tokens too.
5. **Boundaries the sentencizer cannot see** are added by pattern:
   a. end punctuation glued to markers: ``receive.[9] Such``, ``Corp.[12] In`` (the tokenizer
      keeps ``receive.[9`` as one token, so no ``.`` token exists to split after);
   b. a sentence-final abbreviation before a typical sentence opener: ``in Washington,
      D.C. However``, ``Development Corp. However``, ``in the U.S. Therefore`` (but ``U.S.
      President`` stays together); or before a closing quote and a capital: ``Fla." Many``;
   c. an ellipsis before a capitalised word: ``cut with... Once they're distracted``
      (``Biden...I was``, ``office... IN A`` and ``to ... turn`` do not split);
   d. layout: a blank line, or a line that opens with a list bullet (``* ``, ``- ``, ``1. ``)
      or a reference-list entry (``[3] News article.``), always starts a sentence, even
      before a lowercase word.
6. **Nothing-but-markers sentences merge** into the previous sentence (a trailing
   ``[1][2][3]`` line after the last sentence).

Returned sentences are stripped of surrounding whitespace; whitespace-only pieces are dropped.
On the Transparent-FCExp explanations (joined with spaces and split again) these rules give back
the dataset's own sentence lists for 94.8 % of the 1,458 explanations; the rest are places where
the dataset's split disagrees with the rules above (see ``tests/text/test_real_explanations.py``).

Speed, measured on the project's 2-core machine with 100,000 explanations of 4-10 real
sentences (~1,000 characters each, numbers randomised so the tokenizer cache cannot simply
memorise them): 24-25 s in one process (~4,000 items/s; 17 s when the sentences repeat
verbatim). spaCy's tokenizer takes about 60 % of that, the sentencizer about 20 %, these rules
the rest. ``split_sentences_many(..., n_process=2)`` spreads the work over two processes
(16-17 s while other jobs shared the machine). Like spaCy's own ``nlp.pipe(n_process=...)``
it spawns its workers, so a calling *script* needs the usual ``if __name__ == "__main__":``
guard.

``split_sentences_many`` (the importers' path) gives the same sentences as the pipeline
without tokenizing whole texts: the sentencizer's proposals depend only on the tokens around
each end character, and spaCy's tokenizer works span by span between whitespace, so only those
spans are tokenized, one at a time and remembered (`_proposals`); nothing is mirrored on
tokens. On the import benchmark's 10,000 synthetic explanations the split went from ~290 to
~85 µs per text (26 Nov 2026, same machine, load ~1.6). Tests check the proposals against the
sentencizer's and the sentences against the pipeline's on generated texts; 58,748 texts (the
benchmark's, the Transparent-FCExp explanations joined four ways, their passages and claims,
and generated ones) and 60,000 more generated ones gave the same result both ways.

spaCy is the only dependency; no Django import, so the importer, judges and benchmarks can use
this module directly.
"""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache

import numpy as np
import spacy
from spacy.attrs import IDX, IS_PUNCT, LENGTH, SENT_START
from spacy.language import Language
from spacy.tokens import Doc

from .markers import MARKER_PATTERN

__all__ = ["get_nlp", "iter_split_sentences", "split_sentences", "split_sentences_many"]

COMPONENT_NAME = "citation_sentence_rules"
# doc.user_data keys: the original text, and the sentence start offsets the rules chose.
_TEXT_KEY = "annotation.text:text"
_STARTS_KEY = "annotation.text:sentence_starts"

# spaCy's tokenizer caches the tokenization of each whitespace-separated chunk. Its default
# (10,000 chunks) fills up within the first few hundred explanations of a large import and
# is never refreshed; a larger cache roughly halves tokenization time on real data.
_TOKENIZER_CACHE_SIZE = 200_000


def _after_any(alternatives: str, suffix: str = "") -> str:
    """A zero-width pattern: the text so far ends with one of the words, then ``suffix``.

    ``alternatives`` is ``|``-separated. Python's lookbehind needs a fixed width, so the words
    are grouped by length, one lookbehind per length. Used after a literal period, this lets
    the regex engine jump from period to period instead of trying every word of the text.
    """
    by_length: dict[int, list[str]] = {}
    for word in alternatives.split("|"):
        by_length.setdefault(len(word.replace("\\", "")), []).append(word)
    lookbehinds = (rf"(?<=(?<![\w.])(?:{'|'.join(words)}){suffix})" for words in by_length.values())
    return "(?:" + "|".join(lookbehinds) + ")"


_MARKER = MARKER_PATTERN
_MARKER_RE = re.compile(_MARKER)
# Quotes and brackets that can close a sentence after its end punctuation, and that open one.
_CLOSERS = "\"”’')\\]"
_OPENING = frozenset("\"“‘'([")

# Titles and reference abbreviations after which a sentence never ends (rule 4).
_ALWAYS_CONTINUE = (
    "Mr|Mrs|Ms|Mx|Dr|Prof|Rev|Hon|Pres|Gov|Govs|Sen|Sens|Rep|Reps|Atty|Amb|Supt|"
    "Gen|Lt|Col|Maj|Capt|Cpt|Cmdr|Adm|Sgt|Cpl|Pvt|Brig|Gens|St|Mt|Ft|Sta|"
    "Fig|Figs|Eq|Eqs|Ref|Refs|vs|v|cf|al|approx|ca|viz|e\\.g|i\\.e|Mssrs|Messrs"
)
# Abbreviations that mean "number follows" (rule 4, only when a digit comes next).
_NUMBER_FOLLOWS = (
    "No|Nos|no|Prop|Props|Vol|Vols|vol|Art|Arts|Sec|Secs|Ch|Chap|pp|p|Pt|Para|para|Ex|Ed|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# Abbreviations that regularly end a sentence too (rule 5b): companies, suffixes, places.
_CAN_END = (
    "U\\.S|U\\.K|U\\.N|E\\.U|D\\.C|U\\.S\\.A|N\\.Y|N\\.J|L\\.A|Inc|Corp|Co|Ltd|LLC|Bros|Jr|Sr|"
    "etc|a\\.m|p\\.m|Ala|Ariz|Ark|Calif|Colo|Conn|Del|Fla|Ga|Ill|Ind|Kan|Kans|Ky|La|Md|"
    "Mass|Mich|Minn|Miss|Mo|Mont|Neb|Nev|Okla|Ore|Pa|Tenn|Tex|Va|Vt|Wash|Wis|Wyo|W\\.Va|"
    "Ave|Blvd|Rd|Dept|Univ|Prop|Jan|Feb|Aug|Sept|Oct|Nov|Dec"
)
# Words that typically open a sentence in these explanations; after an abbreviation that can
# end a sentence, only these trigger a boundary, so "U.S. President" is not split.
_SENTENCE_OPENERS = (
    "However|Therefore|Thus|Hence|Furthermore|Moreover|Additionally|Also|In|On|At|As|By|For|"
    "From|The|This|That|These|Those|There|It|Its|He|She|They|We|I|His|Her|Their|A|An|But|And|"
    "Yet|So|Still|Meanwhile|Instead|Overall|Finally|Ultimately|Nonetheless|Nevertheless|"
    "Although|While|When|According|Despite|After|Before|Since|If|Many|Some|No|Not|Other|"
    "Others|Both|Several|Most|None|Similarly|Consequently|Rather|Indeed|Notably|Specifically|"
    "Regardless|Given|Based|Such|What|One|Two"
)

# Rule 4, matched against the text just before a proposed boundary: a title or reference
# abbreviation, a single capital initial, or (group "number") an abbreviation that only
# continues the sentence when a number follows.
_NO_END_BEFORE = re.compile(
    rf"(?:(?<![\w.])(?:{_ALWAYS_CONTINUE})|(?<![\w.'’])[A-Z])\.[{_CLOSERS}]*$"
    rf"|(?<![\w.])(?P<number>{_NUMBER_FOLLOWS})\.$"
)
# The start of the whitespace-separated chunk that ends at the searched position.
_CHUNK_START = re.compile(r"\S*$")

# Rule 2: what may follow a sentence's end punctuation and still belong to it.
# One character or marker per repetition: a nested quantifier such as [.!?]+ inside the outer +
# would backtrack exponentially on a long run of '!!!!' followed by a letter.
_TRAIL = re.compile(rf"(?:[ \t]*(?:{_MARKER}|[.!?]|[\"”’'](?![\w])|[)\]]))+(?=\s|$)[ \t\r\n]*")
# Rules 2/3: what a sentence may open with before its first word.
_LEAD = re.compile(rf"(?:[\"“‘'(\[*\-–—\s]|{_MARKER})*")

_AFTER_FINAL_ABBREVIATION = _after_any(_CAN_END, suffix=r"\.")

# Rule 5a-c: boundaries the sentencizer cannot propose; each match ends where a sentence
# starts. Each pattern starts with the end punctuation itself, so the regex engine can jump
# from candidate to candidate; joined into one alternation, they would be tried everywhere.
_EXTRA_BOUNDARIES = (
    # a. end punctuation with markers glued to it, then a capital or an opening quote
    (re.compile(rf"[.!?][{_CLOSERS}]*(?:[ \t]*{_MARKER})+\s+(?=[\"“‘(]?[A-Z0-9])"), ("[",)),
    # b1. a period-final token inside a closing quote before a capital ('Fla." Many')
    (re.compile(r"\.[\"”]\s+(?=[\"“]?[A-Z])"), ('."', ".”")),
    # b2. a sentence-final abbreviation before a typical opener ('D.C. However')
    (
        re.compile(rf"\.{_AFTER_FINAL_ABBREVIATION}[{_CLOSERS}]*\s+(?=(?:{_SENTENCE_OPENERS})\b)"),
        (),
    ),
    # c. ellipsis before a capitalised (not all-caps, not "I") word
    (re.compile(rf"(?:\.\.\.|…)[{_CLOSERS}]*\s+(?=[\"“]?[A-Z][a-z])"), ("...", "…")),
)
# Rule 5d: layout boundaries, kept even before a lowercase word.
_HARD_BOUNDARIES = re.compile(
    "|".join(
        [
            # a blank line (paragraph break)
            r"\n[ \t]*\n\s*",
            # a line opening with a list bullet or a reference-list entry ("[3] News article.")
            rf"\n[ \t]*(?=(?:[*•‣◦▪–-]|\d{{1,2}}[.)]|{_MARKER})[ \t]+\S)",
        ]
    )
)

# Rule 6: a "sentence" made only of markers, punctuation and whitespace.
_CONTENTLESS = re.compile(rf"(?:{_MARKER}|[^\w])*")
_LETTER = re.compile(r"[^\W\d_]")
_NUMBER_START = re.compile(r"[\"“(]?\d")


@Language.component(COMPONENT_NAME)
def citation_sentence_rules(doc: Doc) -> Doc:
    """Re-decide the sentencizer's boundaries with the rules in the module docstring.

    Sets ``token.is_sent_start`` (so ``doc.sents`` follows the rules) and keeps the sentence
    start offsets in ``doc.user_data`` for `split_sentences`.
    """
    # doc.text rebuilds the string token by token (~1 µs each, as much as tokenizing);
    # _make_doc leaves the original string on the doc instead.
    text = doc.user_data.get(_TEXT_KEY)
    if text is None:
        text = doc.text
    if len(doc) < 2:
        doc.user_data[_STARTS_KEY] = [0]
        return doc
    columns = doc.to_array([IDX, SENT_START])
    token_starts = columns[:, 0]
    proposed_tokens = (columns[:, 1] == 1).nonzero()[0].tolist()
    boundaries = _sentence_starts(text, token_starts[proposed_tokens].tolist()[1:])
    doc.user_data[_STARTS_KEY] = boundaries

    # Mirror the result on the tokens so doc.sents agrees. Every boundary sits on a
    # non-space character after whitespace or punctuation, i.e. on a token start, and
    # searchsorted maps it back to its token. Only the few changed tokens are touched.
    chosen = np.searchsorted(token_starts, boundaries, side="right") - 1
    chosen_tokens = set(chosen.tolist())
    for i in chosen_tokens.difference(proposed_tokens):
        doc[i].is_sent_start = True
    for i in set(proposed_tokens).difference(chosen_tokens):
        doc[i].is_sent_start = False
    return doc


def _sentence_starts(text: str, proposed: list[int]) -> list[int]:
    """The sentence start offsets the rules choose, given the character offsets of the
    sentencizer's proposals after the first token (a text of two tokens or more)."""
    starts: set[int] = set()
    for offset in proposed:
        start = _adjust_proposal(text, offset)
        if start is not None:
            starts.add(start)
    for pattern, needles in _EXTRA_BOUNDARIES:
        # A substring test is a fast scan; most texts have no ellipsis or quoted period.
        if needles and not any(needle in text for needle in needles):
            continue
        for match in pattern.finditer(text):
            start = match.end()
            if start < len(text) and not _starts_lowercase(text, start):
                starts.add(start)
    if "\n" in text:
        for match in _HARD_BOUNDARIES.finditer(text):
            if match.end() < len(text):
                starts.add(match.end())
    return _merge_contentless([0, *sorted(starts)], text)


def _adjust_proposal(text: str, offset: int) -> int | None:
    """Apply rules 1-4 to one boundary proposed by the sentencizer.

    Returns the character offset where the next sentence starts, or None to drop the boundary.
    """
    length = len(text)
    if offset < length and text[offset - 1] == " " and "A" <= text[offset] <= "Z":
        return _capitalised_after_space(text, offset)
    # Proposals may sit on a whitespace token ('post.\n[3] ...'): look at the next word.
    while offset < length and text[offset].isspace():
        offset += 1
    if offset >= length:
        return None
    offset = _start_of_word(text, offset)
    # Rule 2: markers, closing quotes and periods after the end punctuation stay behind,
    # unless the marker opens a line of its own (a reference-list entry).
    end = _previous_non_space(text, offset)
    if end and "\n" not in text[end:offset]:
        trail = _TRAIL.match(text, offset)
        if trail and trail.end() > offset:
            offset = trail.end()
            if offset >= length:
                return None
            end = _previous_non_space(text, offset)
    # Rule 3: a lowercase word continues the sentence.
    if _starts_lowercase(text, offset):
        return None
    # Rule 4: abbreviations and initials.
    abbreviation = _NO_END_BEFORE.search(text, max(0, end - 12), end)
    if abbreviation and (abbreviation.group("number") is None or _NUMBER_START.match(text, offset)):
        return None
    return offset


def _capitalised_after_space(text: str, offset: int) -> int | None:
    """The common case, a capitalised word after a space ('...[9]. Such').

    Rules 1-3 cannot move or drop it (no marker or opening punctuation to move over, nothing
    to keep behind, not lowercase); only rule 4 can.
    """
    end = _previous_non_space(text, offset)
    if end < 2 or (text[end - 1] == "." and not text[end - 2].isalpha()):
        return offset  # every abbreviation of rule 4 ends with a letter and a period
    abbreviation = _NO_END_BEFORE.search(text, max(0, end - 12), end)
    if abbreviation and (abbreviation.group("number") is None):
        return None
    return offset


def _start_of_word(text: str, offset: int) -> int:
    """Move a proposal back to the bracket of a spaced marker and over opening punctuation (rule 1)."""
    # A proposal inside a spaced marker ('. [ 3 ]' -> '3') moves to the marker's bracket.
    bracket = text.rfind("[", max(0, offset - 16), offset)
    if bracket >= 0:
        marker = _MARKER_RE.match(text, bracket)
        if marker and marker.end() > offset:
            offset = bracket
    # Rule 1: move back over opening punctuation glued to the proposed word: '(Barack', '"Co'.
    if offset and not text[offset - 1].isspace():
        chunk_start = _CHUNK_START.search(text, max(0, offset - 8), offset).start()
        if all(c in _OPENING for c in text[chunk_start:offset]):
            offset = chunk_start
    return offset


def _previous_non_space(text: str, offset: int) -> int:
    """Offset just after the last non-whitespace character before ``offset``."""
    while offset > 0 and text[offset - 1].isspace():
        offset -= 1
    return offset


def _starts_lowercase(text: str, offset: int) -> bool:
    """Whether the first letter or digit of the text at ``offset`` is a lowercase letter."""
    position = _LEAD.match(text, offset).end()
    return position < len(text) and text[position].islower()


def _merge_contentless(boundaries: list[int], text: str) -> list[int]:
    """Rule 6: fold sentences that hold nothing but markers into their neighbour."""
    kept: list[int] = []
    ends = [*boundaries[1:], len(text)]
    for start, end in zip(boundaries, ends, strict=True):
        if kept and _is_contentless(text, start, end):
            continue
        kept.append(start)
    if len(kept) > 1 and _is_contentless(text, kept[0], kept[1]):
        # Text that opens with markers only: they belong to the first real sentence.
        del kept[1]
    return kept


def _is_contentless(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] holds only markers, punctuation and whitespace."""
    # Most sentences open with a letter; the letter search settles the rest within a few
    # characters.
    if start < end and text[start].isalpha():
        return False
    return not _LETTER.search(text, start, end) and bool(_CONTENTLESS.fullmatch(text, start, end))


@lru_cache(maxsize=1)
def get_nlp() -> Language:
    """The shared pipeline: blank English tokenizer, sentencizer, citation rules."""
    nlp = spacy.blank("en")
    nlp.tokenizer.max_cache_size = _TOKENIZER_CACHE_SIZE
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(COMPONENT_NAME, after="sentencizer")
    return nlp


def _make_doc(text: str) -> Doc:
    """Tokenize, keeping the original string on the doc for `citation_sentence_rules`."""
    doc = get_nlp().make_doc(text)
    doc.user_data[_TEXT_KEY] = text
    return doc


def _sentences_of(doc: Doc) -> list[str]:
    """Sentence strings of a processed doc, stripped, without empty ones."""
    return _pieces(doc.user_data[_TEXT_KEY], doc.user_data.get(_STARTS_KEY, [0]))


def _pieces(text: str, starts: list[int]) -> list[str]:
    """The text cut at the sentence starts, stripped, without empty pieces."""
    ends = [*starts[1:], len(text)]
    pieces = (text[start:end].strip() for start, end in zip(starts, ends, strict=True))
    return [piece for piece in pieces if piece]


def split_sentences(text: str) -> list[str]:
    """Split raw explanation text into sentences.

    Citation markers stay attached to the sentence they close; sentences come back stripped.
    """
    return _sentences_of(get_nlp()(_make_doc(text)))


def split_sentences_many(
    texts: Iterable[str], batch_size: int = 256, *, n_process: int = 1
) -> list[list[str]]:
    """Same, batched through nlp.pipe for imports of 100k items.

    ``n_process > 1`` shares the work among that many worker processes (spawned, so safe in
    threaded servers; each builds its own pipeline in about a second, so it pays off from a
    few thousand texts). Where child processes cannot be started (a daemonic process such as
    a Celery prefork worker), it quietly runs in this process instead.
    """
    if n_process > 1:
        texts = list(texts)
        if len(texts) > _PARALLEL_CHUNK:
            try:
                return _split_in_processes(texts, batch_size, n_process)
            except (AssertionError, OSError, BrokenProcessPool):
                pass  # e.g. "daemonic processes are not allowed to have children"
    return list(iter_split_sentences(texts, batch_size=batch_size))


def iter_split_sentences(texts: Iterable[str], batch_size: int = 256) -> Iterator[list[str]]:
    """Lazy, single-process form of `split_sentences_many`, for streaming large imports.

    The same sentences as `split_sentences` without tokenizing whole texts: only the
    whitespace-free spans around the end characters go through spaCy's tokenizer (see
    `_proposals`), then the rules run on the text."""
    for text in texts:
        yield _pieces(text, _sentence_starts(text, _proposals(text)))


def _proposals(text: str) -> list[int]:
    """The offsets where spaCy's sentencizer starts a sentence after the first token: the
    first token that is not punctuation after a token that is one of its end characters.

    spaCy's tokenizer works span by span (the runs of text between whitespace); a lone space
    only joins two spans, any other run of whitespace is a token of its own. So the sentencizer's
    choice needs only the tokens of the span holding each end character and of the spans after
    it up to the next word, tokenized one span at a time (and remembered: `_span_tokens`).
    """
    if text.isascii():  # '.', '!' and '?' are the sentencizer's only ASCII end characters
        positions = sorted(_find_all(text, ".") + _find_all(text, "!") + _find_all(text, "?"))
    else:
        positions = [match.start() for match in _end_characters().finditer(text)]
    proposals: list[int] = []
    last = -1
    length = len(text)
    for position in positions:
        if position < last:  # its next word is the one already proposed
            continue
        start = position
        while start and not text[start - 1].isspace():
            start -= 1
        end = position + 1
        while end < length and not text[end].isspace():
            end += 1
        tokens = _span_tokens(text[start:end])
        # Only a token that is exactly the end character ('.', not '.' inside 'U.S.' or '3.5').
        offset, index = position - start, 0
        while index < len(tokens) and tokens[index][0] < offset:
            index += 1
        if index == len(tokens) or tokens[index][0] != offset or tokens[index][1] != 1:
            continue
        word = _next_word(text, start, end, tokens[index + 1 :])
        if word is not None and word != last:
            proposals.append(word)
            last = word
    return proposals


def _next_word(text: str, start: int, end: int, rest: tuple) -> int | None:
    """The offset of the first token that is not punctuation among ``rest`` (the tokens after
    the end character in its span ``text[start:end]``) and the text after the span."""
    length = len(text)
    while True:
        for offset, _, is_punctuation in rest:
            if not is_punctuation:
                return start + offset
        if end >= length:
            return None
        space = end
        while end < length and text[end].isspace():
            end += 1
        if end - space != 1 or text[space] != " ":
            # Whitespace other than one space is a token (after a first space, which joins).
            return space + 1 if text[space] == " " else space
        start = end
        while end < length and not text[end].isspace():
            end += 1
        rest = _span_tokens(text[start:end])


@lru_cache(maxsize=50_000)
def _span_tokens(span: str) -> tuple[tuple[int, int, int], ...]:
    """(offset, length, is punctuation) of each token spaCy's tokenizer makes of ``span``."""
    doc = get_nlp().tokenizer(span)
    return tuple(map(tuple, doc.to_array([IDX, LENGTH, IS_PUNCT]).tolist()))


def _find_all(text: str, character: str) -> list[int]:
    """Every offset of ``character`` in ``text`` (``str.find`` scans far faster than a regex)."""
    found, position = [], text.find(character)
    while position >= 0:
        found.append(position)
        position = text.find(character, position + 1)
    return found


@lru_cache(maxsize=1)
def _end_characters() -> re.Pattern[str]:
    """The sentencizer's end characters as one character class (for `_proposals`)."""
    nlp = get_nlp()
    characters = sorted(nlp.get_pipe("sentencizer").punct_chars)
    ascii_ = {c for c in characters if c.isascii()}
    if ascii_ != {".", "!", "?"} or not all(
        len(c) == 1 and nlp.vocab[c].is_punct for c in characters
    ):
        raise RuntimeError(
            "the sentencizer's end characters must be single punctuation marks, "
            "'.', '!' and '?' the only ASCII ones"
        )
    return re.compile("[" + "".join(re.escape(c) for c in characters) + "]")


# Texts per task handed to a worker process: large enough that pickling overhead is
# negligible, small enough that the workers finish close together.
_PARALLEL_CHUNK = 2_000


def _split_in_processes(texts: list[str], batch_size: int, n_process: int) -> list[list[str]]:
    """`split_sentences_many` over ``n_process`` spawned worker processes, order preserved."""
    chunks = [texts[i : i + _PARALLEL_CHUNK] for i in range(0, len(texts), _PARALLEL_CHUNK)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n_process, mp_context=context) as pool:
        parts = pool.map(_split_chunk, chunks, [batch_size] * len(chunks))
        return [sentences for part in parts for sentences in part]


def _split_chunk(texts: list[str], batch_size: int) -> list[list[str]]:
    """Worker-process entry point (module level so that it can be pickled)."""
    return list(iter_split_sentences(texts, batch_size=batch_size))
