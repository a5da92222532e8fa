"""Ranking's import formats: CSV rows with the outputs in one ``outputs`` cell or one column per
system, and the ``reprohum`` reader (the ReproHum sheet plus a mapping file from column to
system)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from typing import IO, Any

from annotation.task_types.base import PayloadError, json_cell
from core.json_safety import UnsafeJSON
from core.json_safety import loads as safe_json_loads

_SYSTEM_COLUMN = re.compile(r"^system:(.+)$")
_JUSTIFICATION_COLUMN = re.compile(r"^justification\s*_?\d+$", re.I)


def decode_csv_row(row: dict) -> dict:
    """CSV columns: id, claim, label, and the outputs either as one ``outputs`` cell (JSON list of
    ``{system, text}``) or as one column per system named ``system:<name>``."""
    payload: dict[str, Any] = {}
    outputs = []
    for column, value in row.items():
        match = _SYSTEM_COLUMN.match(column or "")
        if match:
            if value not in (None, ""):
                outputs.append({"system": match[1].strip(), "text": value})
        elif value not in (None, ""):
            payload[column] = value
    if isinstance(payload.get("outputs"), str):
        json_cell(payload, "outputs")
    elif outputs:
        payload["outputs"] = outputs
    return payload


def parse_mapping(text: str) -> dict[str | None, dict[str, str]]:
    """A ReproHum mapping file: which system wrote the text in each justification column. CSV with
    the header ``column,system`` (one mapping for every row) or ``id,column,system`` (per row, as
    when positions were shuffled per row; rows without an id use the common mapping), or JSON
    ``{column: system}`` / ``{row id: {column: system}}``. Returns ``{row id or None: {column:
    system}}``; raises ``PayloadError`` naming the mapping line."""
    text = (text or "").strip()
    if not text:
        raise PayloadError("the mapping file is empty", location="mapping file")
    if text.startswith("{"):
        return _json_mapping(text)
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    if not {"column", "system"} <= set(header):
        raise PayloadError(
            "the mapping file needs the columns column and system (and optionally id)",
            location="mapping file line 1",
        )
    mapping: dict[str | None, dict[str, str]] = {}
    for row in reader:
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        location = f"mapping file line {reader.line_num}"
        if not row.get("column") or not row.get("system"):
            raise PayloadError("column and system must not be empty", location=location)
        columns = mapping.setdefault(row.get("id") or None, {})
        if row["column"] in columns:
            raise PayloadError(f"column {row['column']!r} is mapped twice", location=location)
        columns[row["column"]] = row["system"]
    return mapping


def _json_mapping(text: str) -> dict[str | None, dict[str, str]]:
    try:
        data = safe_json_loads(text)
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"not valid JSON ({exc.msg}, line {exc.lineno}, column {exc.colno})",
            location="mapping file",
        ) from None
    except UnsafeJSON as exc:
        raise PayloadError(exc.message, location="mapping file", field=exc.field) from None
    if not isinstance(data, dict):
        raise PayloadError("expected a JSON object", location="mapping file")
    if all(isinstance(v, str) for v in data.values()):
        return {None: data}
    if all(
        isinstance(v, dict) and all(isinstance(s, str) for s in v.values()) for v in data.values()
    ):
        return {str(row_id): columns for row_id, columns in data.items()}
    raise PayloadError(
        "expected {column: system} or {row id: {column: system}}", location="mapping file"
    )


def read_reprohum(stream: IO[str], mapping: str | None = None) -> Iterator[tuple[str, dict]]:
    """The ReproHum sheet: CSV with id, claim, label and one column per justification
    ("justification 1" … "justification k"), whose systems the mapping file names (see
    ``parse_mapping``; ``import_items --mapping FILE``). Other columns are ignored."""
    if mapping is None:
        raise PayloadError(
            "The reprohum format needs a mapping file from column to system (--mapping)."
        )
    columns_by_row = parse_mapping(mapping)
    reader = csv.DictReader(stream)
    header = reader.fieldnames or []
    missing = [c for c in ("id", "claim", "label") if c not in header]
    if missing:
        raise PayloadError(f"the sheet has no {missing[0]!r} column", location="line 1")
    mapped = {column for columns in columns_by_row.values() for column in columns}
    absent = sorted(mapped - set(header))
    if absent:
        raise PayloadError(
            f"the mapping names column {absent[0]!r}, which the sheet does not have",
            location="line 1",
        )
    justifications = [h for h in header if _JUSTIFICATION_COLUMN.match(h.strip())]
    for row in reader:
        location = f"line {reader.line_num}"
        if None in row:
            raise PayloadError("more cells than header columns", location=location)
        columns = columns_by_row.get(row["id"]) or columns_by_row.get(None)
        if columns is None:
            raise PayloadError(
                f"the mapping file has no entry for row {row['id']!r}", location=location
            )
        unmapped = [c for c in justifications if c not in columns]
        if unmapped:
            raise PayloadError(
                f"column {unmapped[0]!r} has no system in the mapping file", location=location
            )
        outputs = [{"system": columns[c], "text": row[c]} for c in header if c in columns]
        record = {"id": row["id"], "claim": row["claim"], "label": row["label"], "outputs": outputs}
        yield location, record
