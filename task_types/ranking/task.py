"""Ranking with ties (Atanasova et al. 2020; ReproHum #0087-01): annotators rank the k outputs of
named systems for one claim on each of the project's criteria (e.g. Coverage, Non-redundancy,
Non-contradiction, Overall).

Tie convention: standard competition ranking ("1224"). Ranks run from 1 (best) to k; tied outputs
share the best rank of their group and the next output's rank counts every output before it, so
three outputs with a tie for first are ranked 1, 1, 3 (never 1, 1, 2). Answers are validated,
stored and exported in this convention; exports add the dense rank ("1223") beside it.

Blinding: annotators never see system names. Each output gets an opaque key at import (random per
item, so keys reveal nothing across items); the page shows the outputs as "Output A, B, C…" in an
order shuffled per (item, annotator) with a seeded generator, so the same annotator always sees the
same order. The answer stores that order and the ranks by key; exports re-attach the systems::

    {"order": ["k3f…", "a91…", "0c2…"],               # keys as shown, left to right
     "ranks": {"Coverage": {"k3f…": 1, "a91…": 1, "0c2…": 3}, …}}
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import random
import re
import secrets
from collections.abc import Iterator
from typing import IO, Any

from django.conf import settings
from rest_framework import serializers

from .base import PayloadError, PreparedItem, TaskType
from .registry import register

MIN_OUTPUTS, MAX_OUTPUTS = 2, 9  # ranks are typed with one digit key

# Definitions after Atanasova et al. (2020), "Generating Fact Checking Explanations", §5.
DEFAULT_CRITERIA = [
    {
        "name": "Coverage",
        "definition": "The explanation contains the important, salient information and misses no "
        "point that matters for the fact check.",
        "examples": [],
    },
    {
        "name": "Non-redundancy",
        "definition": "The explanation contains no information that is redundant, repeated or "
        "irrelevant to the claim and its fact check.",
        "examples": [],
    },
    {
        "name": "Non-contradiction",
        "definition": "The explanation contains no information that contradicts the claim or the "
        "fact check.",
        "examples": [],
    },
    {
        "name": "Overall",
        "definition": "The overall quality of the explanation as a justification of the verdict.",
        "examples": [],
    },
]


def output_letter(index: int) -> str:
    return chr(ord("A") + index)


def is_standard_competition(ranks: list[int]) -> bool:
    """Whether every rank is 1 + the number of outputs ranked strictly better (so 1, 1, 3)."""
    return all(rank == 1 + sum(other < rank for other in ranks) for rank in ranks)


def dense_ranks(ranks: list[int]) -> list[int]:
    """Dense ranks ("1223") of standard competition ranks, for exports."""
    position = {value: i + 1 for i, value in enumerate(sorted(set(ranks)))}
    return [position[rank] for rank in ranks]


# --- config --------------------------------------------------------------------------------------


class CriterionSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)
    definition = serializers.CharField()
    examples = serializers.ListField(child=serializers.CharField(), default=list)


class RankingConfigSerializer(serializers.Serializer):
    criteria = CriterionSerializer(many=True, default=DEFAULT_CRITERIA)
    systems = serializers.ListField(
        child=serializers.CharField(max_length=100),
        default=list,
        help_text="The system names items may use; when given, any other name is refused at import.",
    )
    seed = serializers.IntegerField(default=13, help_text="Seeds the per-annotator display order.")

    def validate_criteria(self, value: list[dict]) -> list[dict]:
        if not value:
            raise serializers.ValidationError(
                "A ranking project needs at least one criterion with a name and a definition."
            )
        names = [c["name"] for c in value]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate:
            raise serializers.ValidationError(f"Criterion {duplicate!r} appears twice.")
        return value


# --- payload -------------------------------------------------------------------------------------


class OutputSerializer(serializers.Serializer):
    system = serializers.CharField(max_length=100)
    text = serializers.CharField(trim_whitespace=False)


class RankingPayloadSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    claim = serializers.CharField()
    label = serializers.CharField(max_length=50, help_text="Veracity label of the claim.")
    outputs = OutputSerializer(many=True)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )

    def validate_outputs(self, value: list[dict]) -> list[dict]:
        if not MIN_OUTPUTS <= len(value) <= MAX_OUTPUTS:
            raise serializers.ValidationError(
                f"A ranking needs {MIN_OUTPUTS} to {MAX_OUTPUTS} outputs (k = {len(value)})."
            )
        systems = [o["system"] for o in value]
        duplicate = next((s for s in systems if systems.count(s) > 1), None)
        if duplicate:
            raise serializers.ValidationError(f"System {duplicate!r} appears twice.")
        return value


# --- answer --------------------------------------------------------------------------------------


def _criteria_of(item: Any) -> list[str]:
    config = RANKING.validate_config(item.project.config)
    return [c["name"] for c in config["criteria"]]


class RankingAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}`` (criteria come from the
    item's project). Errors about ranks are keyed by criterion and name outputs by their letter."""

    order = serializers.ListField(child=serializers.CharField(max_length=40))
    ranks = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))

    def validate(self, attrs: dict) -> dict:
        item = self.context["item"]
        keys = item.prepared["keys"]
        k = len(keys)
        order = attrs["order"]
        if sorted(order) != sorted(keys):
            raise serializers.ValidationError({"order": "Must list every output of the item exactly once."})
        letter = {key: output_letter(i) for i, key in enumerate(order)}
        criteria = _criteria_of(item)
        unknown = [c for c in attrs["ranks"] if c not in criteria]
        if unknown:
            raise serializers.ValidationError({"ranks": f"Unknown criterion {unknown[0]!r}."})
        errors = {}
        for criterion in criteria:
            given = attrs["ranks"].get(criterion, {})
            strangers = [key for key in given if key not in letter]
            missing = [letter[key] for key in order if key not in given]
            values = [given[key] for key in order if key in given]
            if strangers:
                errors[criterion] = f"{strangers[0]!r} is not an output of this item."
            elif missing:
                errors[criterion] = f"Rank every output (output {', '.join(missing)} has no rank)."
            elif any(not 1 <= v <= k for v in values):
                errors[criterion] = f"Ranks run from 1 to {k}."
            elif not is_standard_competition(values):
                shown = ", ".join(str(v) for v in sorted(values))
                errors[criterion] = (
                    f"Ranks {shown} skip no place after a tie: tied outputs share a rank and the next "
                    f"rank counts every output before it (e.g. 1, 1, 3)."
                )
        if errors:
            raise serializers.ValidationError({"ranks": errors})
        ranks = {c: {key: attrs["ranks"][c][key] for key in order} for c in criteria}
        return {"order": list(order), "ranks": ranks}


