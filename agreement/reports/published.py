"""Published figures typed in by a researcher (e.g. the original paper's MAR per system), read
into the shape of a report's comparison part so :func:`compare_reports` sets a project against
them exactly as against another project: entry by entry with CV*, and Spearman's rho.

One entry per line, ``entry: value`` (also ``entry = value``, ``entry<TAB>value`` or
``entry,value``); blank lines are skipped. Entries are matched to the report's own entries
case-insensitively; an unknown or repeated entry, or a value that is not a finite number, is
refused naming the line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from core.errors import Refusal

_SEPARATOR = re.compile(r"\s*(?::|=|\t|,)\s*")
MAX_LINES = 500


def parse_published(*, text: str, known: Mapping[str, Any]) -> dict[str, float]:
    by_folded = {str(entry).casefold(): entry for entry in known}
    values: dict[str, float] = {}
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise Refusal(f"At most {MAX_LINES} lines.", field="values")
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        parts = [p for p in _SEPARATOR.split(line, maxsplit=1)]
        if len(parts) != 2 or not parts[0]:
            raise Refusal(
                f"Line {number}: write the entry and its value as 'entry: value' ({line[:60]!r}).",
                field="values",
            )
        name, raw = parts[0].strip(), parts[1].strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise Refusal(f"Line {number}: {raw[:40]!r} is not a number.", field="values")
        entry = by_folded.get(name.casefold())
        if entry is None:
            shown = ", ".join(str(e) for e in known) or "none"
            raise Refusal(
                f"Line {number}: no entry {name[:60]!r} in this project's figures "
                f"(there are: {shown}).",
                field="values",
            )
        if entry in values:
            raise Refusal(f"Line {number}: {name[:60]!r} is given twice.", field="values")
        values[entry] = value
    if not values:
        raise Refusal("Type at least one 'entry: value' line.", field="values")
    return values


def published_report(*, vector: str, values: Mapping[str, float]) -> dict:
    """A stand-in report holding only one result vector, for :func:`compare_reports`."""
    return {"comparison": {"scalars": {}, "vectors": {vector: dict(values)}}}
