"""Text as PostgreSQL can store it: a reply from a random or broken model may hold NUL
characters (refused by PostgreSQL text and jsonb: "A string literal cannot contain NUL") or lone
surrogates (not encodable as UTF-8). Replies, answers and messages are cleaned before they are
written, and what was removed is counted so that it can be recorded."""

from __future__ import annotations

from typing import Any


def db_safe_text(*, text: str) -> tuple[str, dict[str, int]]:
    """``text`` without NUL characters (PostgreSQL text cannot hold them: "A string literal
    cannot contain NUL") and with lone surrogates (not encodable as UTF-8) replaced by U+FFFD;
    and how many of each were found (empty when none)."""
    found: dict[str, int] = {}
    nul = text.count("\x00")
    if nul:
        found["nul"] = nul
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        cleaned = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
        found["lone_surrogates"] = sum(1 for a, b in zip(text, cleaned, strict=True) if a != b)
        text = cleaned
    return text, found


def db_safe_value(*, value: Any) -> tuple[Any, dict[str, int]]:
    """A JSON value with every string (keys too) made safe as by :func:`db_safe_text`."""
    found: dict[str, int] = {}

    def clean(v: Any) -> Any:
        if isinstance(v, str):
            text, counts = db_safe_text(text=v)
            for key, n in counts.items():
                found[key] = found.get(key, 0) + n
            return text
        if isinstance(v, dict):
            return {clean(k): clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return clean(value), found
