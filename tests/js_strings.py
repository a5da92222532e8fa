"""Find English in annotator JavaScript that is not marked for translation (a heuristic scan).

A string literal is *marked* when it is an argument of ``gettext``, ``ngettext``, ``pgettext``
or ``npgettext`` (Django's JavaScript catalogue). An unmarked literal is reported when it reads
like words for people: a capitalised word (``"Agree"``, ``"Not sure"``) that is not a key name,
or three words or more ending like a sentence. Selectors, class names, keys and API fields do
not look like that. The browser test in a pseudo-locale (tests/e2e/test_i18n_browser.py) checks
what a page renders; this scan also reaches messages only an error path shows.
"""

from __future__ import annotations

import re
from pathlib import Path

LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`(?:[^`\\]|\\.)*`', re.S)
# A comment or a string literal, whichever starts first (a "//" inside a string is no comment).
TOKEN = re.compile(r"/\*.*?\*/|//[^\n]*|" + LITERAL.pattern, re.S)
CALL = re.compile(r"\b(?:n?p?gettext|npgettext)\(")
KEYS = {
    "Enter", "Escape", "Tab", "Backspace", "Delete", "Home", "End", "PageUp", "PageDown",
    "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Space", "Shift", "Control", "Alt",
    "Meta", "Esc", "Spacebar",
}  # fmt: skip
CAPITALISED = re.compile(r"^[A-Z][a-z]{2,}\b")
SENTENCE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}\s+[A-Za-z]{2,}.*[.?!:…]$", re.S)


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group())


def _call_spans(code: str) -> list[tuple[int, int]]:
    """Where each gettext-family call's arguments are (strings skipped when counting parens)."""
    spans = []
    for match in CALL.finditer(code):
        depth, i = 1, match.end()
        while i < len(code) and depth:
            literal = LITERAL.match(code, i)
            if literal:
                i = literal.end()
                continue
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        spans.append((match.end(), i))
    return spans


def unmarked_strings(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    # Comments blanked out, keeping every offset.
    code = TOKEN.sub(lambda m: _blank(m) if m.group().startswith("/") else m.group(), text)
    spans = _call_spans(code)
    found = []
    for literal in LITERAL.finditer(code):
        if any(start <= literal.start() < end for start, end in spans):
            continue
        content = re.sub(r"\$\{[^}]*\}", " ", literal.group()[1:-1]).strip()
        if not content or re.search(r"[\[\]=#{}<>/\\]|^[.#]|--|^[A-Z][a-z]+-[A-Z]", content):
            continue
        words = CAPITALISED.match(content)
        if (words and content.split()[0].strip(",.:") not in KEYS) or SENTENCE.search(content):
            line = code.count("\n", 0, literal.start()) + 1
            found.append(f"{path.name}:{line}: {literal.group()[:80]}")
    return found