# --- hooks ---------------------------------------------------------------------------------------


def _new_keys(count: int) -> list[str]:
    keys: list[str] = []
    while len(keys) < count:
        key = secrets.token_hex(4)
        if key not in keys:
            keys.append(key)
    return keys


def prepare(payload: dict, *, config: dict) -> list[PreparedItem]:
    """Check system names against the project's systems (when declared) and give each output an
    opaque key. The order seed combines the project seed and the item id."""
    allowed = config.get("systems") or []
    if allowed:
        for index, output in enumerate(payload["outputs"]):
            if output["system"] not in allowed:
                raise PayloadError(
                    f"Unknown system {output['system']!r}; this project's systems are "
                    f"{', '.join(allowed)}.",
                    field=f"outputs.{index}.system",
                )
    return [
        PreparedItem(
            external_id=payload["id"],
            payload=payload,
            prepared={
                "keys": _new_keys(len(payload["outputs"])),
                "order_seed": f"{config.get('seed', 13)}:{payload['id']}",
            },
            gold=None,
            kind=payload.get("kind", "regular"),
        )
    ]


def display_order(item: Any, annotator_id: Any = None) -> list[int]:
    """Payload indices of the outputs in the order this annotator sees them: a shuffle seeded by
    the item and the annotator, so it is random across annotators and stable for each. The seed
    is keyed with the server's secret: knowing the project seed, item id and user id is not
    enough to undo the blinding. (Answers name outputs by opaque key, so the order is cosmetic
    for stored work.)"""
    order = list(range(len(item.prepared["keys"])))
    seed = hmac.new(
        settings.SECRET_KEY.encode(), f"{item.prepared['order_seed']}:{annotator_id}".encode(), "sha256"
    ).hexdigest()
    random.Random(seed).shuffle(order)
    return order


def display(item: Any, *, assignment: Any = None) -> dict:
    """The claim, its label and the outputs by opaque key in this annotator's order: never the
    system names."""
    keys = item.prepared["keys"]
    outputs = item.payload["outputs"]
    annotator_id = getattr(assignment, "annotator_id", None)
    return {
        "claim": item.payload["claim"],
        "label": item.payload["label"],
        "outputs": [{"key": keys[i], "text": outputs[i]["text"]} for i in display_order(item, annotator_id)],
    }


def score(answer: dict, gold: dict | None) -> dict:
    """Rankings have no gold answer: nothing to score."""
    return {}


def agreement_key(answer: dict) -> dict:
    """Annotators agree on an item when they gave the same ranks; the order they were shown
    differs by design and does not count."""
    return answer.get("ranks", {})


def _systems_by_key(item: Any) -> dict[str, str]:
    return {key: o["system"] for key, o in zip(item.prepared["keys"], item.payload["outputs"], strict=True)}


def export_row(item: Any, annotation: Any) -> dict:
    """One summary row per annotation: the systems in the order shown and the ranks by system."""
    systems = _systems_by_key(item)
    answer = annotation.answer
    return {
        "shown_order": [systems[key] for key in answer["order"]],
        "ranks": {c: {systems[key]: rank for key, rank in r.items()} for c, r in answer["ranks"].items()},
    }


