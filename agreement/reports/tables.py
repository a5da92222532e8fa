"""Report tables: plain, JSON-able rows with typed columns, rendered as HTML or CSV.

A table is ``{"title", "columns": [{"key", "label", "fmt"}], "rows": [dict, ...], "note"}``. Rows
are flat dicts of numbers and strings (``None`` for "not defined"; NaN never appears, because a
snapshot is stored as JSON and PostgreSQL's jsonb refuses NaN). Composite formats read several
row keys:

* ``mean_sd``: ``<key>_mean`` and ``<key>_sd`` (shown "0.62 ± 0.29");
* ``ci``: ``<key>``, ``<key>_lower`` and ``<key>_upper`` (shown "0.71 [0.65, 0.77]"); a row
  whose ``<key>_no_variation`` is true shows :data:`NO_VARIATION` instead (alpha is 0/0 when
  every value is the same).

CSV files carry every underlying key at full precision, one column each (``<key>_no_variation``
too, where the rows have it).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from core.spreadsheet import spreadsheet_safe
from core.wording import fixed

FORMATS = ("text", "int", "num", "num1", "pct", "mean_sd", "ci")
#: What an agreement coefficient without variation shows: its expected disagreement is 0.
NO_VARIATION = "undefined: every value is the same"


class Column(TypedDict):
    key: str
    label: str
    fmt: str


class Table(TypedDict):
    """A table of a report, JSON-able as snapshots store it."""

    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    note: str


def column(key: str, label: str, fmt: str = "num") -> Column:
    if fmt not in FORMATS:
        raise ValueError(f"unknown column format {fmt!r}")
    return {"key": key, "label": label, "fmt": fmt}


def table(title: str, columns: Sequence[Column], rows: Iterable[Mapping], note: str = "") -> Table:
    return {
        "title": title,
        "columns": list(columns),
        "rows": [{k: clean(v) for k, v in row.items()} for row in rows],
        "note": note,
    }


def clean(value: Any) -> Any:
    """A JSON-safe scalar: NaN and infinities become None, NumPy numbers plain Python numbers."""
    kind = type(value)
    if kind is float:  # the common cases first (tables of hundreds of thousands of cells)
        return value if math.isfinite(value) else None
    if kind is int or kind is str:
        return value
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return None
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu":
        return int(value)
    return number


def csv_keys(columns: Sequence[Mapping], rows: Sequence[Mapping] = ()) -> list[str]:
    """Row keys behind the columns, in CSV order (a ``ci`` column's ``<key>_no_variation`` flag
    where one of ``rows`` has it)."""
    keys: list[str] = []
    for col in columns:
        key, fmt = col["key"], col["fmt"]
        if fmt == "mean_sd":
            keys += [f"{key}_mean", f"{key}_sd"]
        elif fmt == "ci":
            keys += [key, f"{key}_lower", f"{key}_upper"]
            flag = f"{key}_no_variation"
            if any(flag in row for row in rows):
                keys.append(flag)
        else:
            keys.append(key)
    return keys


def to_csv(tbl: Mapping) -> str:
    """The table as CSV text: a header of row keys, then one line per row (empty for None).

    Numbers keep full precision; a text cell starting with ``= + - @`` or a tab gets a leading
    apostrophe so that spreadsheets show it instead of evaluating it.
    """
    keys = csv_keys(tbl["columns"], tbl["rows"])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(keys)
    for row in tbl["rows"]:
        writer.writerow([spreadsheet_safe(row.get(k)) for k in keys])
    return buffer.getvalue()


def _blank(value: Any) -> bool:
    """No value to print: missing, or a NaN/infinity from an undefined statistic."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def fmt_number(value: Any, digits: int = 3) -> str:
    return "—" if _blank(value) else fixed(value, digits)


def render_cell(row: Mapping, col: Mapping) -> str:
    """Plain text for one cell (the template escapes it); undefined numbers print as "—"."""
    key, fmt = col["key"], col["fmt"]
    if fmt == "mean_sd":
        mean, sd = row.get(f"{key}_mean"), row.get(f"{key}_sd")
        if _blank(mean):
            return "—"
        return fixed(mean, 2) if _blank(sd) else f"{fixed(mean, 2)} ± {fixed(sd, 2)}"
    if fmt == "ci":
        value, lower, upper = row.get(key), row.get(f"{key}_lower"), row.get(f"{key}_upper")
        if _blank(value):
            return "—"
        if row.get(f"{key}_no_variation"):
            return NO_VARIATION
        if _blank(lower) or _blank(upper):
            return fixed(value, 3)
        return f"{fixed(value, 3)} [{fixed(lower, 2)}, {fixed(upper, 2)}]"
    value = row.get(key)
    if _blank(value):
        return "—"
    if fmt == "int":
        return f"{int(value):,}"
    if fmt == "pct":
        return f"{100 * value:.1f} %"
    if fmt in ("num", "num1"):
        digits = 1 if fmt == "num1" else 3
        return fmt_number(value, digits) if isinstance(value, (int, float)) else str(value)
    return str(value)
