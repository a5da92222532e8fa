"""Import formats of argument-structure items: CSV decoding (the generic jsonl and csv readers do
the rest) and CheckWhy's own release files (:func:`read_checkwhy`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from annotation.task_types import PayloadError, json_cell

from .graph import StructureSyntaxError, parse_compact


def _parse_evidence_lines(text: str) -> list[dict]:
    evidence = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        head, sep, body = line.partition(":")
        if not sep or not head.strip():
            raise ValueError(f"evidence line {line[:40]!r} is not '<id>: <text>'")
        evidence.append({"id": head.strip(), "text": body.strip()})
    return evidence


def decode_csv_row(row: dict) -> dict:
    """CSV columns: id, claim, cause, effect, label, evidence[, structure, reference_structure,
    structure_source, kind]. ``evidence`` is JSON (``[{"id", "text", "leaf"?}]``) or lines
    ``<id>: <text>``; the structures are JSON steps or compact text."""
    payload: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
    evidence = payload.get("evidence")
    if isinstance(evidence, str):
        if evidence.lstrip().startswith("["):
            json_cell(payload, "evidence")
        else:
            try:
                payload["evidence"] = _parse_evidence_lines(evidence)
            except ValueError as exc:
                raise PayloadError(str(exc), field="evidence") from None
    for name in ("structure", "reference_structure"):
        value = payload.get(name)
        if isinstance(value, str) and value.lstrip().startswith("["):
            json_cell(payload, name)
    return payload


# --- CheckWhy's own files ------------------------------------------------------------------------

_CHECKWHY_TEXT_KEYS = ("evidence", "text", "content", "sentence")


def read_checkwhy(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """CheckWhy release files (Si et al. 2024: ``train.json``, ``dev.json``, ``*_nei.json``): a
    JSON array of records (JSON Lines, one record a line, is read too). A record has
    ``checkwhy-id``, ``claim``, ``cause``, ``effect``, ``label`` (SUPPORTS / REFUTES / NEI),
    ``evidences`` (``evidence_id``, the statement's text, ``useful``, ``leaf``) and
    ``argument_structure`` (the reference structure, Task 3's output). Becomes an item with the
    reference structure; evidence marked ``useful: false`` is left out unless the structure uses
    it (an edited structure must use every statement). A generated structure may come along as
    ``structure`` with ``structure_source`` (the model). Errors name the record's line and field.

    The release's structure notation is read as the compact form, also with ``→`` for ``->`` and
    ``&`` between premises (``E1 & E2 -> E3`` is ``(E1, E2) -> E3``)."""
    text = stream.read()
    for line, record in _json_records(text):
        location = f"line {line}"
        if not isinstance(record, dict):
            raise PayloadError("a CheckWhy record must be a JSON object", location=location)
        yield location, _checkwhy_payload(record, location)


def _json_records(text: str) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` of each element of a JSON array, or of each line of JSON Lines."""
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] != "[":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield number, _decode(line, number)
        return
    position = start + 1
    while True:
        position = _skip_space(text, position)
        if text[position : position + 1] == "]":
            return
        line = text.count("\n", 0, position) + 1
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise PayloadError(
                f"not valid JSON (column {exc.colno}): {exc.msg}", location=f"line {exc.lineno}"
            ) from None
        yield line, value
        position = _skip_space(text, position)
        separator = text[position : position + 1]
        if separator == "]":
            return
        if separator != ",":
            raise PayloadError(
                "expected ',' or ']' between records",
                location=f"line {text.count(chr(10), 0, position) + 1}",
            )
        position += 1


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _decode(line: str, number: int) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"not valid JSON (column {exc.colno}): {exc.msg}", location=f"line {number}"
        ) from None


def checkwhy_structure(value: Any) -> Any:
    """CheckWhy's structure notation in the compact form (``→`` as ``->``, ``a & b`` as
    ``(a, b)``); a list of steps is returned unchanged."""
    if not isinstance(value, str):
        return value
    chains = []
    for chain in value.replace("→", "->").replace("\n", ";").split(";"):
        parts = []
        for part in chain.split("->"):
            part = part.strip()
            if "&" in part and not part.startswith("("):
                part = "(" + ", ".join(p.strip() for p in part.split("&")) + ")"
            parts.append(part)
        if any(parts):
            chains.append(" -> ".join(parts))
    return "; ".join(chains)


def _checkwhy_payload(record: dict, location: str) -> dict:
    record_id = record.get("checkwhy-id", record.get("id"))
    if record_id in (None, ""):
        raise PayloadError("the record has no id", field="checkwhy-id", location=location)
    evidences = record.get("evidences")
    if not isinstance(evidences, list) or not evidences:
        raise PayloadError("expected a list of evidence", field="evidences", location=location)
    structure = checkwhy_structure(record.get("argument_structure"))
    used = _structure_ids(structure)
    evidence = []
    for number, entry in enumerate(evidences, start=1):
        field = f"evidences[{number}]"
        if not isinstance(entry, dict) or entry.get("evidence_id") in (None, ""):
            raise PayloadError(
                "expected an object with an evidence_id", field=field, location=location
            )
        text = next((entry[k] for k in _CHECKWHY_TEXT_KEYS if isinstance(entry.get(k), str)), None)
        if text is None:
            raise PayloadError(
                f"no statement text (one of {', '.join(_CHECKWHY_TEXT_KEYS)})",
                field=field,
                location=location,
            )
        evidence_id = str(entry["evidence_id"]).strip()
        if entry.get("useful") is False and evidence_id not in used:
            continue
        leaf = entry.get("leaf")
        evidence.append(
            {"id": evidence_id, "text": text, "leaf": leaf if isinstance(leaf, bool) else None}
        )
    payload: dict[str, Any] = {
        "id": str(record_id),
        "claim": record.get("claim"),
        "cause": record.get("cause") or "",
        "effect": record.get("effect") or "",
        "label": record.get("label"),
        "evidence": evidence,
    }
    if structure:
        payload["reference_structure"] = structure
    for name in ("structure", "structure_source", "kind"):
        if record.get(name) not in (None, ""):
            payload[name] = (
                checkwhy_structure(record[name]) if name == "structure" else record[name]
            )
    return payload


def _structure_ids(structure: Any) -> set[str]:
    """Ids a structure names (best effort: what is unreadable is reported by validation)."""
    if isinstance(structure, str):
        try:
            steps = parse_compact(structure)
        except StructureSyntaxError:
            return set()
    elif isinstance(structure, list):
        steps = [s for s in structure if isinstance(s, dict)]
    else:
        return set()
    return {
        str(n).strip()
        for s in steps
        for n in [*(s.get("premises") or []), s.get("conclusion")]
        if isinstance(n, str | int)
    }
