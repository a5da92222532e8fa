"""An LLM judge's confidence in its answer, from the reply's token log-probabilities.

The reply is the JSON the prompt asked for (for example ``{"label": "supports"}`` or
``{"sentences": [2, 3]}``). The tokens that spell its *values* (strings without their quotes, numbers, true, false, null;
not the keys nor the punctuation, which the schema fixes) decide the answer: a value's
probability is the product of its tokens' probabilities, and the answer's probability
(``label_probability``) the product over its values: the probability the model gave to the
answer it chose. Active sampling takes ``1 − label_probability`` as the judge's uncertainty about
the item (:func:`uncertainty`).

Generic over task types: only the reply's JSON is read, never the parsed answer. A reply that is
not JSON, or whose tokens do not spell it (bytes split inside a character), gives nothing: the
judge then counts through disagreement only, as before log-probabilities.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_VALUES = 50  # value probabilities stored per result
# A JSON token: a string, a number, a literal, or punctuation.
_JSON_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}\[\]:,]|\s+'
)


def value_spans(text: str) -> list[tuple[int, int]] | None:
    """The character spans of the JSON values in ``text`` (strings without their quotes); None
    where ``text`` is not a JSON text this scanner reads."""
    spans: list[tuple[int, int]] = []
    position = 0
    tokens = []
    while position < len(text):
        match = _JSON_TOKEN.match(text, position)
        if match is None:
            return None
        if not match.group().isspace():
            tokens.append((match.start(), match.end(), match.group()))
        position = match.end()
    for index, (start, end, token) in enumerate(tokens):
        if token in "{}[]:,":
            continue
        following = tokens[index + 1][2] if index + 1 < len(tokens) else ""
        if following == ":":  # a key
            continue
        spans.append((start + 1, end - 1) if token.startswith('"') else (start, end))
    return spans or None


def answer_probability(
    *, text: str, tokens: Sequence[tuple[str, float]] | None
) -> dict[str, Any] | None:
    """``{"label_probability": p, "values": [p per value]}`` for a reply and its tokens; None
    where the server returned no log-probabilities or they cannot be matched to the reply."""
    if not tokens or "".join(token for token, _ in tokens) != text:
        return None
    spans = value_spans(text.strip())
    if spans is None:
        return None
    offset = len(text) - len(text.lstrip())
    logprobs = [0.0] * len(spans)
    start = 0
    for token, logprob in tokens:
        end = start + len(token)
        for index, (low, high) in enumerate(spans):
            low, high = low + offset, high + offset
            if start < high and low < end or (low == high and start <= low < end):
                logprobs[index] += max(logprob, -1000.0)
        start = end
    values = [math.exp(value) for value in logprobs]
    return {
        "label_probability": round(math.exp(sum(logprobs)), 6),
        "values": [round(value, 6) for value in values[:MAX_VALUES]],
    }


def uncertainty(detail: Mapping[str, Any]) -> float | None:
    """How unsure the judge was of its answer (active sampling): one minus the answer's
    probability; None where the result holds none (the server returned no log-probabilities)."""
    record = detail.get("logprobs")
    if not isinstance(record, Mapping):
        return None
    probability = record.get("label_probability")
    if not isinstance(probability, int | float) or not 0 <= probability <= 1:
        return None
    return 1.0 - float(probability)
