"""Building stance-study queries (UPHILL style): every claim asked at five presupposition levels.

Level 0 neutral, 1 mild presupposition, 2 unequivocal presupposition, 3 writing request,
4 writing demand. For each claim and level one template is drawn with a seeded generator keyed by
``(seed, claim id, level)``, so the choice does not depend on the order of the claims file, and
``[claim]`` is replaced by the claim. The templates live in ``data/uphill_query_templates.json``
beside this module (each marked with where it comes from); ``--templates`` takes another file of
the same shape.

Filling is plain substitution (UPHILL had an LLM rewrite each filled template for grammar): the
claim's final period is dropped and, when the claim is not at the start of the template, its first
letter is lower-cased if the first word looks like an ordinary word (``Taking`` → ``taking``;
``COVID``, ``McDonald's`` or ``Barack Obama`` keep their case). ``keep_case`` turns that off.

Pure Python (no Django): the management command ``build_stance_queries`` wraps it.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TEMPLATES_PATH = Path(__file__).resolve().parent / "data" / "uphill_query_templates.json"
LEVELS = (0, 1, 2, 3, 4)
VERACITIES = ("true", "false", "mixture")


class QueryBuildError(ValueError):
    """Bad input for the query builder; the message names the line or template and the field."""


@dataclass(frozen=True)
class Template:
    level: int
    level_name: str
    index: int  # 0-based position within its level
    text: str
    source: str


def load_templates(path: Path | str | None = None) -> dict[int, list[Template]]:
    """Templates by level from a JSON file ``{"placeholder", "levels": [{"level", "name",
    "templates": [{"text", "source"}]}]}``; every level 0–4 needs at least one template and
    every template the placeholder."""
    path = Path(path) if path else TEMPLATES_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QueryBuildError(f"No template file {path}.") from None
    except json.JSONDecodeError as exc:
        raise QueryBuildError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    placeholder = data.get("placeholder", "[claim]")
    by_level: dict[int, list[Template]] = {}
    for entry in data.get("levels", []):
        level = entry.get("level")
        if level not in LEVELS:
            raise QueryBuildError(f"{path}: level {level!r} is not one of 0–4.")
        templates = []
        for index, template in enumerate(entry.get("templates", [])):
            text = template.get("text", "") if isinstance(template, dict) else str(template)
            if placeholder not in text:
                raise QueryBuildError(
                    f"{path}: template {index + 1} of level {level} lacks the placeholder {placeholder}."
                )
            source = template.get("source", "") if isinstance(template, dict) else ""
            templates.append(
                Template(level, entry.get("name", f"level {level}"), index, text, source)
            )
        by_level[level] = templates
    missing = [level for level in LEVELS if not by_level.get(level)]
    if missing:
        raise QueryBuildError(f"{path}: no templates for level {missing[0]}.")
    return by_level


def _looks_ordinary(claim: str) -> bool:
    """Whether the claim's first word can be lower-cased: capitalised only because it opens the
    sentence (not an acronym, a mixed-case name or the start of a two-word proper name)."""
    words = claim.split()
    if not words or not words[0][:1].isupper():
        return False
    first = words[0]
    if any(c.isupper() for c in first[1:]):
        return False  # COVID, McDonald's, iPhone-like names
    return not (len(words) > 1 and words[1][:1].isupper())


def fill(
    template: str, claim: str, *, placeholder: str = "[claim]", keep_case: bool = False
) -> str:
    """The template with the claim in place of the placeholder (see the module docstring)."""
    text = claim.strip()
    while text.endswith("."):
        text = text[:-1].rstrip()
    if not keep_case and not template.startswith(placeholder) and _looks_ordinary(text):
        text = text[0].lower() + text[1:]
    return template.replace(placeholder, text)


def _normalise_veracity(value: str) -> str:
    value = (value or "").strip().lower()
    return "mixture" if value == "mixed" else value


def read_claims(stream: IO[str]) -> list[dict]:
    """Claims from CSV with columns ``claim`` and ``veracity`` (true / false / mixture) and an
    optional ``claim_id`` (default ``claim-<row number>``). Errors name the line."""
    reader = csv.DictReader(stream)
    columns = reader.fieldnames or []
    for required in ("claim", "veracity"):
        if required not in columns:
            raise QueryBuildError(
                f"The claims CSV needs a {required!r} column (found: {', '.join(columns) or 'none'})."
            )
    claims, seen = [], set()
    for number, row in enumerate(reader, start=1):
        location = f"line {reader.line_num}"
        claim = (row.get("claim") or "").strip()
        if not claim:
            raise QueryBuildError(f"{location}, field 'claim': the claim is empty.")
        veracity = _normalise_veracity(row.get("veracity") or "")
        if veracity not in VERACITIES:
            raise QueryBuildError(
                f"{location}, field 'veracity': {row.get('veracity')!r} is not one of true, false, mixture."
            )
        claim_id = (row.get("claim_id") or "").strip() or f"claim-{number}"
        if claim_id in seen:
            raise QueryBuildError(f"{location}, field 'claim_id': {claim_id!r} appears twice.")
        seen.add(claim_id)
        claims.append({"claim_id": claim_id, "claim": claim, "veracity": veracity})
    return claims


def build_queries(
    claims: Iterable[dict],
    *,
    seed: int = 13,
    levels: Sequence[int] = LEVELS,
    templates: dict[int, list[Template]] | None = None,
    keep_case: bool = False,
) -> list[dict]:
    """One query record per claim and level, with the template drawn for it."""
    templates = templates or load_templates()
    queries = []
    for claim in claims:
        for level in levels:
            rng = random.Random(f"{seed}:{claim['claim_id']}:{level}")
            template = rng.choice(templates[level])
            queries.append(
                {
                    "id": f"{claim['claim_id']}-L{level}",
                    "claim_id": claim["claim_id"],
                    "claim": claim["claim"],
                    "veracity": claim["veracity"],
                    "level": level,
                    "level_name": template.level_name,
                    "template": template.index,
                    "template_source": template.source,
                    "query": fill(template.text, claim["claim"], keep_case=keep_case),
                }
            )
    return queries


def read_responses(stream: IO[str], name: str) -> Iterator[tuple[str, dict]]:
    """Response records from JSONL (``.jsonl``) or CSV: ``id`` (the query id), ``response``,
    optional ``model`` and ``response_id``. Yields ``(location, record)``."""
    if name.endswith(".csv"):
        reader = csv.DictReader(stream)
        for row in reader:
            yield f"line {reader.line_num}", {k: v for k, v in row.items() if v not in (None, "")}
        return
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QueryBuildError(
                f"line {number}: not valid JSON ({exc.msg}, column {exc.colno})."
            ) from None
        if not isinstance(record, dict):
            raise QueryBuildError(f"line {number}: each line must be a JSON object.")
        yield f"line {number}", record


def attach_responses(queries: Sequence[dict], responses: Iterable[tuple[str, dict]]) -> list[dict]:
    """Stance item payloads: each response joined with its query by query id. The item id is the
    record's ``response_id``, else ``<query id>@<model>`` (or the query id without a model)."""
    by_id = {q["id"]: q for q in queries}
    payloads = []
    for location, record in responses:
        query_id = str(record.get("id") or "").strip()
        if query_id not in by_id:
            raise QueryBuildError(
                f"{location}, field 'id': no query {query_id!r} among the built queries "
                "(same claims file, seed and levels?)."
            )
        response = str(record.get("response") or "").strip()
        if not response:
            raise QueryBuildError(f"{location}, field 'response': the response is empty.")
        query = by_id[query_id]
        model = str(record.get("model") or "").strip()
        item_id = str(record.get("response_id") or "").strip() or (
            f"{query_id}@{model}" if model else query_id
        )
        payload = {
            "id": item_id,
            "claim_id": query["claim_id"],
            "claim": query["claim"],
            "veracity": query["veracity"],
            "level": query["level"],
            "query": query["query"],
            "response": response,
        }
        if model:
            payload["model"] = model
        payloads.append(payload)
    return payloads


def write_records(records: Sequence[dict], stream: IO[str], *, fmt: str) -> None:
    """Write records as JSONL or CSV (header from the first record)."""
    if fmt == "csv":
        if not records:
            return
        writer = csv.DictWriter(stream, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
        return
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False) + "\n")
