"""Import formats of citation recovery: the Transparent-FCExp release files, and the decoding of
the evidence and explanation cells of a CSV row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from annotation.task_types import PayloadError


def parse_passage(passage: str) -> list[dict]:
    """Evidence passages written one per line as ``<id>: <text>`` (blank lines ignored)."""
    evidence = []
    for line in passage.split("\n"):
        if not line.strip():
            continue
        head, sep, text = line.partition(":")
        if not sep or not head.strip().isdecimal():
            raise ValueError(f"passage line {line[:40]!r} is not '<id>: <text>'")
        evidence.append({"id": int(head), "text": text.strip()})
    return evidence


def read_transparent_fcexp(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """Transparent-FCExp release files: ``{claim_id: {claim, label, passage, explanation, …}}``,
    one generator per file. The generator becomes the item group; ``masked_cit`` the masked
    evidence (so derived gold equals the file's ``ans_sens``)."""
    try:
        data = json.load(stream)
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise PayloadError("expected one JSON object keyed by claim id")
    for claim_id, record in data.items():
        location = f"claim {claim_id}"
        if not isinstance(record, dict):
            raise PayloadError("record is not an object", location=location)
        yield location, _fcexp_payload(claim_id, record, location)


def _fcexp_payload(claim_id: str, record: dict, location: str) -> dict:
    explanations = record.get("explanation")
    if not isinstance(explanations, dict) or len(explanations) != 1:
        raise PayloadError(
            "expected an object with exactly one generator", field="explanation", location=location
        )
    ((generator, explanation),) = explanations.items()
    try:
        evidence = parse_passage(record.get("passage") or "")
    except ValueError as exc:
        raise PayloadError(str(exc), field="passage", location=location) from None
    masked_by_generator = record.get("masked_cit") or {}
    if not isinstance(masked_by_generator, dict):
        raise PayloadError(
            "expected an object {generator: evidence id}", field="masked_cit", location=location
        )
    masked = masked_by_generator.get(generator)
    payload = {
        "id": claim_id,
        "claim": record.get("claim"),
        "label": record.get("label"),
        "evidence": evidence,
        "explanation": explanation,
        "generator": generator,
    }
    if masked is not None:
        payload["masked_evidence"] = masked
    if record.get("article_id"):
        payload["article_id"] = str(record["article_id"])
    return payload


def decode_csv_row(row: dict) -> dict:
    """CSV columns: id, claim, label, evidence, explanation[, masked_evidence, generator,
    evidence_source, kind, gold_sentences]. ``evidence`` is JSON (``[{"id":…, "text":…}]``) or
    lines ``<id>: <text>``; ``explanation`` is JSON (a list of sentences) or raw text."""
    payload: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
    evidence = payload.get("evidence")
    if isinstance(evidence, str):
        if evidence.lstrip().startswith("["):
            payload["evidence"] = json.loads(evidence)
        else:
            payload["evidence"] = parse_passage(evidence)
    explanation = payload.get("explanation")
    if isinstance(explanation, str) and explanation.lstrip().startswith("["):
        payload["explanation"] = json.loads(explanation)
    if "gold_sentences" in payload:
        payload["gold_sentences"] = json.loads(payload["gold_sentences"])
    return payload
