"""Import formats of citation recovery: the Transparent-FCExp release files, and the decoding of
the evidence and explanation cells of a CSV row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from annotation.task_types import PayloadError, json_cell
from core.json_safety import UnsafeJSON
from core.json_safety import loads as safe_json_loads


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
    evidence, and the file's ``ans_sens`` the gold the derived gold must equal (a record where
    they differ is refused). Without ``masked_cit`` the seeded generator chooses the evidence
    (the import's result says so)."""
    try:
        data = safe_json_loads(stream.read())
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    except UnsafeJSON as exc:  # the path starts with the claim id
        location = f"claim {exc.path[0]}" if exc.path else ""
        raise PayloadError(exc.message, location=location, field=".".join(exc.path[1:])) from None
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
        stated_gold = record.get("ans_sens")
        # masked_cit -1 means "no masked citation" (its ans_sens is -1 too): nothing to check.
        if stated_gold is not None and not (isinstance(masked, int) and masked < 0):
            if not isinstance(stated_gold, dict):
                raise PayloadError(
                    "expected an object {generator: [sentence numbers]}",
                    field="ans_sens",
                    location=location,
                )
            if generator in stated_gold:
                payload["expected_gold_sentences"] = stated_gold[generator]
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
            json_cell(payload, "evidence")
        else:
            try:
                payload["evidence"] = parse_passage(evidence)
            except ValueError as exc:
                raise PayloadError(str(exc), field="evidence") from None
    explanation = payload.get("explanation")
    if isinstance(explanation, str) and explanation.lstrip().startswith("["):
        json_cell(payload, "explanation")
    for column in ("gold_sentences", "expected_gold_sentences"):
        if column in payload:
            json_cell(payload, column)
    return payload
