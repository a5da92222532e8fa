"""Claim review's import formats: the ``fastfact`` reader (FaStfact's JSONL) and the decoding of
CSV rows whose ``claims`` and ``gold_labels`` cells hold JSON."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import IO, Any

from annotation.task_types.base import PayloadError, json_cell, jsonl_records

_BLOCK_START = re.compile(r"\n[ \t]*\n(?=Evidence \d+[ \t]*\n)")
_BLOCK = re.compile(
    r"Evidence (\d+)[ \t]*\nSource Title:[ \t]*([^\n]*)\nContent:[ \t]*(.*)\Z", re.S
)


def parse_verification_context(text: str) -> list[dict]:
    """FaStfact's ``verification_context``: blocks ``Evidence N`` / ``Source Title: …`` /
    ``Content: …`` separated by blank lines, numbered 1, 2, 3… in order. Raises ``ValueError``
    naming the first malformed block."""
    text = (text or "").strip()
    if not text or text.upper() == "N/A":
        return []
    passages = []
    for number, block in enumerate(_BLOCK_START.split(text), start=1):
        match = _BLOCK.match(block.strip())
        if match is None:
            raise ValueError(
                f"evidence block {number} is not 'Evidence N', 'Source Title: …', 'Content: …' "
                f"(it starts {block.strip()[:60]!r})"
            )
        if int(match[1]) != number:
            raise ValueError(
                f"evidence block {number} is numbered {match[1]}; expected Evidence {number}"
            )
        passages.append({"title": match[2].strip(), "content": match[3].strip()})
    return passages


def _sample_id(record: dict) -> str:
    """FaStfact samples carry no id: derive a stable one from model, question and response, so a
    re-import with ``--update`` finds the same items."""
    key = "\n".join(str(record.get(k) or "") for k in ("model", "question", "response"))
    return "ff-" + hashlib.sha256(key.encode()).hexdigest()[:12]


_SAMPLE_EXTRAS = ("abstained", "question_id", "prelabel_stats", "token_stats", "response_stats")


def _fastfact_claim(claim: Any, index: int, location: str) -> dict:
    if not isinstance(claim, dict):
        raise PayloadError("is not an object", field=f"claims_lst.{index}", location=location)
    claim_id = claim.get("claim_id")
    if not isinstance(claim_id, str | int) or str(claim_id) == "":
        raise PayloadError("claim_id is missing", field=f"claims_lst.{index}", location=location)
    where = f"{location}, claim {claim_id}"
    result = claim.get("verification_result") or {}
    if not isinstance(result, dict):
        raise PayloadError("is not an object", field="verification_result", location=where)
    try:
        evidence = parse_verification_context(result.get("verification_context") or "")
    except ValueError as exc:
        raise PayloadError(str(exc), field="verification_context", location=where) from None
    label = result.get("verification_label") or claim.get("pre-label") or ""
    return {
        "id": str(claim_id),
        "text": claim.get("claim"),
        "system_label": str(label).strip().lower(),
        "evidence": evidence,
        "reasoning": result.get("reasoning_for_verification_label") or "",
        "pre_label": claim.get("pre-label"),
        "prelabel_confidence": claim.get("prelabel_confidence"),
    }


def read_fastfact(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """FaStfact JSONL (the file its annotation tool loads): one sample per line with ``question``,
    ``response``, ``model``, ``prompt_source`` and ``claims_lst``; each claim has ``claim_id``,
    ``claim``, ``pre-label`` and optionally ``verification_result`` (``verification_context``,
    ``reasoning_for_verification_label``, ``verification_label``). The pipeline's label is the
    verification label when the claim was verified, otherwise its pre-label."""
    for location, record in jsonl_records(stream):
        claims = record.get("claims_lst")
        if not isinstance(claims, list):
            raise PayloadError("must be a list of claims", field="claims_lst", location=location)
        payload = {
            "id": str(record.get("id") or _sample_id(record)),
            "question": record.get("question"),
            "response": record.get("response"),
            "model": record.get("model") or "",
            "prompt_source": record.get("prompt_source") or "",
            "claims": [_fastfact_claim(c, i, location) for i, c in enumerate(claims)],
        }
        payload.update({k: record[k] for k in _SAMPLE_EXTRAS if k in record})
        yield location, payload


def decode_csv_row(row: dict) -> dict:
    """CSV columns: id, question, response, model, prompt_source, claims (JSON list of
    ``{id, text, system_label, evidence: [{title, content}], reasoning}``)[, kind, gold_labels
    (JSON object)]."""
    payload: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
    for key in ("claims", "gold_labels"):
        if isinstance(payload.get(key), str):
            json_cell(payload, key)
    return payload
