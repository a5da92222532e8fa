"""JSON that can be stored and read back everywhere (PostgreSQL jsonb, SQLite, exports): no NUL
character, no lone surrogate, only finite numbers, integers within JavaScript's safe range, and a
bounded depth. One check for every JSON a person sends: answers, drafts, imported records."""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64
MAX_SAFE_INTEGER = 2**53 - 1


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (text that is not valid Unicode)"
    return None


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """None when ``value`` is safe JSON; otherwise "<path>: <what is wrong>" for the first
    problem (the path is empty at the top, else like ``claims.0.text``)."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        where = f"{path}: " if path else ""
        if depth > max_depth:
            return f"{where}nested more than {max_depth} levels deep"
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"{where}keys must be text"
                problem = _text_problem(key)
                if problem:
                    return f"{where}a key {problem}"
                stack.append((child, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(node, list):
            stack.extend(
                (child, depth + 1, f"{path}.{i}" if path else str(i))
                for i, child in enumerate(node)
            )
        elif isinstance(node, str):
            problem = _text_problem(node)
            if problem:
                return f"{where}{problem}"
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int):
            if abs(node) > MAX_SAFE_INTEGER:
                return f"{where}integer out of range (at most {MAX_SAFE_INTEGER} in size)"
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{where}numbers must be finite (no NaN or infinity)"
        else:
            return f"{where}not a JSON value"
    return None