def export_rows(item: Any, annotation: Any) -> list[dict]:
    """One row per (criterion, system): the rank in the standard competition convention, its
    dense equivalent, and where the output was shown (1-based position, letter)."""
    systems = _systems_by_key(item)
    answer = annotation.answer
    order = answer["order"]
    rows = []
    for criterion, ranks in answer["ranks"].items():
        keys = [key for key in item.prepared["keys"] if key in ranks]  # payload (system) order
        dense = dict(zip(keys, dense_ranks([ranks[key] for key in keys]), strict=True))
        for key in keys:
            rows.append(
                {
                    "criterion": criterion,
                    "system": systems[key],
                    "rank": ranks[key],
                    "rank_dense": dense[key],
                    "k": len(order),
                    "shown_position": order.index(key) + 1,
                    "shown_as": f"Output {output_letter(order.index(key))}",
                }
            )
    return rows


def demo_payload() -> dict:
    return {
        "id": "demo-1",
        "claim": "The city doubled its bike lanes in 2023.",
        "label": "half-true",
        "outputs": [
            {"system": "gold", "text": "The city added 40 km to an 80 km network: a 50% increase."},
            {"system": "extractive", "text": "The 2023 report lists 40 km of new lanes."},
            {"system": "abstractive", "text": "Lanes grew by half, not double, and most are painted."},
        ],
    }


# --- import formats ------------------------------------------------------------------------------

_SYSTEM_COLUMN = re.compile(r"^system:(.+)$")


def csv_to_payload(row: dict) -> dict:
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
        payload["outputs"] = json.loads(payload["outputs"])
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
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PayloadError(f"not valid JSON ({exc.msg}, line {exc.lineno})", location="mapping file") from None
        if all(isinstance(v, str) for v in data.values()):
            return {None: data}
        if all(isinstance(v, dict) and all(isinstance(s, str) for s in v.values()) for v in data.values()):
            return {str(row_id): columns for row_id, columns in data.items()}
        raise PayloadError("expected {column: system} or {row id: {column: system}}", location="mapping file")
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    if not {"column", "system"} <= set(header):
        raise PayloadError("the mapping file needs the columns column and system (and optionally id)",
                           location="mapping file line 1")
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


def read_reprohum(stream: IO[str], mapping: str | None = None) -> Iterator[tuple[str, dict]]:
    """The ReproHum sheet: CSV with id, claim, label and one column per justification
    ("justification 1" … "justification k"), whose systems the mapping file names (see
    ``parse_mapping``; ``import_items --mapping FILE``). Other columns are ignored."""
    if mapping is None:
        raise PayloadError("The reprohum format needs a mapping file from column to system (--mapping).")
    columns_by_row = parse_mapping(mapping)
    reader = csv.DictReader(stream)
    header = reader.fieldnames or []
    missing = [c for c in ("id", "claim", "label") if c not in header]
    if missing:
        raise PayloadError(f"the sheet has no {missing[0]!r} column", location="line 1")
    mapped = {column for columns in columns_by_row.values() for column in columns}
    absent = sorted(mapped - set(header))
    if absent:
        raise PayloadError(f"the mapping names column {absent[0]!r}, which the sheet does not have",
                           location="line 1")
    justifications = [h for h in header if re.match(r"^justification\s*_?\d+$", h.strip(), re.I)]
    for row in reader:
        location = f"line {reader.line_num}"
        if None in row:
            raise PayloadError("more cells than header columns", location=location)
        columns = columns_by_row.get(row["id"]) or columns_by_row.get(None)
        if columns is None:
            raise PayloadError(f"the mapping file has no entry for row {row['id']!r}", location=location)
        unmapped = [c for c in justifications if c not in columns]
        if unmapped:
            raise PayloadError(f"column {unmapped[0]!r} has no system in the mapping file", location=location)
        outputs = [{"system": columns[c], "text": row[c]} for c in header if c in columns]
        yield location, {"id": row["id"], "claim": row["claim"], "label": row["label"], "outputs": outputs}


RANKING = register(
    TaskType(
        slug="ranking",
        name="Ranking with ties",
        template_name="annotation/ranking.html",
        script="js/task_types/ranking.js",
        payload_serializer=RankingPayloadSerializer,
        answer_serializer=RankingAnswerSerializer,
        config_serializer=RankingConfigSerializer,
        # Agreement unit: (item, criterion, system); value: the rank (ordinal).
        measures={"ranks": "ordinal"},
        prepare=prepare,
        display=display,
        display_per_assignment=True,
        private_config=frozenset({"systems", "seed"}),
        score=score,
        export_row=export_row,
        export_rows=export_rows,
        agreement_key=agreement_key,
        demo_payload=demo_payload,
        readers={"reprohum": read_reprohum},
        csv_to_payload=csv_to_payload,
    )
)
