"""Pseudo-locales for the translation tests, generated at test time from the project's catalogues.

Every message marked for translation (the msgids of the German catalogues, which must list them
all: tests/test_i18n.py checks the German ones are complete; and Django's own, which ship German) gets a pseudo-translation: its
letters accented (``Submit`` → ``⟦Šúƀɱíŧ⟧``), placeholders, HTML tags and entities kept. A page
rendered in a pseudo-locale then shows no plain ASCII word of its own: every one left is an
English string nobody marked (or content the researchers wrote, which the tests set aside).
``en-xa`` reads left to right; ``ar-xb`` is right to left (Arabic's base language: Django's
``get_language_bidi``), for the layout tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.catalogs import Entry, compile_mo, parse_po, po_files

REPO = Path(__file__).resolve().parents[1]
PSEUDO_LTR = "en-xa"
PSEUDO_RTL = "ar-xb"
PSEUDO_LANGUAGES = [(PSEUDO_LTR, "Pseudo"), (PSEUDO_RTL, "Pseudo RTL")]
PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
ACCENTED = "àƀçđéƒĝĥíĵķĺɱñóþʠŕšŧúṽŵẋýžÀƁÇĐÉƑĜĤÍĴĶĹṀÑÓÞɊŔŠŦÚṼŴẊÝŽ"
assert len(PLAIN) == len(ACCENTED)
ACCENT = str.maketrans(PLAIN, ACCENTED)
# Kept as they are: %(name)s / %s / %d placeholders, HTML tags and entities.
KEEP = re.compile(r"%\(\w+\)[sdf]|%[sdf]|<[^>]*>|&#?\w+;")
HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"
# An ASCII word of two letters or more: what an unmarked English string leaves on a page.
ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")


def pseudo(text: str) -> str:
    out, last = [], 0
    for match in KEEP.finditer(text):
        out.append(text[last : match.start()].translate(ACCENT))
        out.append(match.group())
        last = match.end()
    out.append(text[last:].translate(ACCENT))
    return "⟦" + "".join(out) + "⟧"


def _django_catalogues(domain: str) -> list[Path]:
    """Django's own English catalogues that annotator pages use (form labels, password rules,
    validation messages): they ship German too, so they count as marked."""
    import django

    root = Path(django.__file__).parent
    folders = [root / "conf", root / "contrib" / "auth"]
    return [f / "locale" / "en" / "LC_MESSAGES" / f"{domain}.po" for f in folders]


def marked_messages(domain: str) -> list[Entry]:
    """Every message of ``domain`` in the German catalogues (shared and per task type), and
    Django's own."""
    seen: dict[tuple, Entry] = {}
    ours = [po for po in po_files(REPO) if po.parent.parent.name == "de" and po.stem == domain]
    for po in [*ours, *_django_catalogues(domain)]:
        if not po.exists():
            continue
        for entry in parse_po(po.read_text(encoding="utf-8"), path=str(po))[1:]:
            seen.setdefault((entry.msgctxt, entry.msgid, entry.msgid_plural), entry)
    return list(seen.values())


def write_pseudo_catalogues(target: Path) -> Path:
    """Compiled pseudo catalogues for both pseudo-locales under ``target`` (a LOCALE_PATHS
    entry); returns ``target``."""
    for domain in ("django", "djangojs"):
        entries = [Entry(msgid="", msgstr={0: HEADER})]
        for message in marked_messages(domain):
            strings = {0: pseudo(message.msgid)}
            if message.msgid_plural is not None:
                strings[1] = pseudo(message.msgid_plural)
            entries.append(
                Entry(
                    msgid=message.msgid,
                    msgid_plural=message.msgid_plural,
                    msgctxt=message.msgctxt,
                    msgstr=strings,
                )
            )
        data = compile_mo(entries)
        for language, _ in PSEUDO_LANGUAGES:
            folder = target / f"{language[:2]}_{language[3:].upper()}" / "LC_MESSAGES"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{domain}.mo").write_bytes(data)
    return target


def researcher_words(*values) -> set[str]:
    """The ASCII words of content researchers or data wrote (any nested JSON-like value)."""
    words: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(key)
                walk(inner)
        elif isinstance(value, list | tuple | set):
            for inner in value:
                walk(inner)
        elif value is not None:
            words.update(ENGLISH_WORD.findall(str(value)))

    walk(values)
    return words


# Allowed on every page: the product's name, and an item's reference (#XBSVYF) or a completion
# code's shape (XXXXX-XXXXX).
ALWAYS = {"Concord"}
CODES = re.compile(r"#[A-Z0-9]{4,}|\b[A-Z0-9X]{5}-[A-Z0-9X]{5}\b")


def unmarked_english(texts, *, allowed: set[str]) -> list[str]:
    """The texts (each ``(where, text)``) holding an ASCII word that is neither allowed nor
    researcher content: English nobody marked for translation."""
    found = []
    for where, text in texts:
        words = set(ENGLISH_WORD.findall(CODES.sub(" ", text))) - allowed - ALWAYS
        if words:
            found.append(f"{where}: {text.strip()[:120]!r} ({', '.join(sorted(words))})")
    return found
