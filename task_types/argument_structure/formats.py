"""CSV decoding of argument-structure items (the generic jsonl and csv readers do the rest)."""

from __future__ import annotations

import json
from typing import Any


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
        payload["evidence"] = (
            json.loads(evidence)
            if evidence.lstrip().startswith("[")
            else _parse_evidence_lines(evidence)
        )
    for name in ("structure", "reference_structure"):
        value = payload.get(name)
        if isinstance(value, str) and value.lstrip().startswith("["):
            payload[name] = json.loads(value)
    return payload
