"""Small helpers for sentences built from data: "an annotator", "1 item", "2 items"."""

from __future__ import annotations

# Words starting with a vowel letter but a consonant sound ("a user", "a unique"), and the
# reverse ("an hour"): the few a page can meet.
_CONSONANT_SOUND = ("uni", "use", "usu", "one", "eu")
_VOWEL_SOUND = ("hour", "honest", "llm", "nli", "mturk")


def indefinite(word: str, *, capital: bool = False) -> str:
    """``word`` with "a" or "an" before it: "an annotator", "a researcher", "an embedding",
    "an LLM" (said "el-el-em"); "An ..." with ``capital``."""
    lower = str(word).lower()
    vowel = lower[:1] in "aeiou" and not lower.startswith(_CONSONANT_SOUND)
    article = "an" if vowel or lower.startswith(_VOWEL_SOUND) else "a"
    return f"{article.capitalize() if capital else article} {word}"


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """ "1 item", "2 items", "0 items" (``plural``: when not ``singular`` + "s")."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def fixed(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, never "-0.000": a value that rounds to zero has no
    sign (a tiny negative α is no evidence of disagreement beyond chance)."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text
